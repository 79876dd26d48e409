"""``RecordFileDataset``: the records of an indexed RecordIO file as a dataset, after MXNet
1.9.1's ``python/mxnet/gluon/data/dataset.py``.

Worker processes get it pickled (or forked): the record file reopens there, each process
with its own file offset.
"""
import os

from ... import recordio
from .dataset import Dataset

__all__ = ['RecordFileDataset']


class RecordFileDataset(Dataset):
    """A dataset over a RecordIO (``.rec``) file and its index (the ``.idx`` beside it).

    Each sample is the raw bytes of one record, in the index's order.

    Parameters
    ----------
    filename : str
        Path to the ``.rec`` file; the index is the same path with ``.idx``.

    Examples
    --------
    >>> import os, tempfile, symgraph as mx
    >>> d = tempfile.mkdtemp()
    >>> w = mx.recordio.MXIndexedRecordIO(os.path.join(d, 'a.idx'), os.path.join(d, 'a.rec'),
    ...                                   'w')
    >>> for i in range(3):
    ...     w.write_idx(i, b'item%d' % i)
    >>> w.close()
    >>> ds = mx.gluon.data.RecordFileDataset(os.path.join(d, 'a.rec'))
    >>> len(ds), ds[-1]
    (3, b'item2')
    """

    def __init__(self, filename):
        self.idx_file = os.path.splitext(filename)[0] + '.idx'
        self.filename = filename
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, 'r')

    def __getitem__(self, idx):
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self):
        return len(self._record.keys)
