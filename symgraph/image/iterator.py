"""``mx.image.ImageIter``: batches of images from a RecordIO file (``.rec``, with its
``.idx`` for shuffling and partitions), an image list file (``.lst``) with a root folder, or
a Python list, augmented by ``mx.image`` augmenters; after MXNet 1.9.1's
``python/mxnet/image/image.py``.

Each image is decoded (``mx.image.imdecode``: RGB), passed through the augmenter list
(``aug_list``, or ``CreateAugmenter(data_shape, **kwargs)``), transposed to (C, H, W) and
written into a float32 (batch_size, C, H, W) batch; labels are float32 (batch_size,) or
(batch_size, label_width). The last short batch: ``'pad'`` fills it from the start of the
data (``pad`` counts the filled rows; the epoch ends there), ``'discard'`` drops it,
``'roll_over'`` keeps its images and completes it first in the next epoch. Images are read
and augmented in the calling thread, in order, so that Python's and NumPy's seeds give
MXNet's random augmentations. An image that fails to decode raises RuntimeError naming
the file or record.

>>> import os, tempfile
>>> import numpy as np
>>> from PIL import Image
>>> import symgraph as mx
>>> tmp = tempfile.TemporaryDirectory()
>>> for i in range(3):
...     Image.fromarray(np.full((8, 10, 3), 40 * i, np.uint8)).save(
...         os.path.join(tmp.name, '%d.png' % i))
>>> it = mx.image.ImageIter(2, (3, 6, 6), imglist=[[i, '%d.png' % i] for i in range(3)],
...                         path_root=tmp.name)
>>> [(b.data[0].shape, b.label[0].asnumpy().tolist(), b.pad) for b in it]
[((2, 3, 6, 6), [0.0, 1.0], 0), ((2, 3, 6, 6), [2.0, 0.0], 1)]
>>> tmp.cleanup()
"""
import logging
import numbers
import os
import random

import numpy as np

from .. import io
from .. import ndarray as nd
from .. import recordio
from ..base import ArgumentError, MissingFileError
from .augmenters import CreateAugmenter
from .functions import imdecode

__all__ = ['ImageIter']

_LOG = logging.getLogger(__name__)

_LABEL_DTYPES = ('int32', 'float32', 'int64', 'float64')
_LAST_BATCH = ('pad', 'discard', 'roll_over')


def _read_lst(path, dtype):
    """{key: (label NDArray, relative path)} and the keys in file order, of a ``.lst``
    file: ``index <tab> label(s) <tab> path`` per line."""
    imglist, keys = {}, []
    try:
        f = open(path)
    except FileNotFoundError:
        raise MissingFileError('ImageIter: path_imglist %r: no such file' % path) from None
    with f:
        for lineno, line in enumerate(f, 1):
            fields = line.strip().split('\t')
            if len(fields) < 3:
                raise ArgumentError('%s, line %d: expected "index<TAB>label(s)<TAB>path", '
                                    'got %r' % (path, lineno, line.strip()))
            try:
                key = int(fields[0])
                label = np.array(fields[1:-1], dtype=np.float64)
            except ValueError:
                raise ArgumentError('%s, line %d: index and labels must be numbers, got %r'
                                    % (path, lineno, line.strip())) from None
            imglist[key] = (nd.array(label, dtype=dtype), fields[-1])
            keys.append(key)
    return imglist, keys


def _read_list(items, dtype):
    """{'1', '2', ...: (label NDArray, path)} of ``imglist`` items ``[label(s)..., path]``
    (string keys counted from 1, as MXNet's)."""
    imglist, keys = {}, []
    for index, img in enumerate(items, 1):
        if len(img) > 2:
            label = nd.array(img[:-1], dtype=dtype)
        elif isinstance(img[0], numbers.Number):
            label = nd.array([img[0]], dtype=dtype)
        else:
            label = nd.array(img[0], dtype=dtype)
        imglist[str(index)] = (label, img[-1])
        keys.append(str(index))
    return imglist, keys


