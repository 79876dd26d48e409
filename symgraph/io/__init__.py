"""Data iterators (MXNet 1.9.1's ``mx.io``): DataDesc, DataBatch, the DataIter protocol,
NDArrayIter, ResizeIter, PrefetchingIter, and CSVIter, LibSVMIter, MNISTIter (MXNet's
C++ iterators, here in Python, deriving from MXDataIter as MXNet's do).
"""
from . import io
from .io import DataBatch, DataDesc, DataIter, PrefetchingIter, ResizeIter
from .ndarray_iter import NDArrayIter
from . import utils
from .utils import _init_data, _getdata_by_idx, _has_instance
