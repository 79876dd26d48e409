"""Data iterators (MXNet 1.9.1's ``mx.io``): DataDesc, DataBatch, the DataIter protocol,
NDArrayIter (with a DistributedSampler to shard it over workers), ResizeIter,
PrefetchingIter, ImageRecordIter (RecordIO images), ImageDetRecordIter (with detection
labels), and CSVIter, LibSVMIter, MNISTIter (MXNet's C++ iterators, here in Python,
deriving from MXDataIter as MXNet's do).
"""
from . import io
from .io import DataBatch, DataDesc, DataIter, PrefetchingIter, ResizeIter
from .ndarray_iter import NDArrayIter
from .native import CSVIter, LibSVMIter, MNISTIter, MXDataIter
from .image_record import ImageRecordIter, ImageRecordUInt8Iter, ImageRecordInt8Iter
from .image_det_record import ImageDetRecordIter
from .sampler import DistributedSampler
from . import utils
from .utils import _init_data, _getdata_by_idx, _has_instance

_NOT_HERE = ('ImageRecordIter_v1', 'ImageRecordUInt8Iter_v1')


def __getattr__(name):
    if name in _NOT_HERE:
        raise AttributeError("mx.io.%s (MXNet's C++ RecordIO image iterator) is not "
                             "available in symgraph; use NDArrayIter, CSVIter or MNISTIter"
                             % name)
    raise AttributeError("module 'symgraph.io' has no attribute %r" % name)