class ImageIter(io.DataIter):
    """Image data iterator with MXNet's augmentations (see the module docstring).

    Parameters
    ----------
    batch_size : int
        Images per batch.
    data_shape : tuple
        (channels, height, width) of the output images; channels must be 3.
    label_width : int
        Labels per image (default 1).
    path_imgrec : str
        A RecordIO file (``.rec``, as ``python -m symgraph.im2rec`` writes).
    path_imglist : str
        An image list (``.lst``): ``index <tab> label(s) <tab> path`` per line.
    path_root : str
        The folder of the list's image paths.
    path_imgidx : str
        The ``.rec`` file's index, needed to shuffle it or read a part of it.
    shuffle : bool
        Shuffle the images at every reset.
    part_index, num_parts : int
        Read only the ``part_index``-th of ``num_parts`` equal parts (distributed training).
    aug_list : list of Augmenter
        The augmenters; default ``CreateAugmenter(data_shape, **kwargs)``.
    imglist : list
        Images as ``[label or labels..., path]`` items (instead of a list file).
    data_name, label_name : str
        Names in ``provide_data`` / ``provide_label``.
    dtype : str
        Type of the labels as read (int32, float32, int64, float64); batches hold float32.
    last_batch_handle : str
        'pad' (default), 'discard' or 'roll_over' (see the module docstring).
    kwargs
        Passed to :func:`CreateAugmenter` when ``aug_list`` is None.
    """

    def __init__(self, batch_size, data_shape, label_width=1,
                 path_imgrec=None, path_imglist=None, path_root=None, path_imgidx=None,
                 shuffle=False, part_index=0, num_parts=1, aug_list=None, imglist=None,
                 data_name='data', label_name='softmax_label', dtype='float32',
                 last_batch_handle='pad', **kwargs):
        super(ImageIter, self).__init__()
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise ArgumentError('ImageIter needs path_imgrec, path_imglist or imglist (a list)')
        if dtype not in _LABEL_DTYPES:
            raise ArgumentError('ImageIter: dtype %r label not supported (%s)'
                                % (dtype, ', '.join(_LABEL_DTYPES)))
        if last_batch_handle not in _LAST_BATCH:
            raise ArgumentError('ImageIter: last_batch_handle must be one of %s, got %r'
                                % (', '.join(_LAST_BATCH), last_batch_handle))
        name = type(self).__name__
        self.imgrec, self.imgidx = None, None
        if path_imgrec:
            _LOG.info('%s: loading recordio %s...', name, path_imgrec)
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, 'r')
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, 'r')
        imgkeys = None
        if path_imglist:
            _LOG.info('%s: loading image list %s...', name, path_imglist)
            self.imglist, imgkeys = _read_lst(path_imglist, dtype)
        elif isinstance(imglist, list):
            self.imglist, imgkeys = _read_list(imglist, dtype)
        else:
            self.imglist = None
        self.path_root = path_root
        self.check_data_shape(data_shape)
        self.provide_data = [(data_name, (batch_size,) + tuple(data_shape))]
        if label_width > 1:
            self.provide_label = [(label_name, (batch_size, label_width))]
        else:
            self.provide_label = [(label_name, (batch_size,))]
        self.batch_size = batch_size
        self.data_shape = tuple(data_shape)
        self.label_width = label_width
        self.shuffle = shuffle
        if self.imgrec is None:
            self.seq = imgkeys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise ArgumentError('ImageIter: shuffle and num_parts > 1 need path_imgidx '
                                    '(the .idx file of %s)' % path_imgrec)
            self.seq = self.imgidx
        else:
            self.seq = None                  # read the .rec file in order
        if num_parts > 1:
            if not 0 <= part_index < num_parts:
                raise ArgumentError('ImageIter: part_index %d out of range for num_parts %d'
                                    % (part_index, num_parts))
            per = len(self.seq) // num_parts
            self.seq = self.seq[part_index * per:(part_index + 1) * per]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.cur = 0
        self._allow_read = True
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._cache_data = None
        self._cache_label = None
        self._cache_idx = None
        self.reset()

    def reset(self):
        """Start a new epoch (shuffled with ``shuffle``); with 'roll_over', the kept images
        of the last short batch stay to begin it."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != 'roll_over' or self._cache_data is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self):
        """Start a new epoch, dropping any rolled-over images."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._allow_read = True
        self._cache_data = None
        self._cache_label = None
        self._cache_idx = None

    def next_sample(self):
        """(label, encoded image bytes) of the next image; StopIteration at the end."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is None:
            s = self.imgrec.read()
            if s is None:
                if self.last_batch_handle != 'discard':
                    self.imgrec.reset()
                raise StopIteration
            header, img = recordio.unpack(s)
            return header.label, img
        if self.cur >= self.num_image:
            if self.last_batch_handle != 'discard':
                self.cur = 0
            raise StopIteration
        idx = self.seq[self.cur]
        self.cur += 1
        if self.imgrec is not None:
            header, img = recordio.unpack(self.imgrec.read_idx(idx))
            return (header.label if self.imglist is None else self.imglist[idx][0]), img
        label, fname = self.imglist[idx]
        return label, self.read_image(fname)

    def _batchify(self, batch_data, batch_label, start=0):
        """Fill rows ``start``... of the batch; returns the number of rows filled in all
        (StopIteration when the data ended before any row)."""
        i = start
        try:
            while i < self.batch_size:
                label, s = self.next_sample()
                data = self.imdecode(s)
                try:
                    self.check_valid_image(data)
                except RuntimeError as e:
                    _LOG.debug('Invalid image, skipping:  %s', e)
                    continue
                data = self.augmentation_transform(data)
                batch_data[i] = self.postprocess_data(data)
                batch_label[i] = label
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def next(self):
        """The next batch (a DataBatch with ``pad`` set)."""
        c, h, w = self.data_shape
        if self._cache_data is not None:            # the rolled-over short batch
            batch_data, batch_label, i = self._cache_data, self._cache_label, self._cache_idx
        else:
            batch_data = nd.zeros((self.batch_size, c, h, w))
            batch_label = self._new_label()
            i = self._batchify(batch_data, batch_label)
        pad = self.batch_size - i
        if pad != 0:
            if self.last_batch_handle == 'discard':
                raise StopIteration
            if self.last_batch_handle == 'roll_over' and self._cache_data is None:
                self._cache_data, self._cache_label, self._cache_idx = (batch_data,
                                                                         batch_label, i)
                raise StopIteration
            self._batchify(batch_data, batch_label, i)
            if self.last_batch_handle == 'pad':
                self._allow_read = False
            else:
                self._cache_data = self._cache_label = self._cache_idx = None
        return io.DataBatch([batch_data], [batch_label], pad=pad)

    def _new_label(self):
        """A batch's label array (every row is written by :meth:`_batchify`)."""
        return nd.empty(self.provide_label[0][1])

    def check_data_shape(self, data_shape):
        """Refuse a ``data_shape`` that is not (3, H, W)."""
        if not len(data_shape) == 3:
            raise ValueError('data_shape should have length 3, with dimensions CxHxW')
        if not data_shape[0] == 3:
            raise ValueError('This iterator expects inputs to have 3 channels.')

    def check_valid_image(self, data):
        """RuntimeError for a decoded image without a shape (skipped by ``next``)."""
        if len(data[0].shape) == 0:
            raise RuntimeError('Data shape is wrong')

    def _locate(self):
        """Which file or record the image just read came from."""
        if self.seq is not None:
            idx = self.seq[(self.cur % self.num_image) - 1]
        else:
            idx = None
        if self.imglist is not None and idx is not None:
            return 'filename: {}'.format(self.imglist[idx][1])
        return 'index: {}'.format(idx if idx is not None else 'record of ' + repr(
            getattr(self.imgrec, 'uri', None)))

    def imdecode(self, s):
        """Decode the image bytes ``s`` (see :func:`mx.image.imdecode`); RuntimeError
        naming the image when that fails."""
        try:
            return imdecode(s)
        except Exception as e:                 # any decoder failure, re-raised with the name
            raise RuntimeError('Broken image {}, {}'.format(self._locate(), e)) from e

    def read_image(self, fname):
        """The bytes of the image file ``fname`` under ``path_root``."""
        path = os.path.join(self.path_root or '', fname)
        try:
            with open(path, 'rb') as fin:
                return fin.read()
        except FileNotFoundError:
            raise MissingFileError('%s: image file %r not found' % (type(self).__name__,
                                                                    path)) from None

    def augmentation_transform(self, data):
        """Apply the augmenter list to one image."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        """(H, W, C) -> (C, H, W), the batch layout."""
        return nd.transpose(datum, axes=(2, 0, 1))
