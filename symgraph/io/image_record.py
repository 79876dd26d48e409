"""``mx.io.ImageRecordIter`` (and ``ImageRecordUInt8Iter``, ``ImageRecordInt8Iter``): batches
of images from a RecordIO file, decoded and augmented in a pool of threads, after MXNet
1.9.1's ``src/io/iter_image_recordio_2.cc`` and ``src/io/image_aug_default.cc``.

Pipeline, per image, as MXNet's (its OpenCV calls reproduced as ``mx.image`` does): decode
(colour, or gray for ``data_shape[0] == 1``; PNG alpha dropped), resize the shorter side to
``resize``, rotate / shear / scale / change the aspect ratio (``max_rotate_angle``,
``max_shear_ratio``, ``min/max_random_scale``, ``max_aspect_ratio``), ``pad`` with
``fill_value``, enlarge an image smaller than ``data_shape``, crop (centre, or random with
``rand_crop``), random brightness / contrast / saturation, hue / saturation / lightness
(``random_h/s/l``) and ``pca_noise``, then mirror
(``mirror``, or at random with ``rand_mirror``), subtract ``mean_r/g/b`` (or ``mean_img``),
multiply by ``scale / std``; CHW, RGB, of ``dtype``.

Batches: the records of the part ``part_index`` of ``num_parts`` (by record count with an
index file, by bytes without one, as dmlc-core splits them), in file order or shuffled per
epoch (``shuffle``, ``seed``); a short last batch is filled from the start of the next pass
with ``round_batch`` (``pad`` tells how many, and the next pass begins after them), else it
keeps the rows of the previous batch and ``pad`` tells how many.

Speed: the calling thread plans the batches and draws their random numbers; reading
(``os.pread``, one read per run of adjacent records), decoding and augmentation run in
``preprocess_threads`` threads (the kernel, OpenCV or Pillow, and NumPy release the GIL
while they work), up to ``prefetch_buffer`` batches ahead. Colour JPEGs are decoded by
OpenCV where ``cv2`` is installed (``pip install "symgraph[image-fast]"``), as MXNet
decodes them, else by Pillow (the same libjpeg-turbo: the same pixels, or within one grey
level across library versions).

Differences from MXNet (also in docs/differences.md): random augmentations take their
numbers from a NumPy generator seeded per pass from (``seed``, pass), or from ``seed_aug``
alone (then each position gets the same numbers at every pass, as MXNet's ``seed_aug``),
drawn in plan order: reproducible for any number of threads, with MXNet's distributions but
not its numbers; ``inter_method`` 2
(cubic) and 4 (Lanczos) within one grey level of OpenCV's (ops/_cv_resize.py); with ``round_batch=False`` ``pad`` counts the rows of a short last batch (MXNet
reports 0); without an index file the record offsets are found by one pass over the file
when the iterator is made.

Modules: this one holds the iterators and their parameters; ``_image_aug`` the augmenter
and normaliser, ``_image_decode`` the decoding and the crop-only fast path,
``_record_batches`` the reading and batching (threads, or ``_decode_procs``' processes).
"""
import logging
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import ndarray as nd
from .. import recordio
from ..base import ArgumentError, ArgumentTypeError, MissingFileError
from ..context import cpu
from ._image_aug import _DRAWS, _Augmenter, _Draws, _Normalizer
# (_hls_to_rgb, _rgb_to_hls: imported from here by the tests of both record iterators)
from ._image_aug import _hls_to_rgb, _rgb_to_hls  # noqa: F401
from ._image_decode import _crop_only, _decode
from ._record_batches import _RecordBatches, _part_keys, _read_imglist
from .native import MXDataIter, _as_bool, _as_int, _as_shape

__all__ = ['ImageRecordIter', 'ImageRecordUInt8Iter', 'ImageRecordInt8Iter']

#: MXNet parameters taken and ignored (they tune MXNet's C++ threads and devices)
_IGNORED = frozenset(['verbose', 'ctx', 'dev_id', 'shuffle_chunk_size', 'shuffle_chunk_seed',
                      'aug_seq', 'silent', 'label_pad_width', 'label_pad_value',
                      'max_img_size', 'min_img_size', 'num_decode_threads', 'device_id'])


def _float(value, what):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ArgumentError('%s must be a number, got %r' % (what, value)) from None



def _create_mean_img(p, reader, keys, augment, channels):
    """MXNet's CreateMeanImg: the mean of the part's images as the iterator augments them
    (float32, CHW), saved to ``mean_img`` under the key 'mean_img' (``mx.nd.save``)."""
    logging.getLogger(__name__).info('ImageRecordIter: %s not found: creating the mean '
                                     'image of %d images', p['mean_img'], len(keys))
    draws = np.random.RandomState([p['seed']]).random_sample((len(keys), _DRAWS))

    total = np.zeros(tuple(p['data_shape']), np.float64)
    with ThreadPoolExecutor(p['preprocess_threads']) as pool:
        indices = range(len(keys))
        raws = [recordio.unpack(reader.read_idx(keys[i]))[1] for i in indices]
        for pixels in pool.map(lambda i: augment(_decode(raws[i], channels),
                                                 _Draws(draws[i])), indices):
            total += pixels.transpose(2, 0, 1)
    nd.save(p['mean_img'], {'mean_img': nd.array((total / len(keys)).astype(np.float32))})


class ImageRecordIter(MXDataIter):
    """Batches of images from a RecordIO file (``.rec``, as im2rec writes it), decoded and
    augmented in threads; MXNet's ``mx.io.ImageRecordIter`` (see the module docstring).

    Parameters (keyword only, as MXNet's; values may be MXNet's strings)
    ----------
    path_imgrec : str
        The ``.rec`` file.
    data_shape : tuple of 3 ints
        (channels, height, width) of each image: 1 (gray) or 3 (RGB) channels.
    batch_size : int
    path_imgidx : str, optional
        The ``.idx`` file (random access: shuffling and sharding by record count).
    path_imglist : str, optional
        A ``.lst`` file whose labels replace the records' (matched by image id).
    label_width : int, default 1
    shuffle : bool, default False
    seed : int, default 0
    num_parts, part_index : int, default 1, 0
        Read only part ``part_index`` of ``num_parts`` (one per ``dist_sync`` worker).
    round_batch : bool, default True
    preprocess_threads : int, default 4
    prefetch_buffer : int, default 4
    resize : int, default -1
        Resize the shorter side to this first.
    rand_crop, rand_mirror, mirror : bool, default False
    max_rotate_angle, rotate : int, default 0, -1
    max_aspect_ratio, min_aspect_ratio, max_shear_ratio : float
    min_random_scale, max_random_scale : float, default 1
    pad : int, default 0
    fill_value : int, default 255
    inter_method : int, default 1
        0 nearest, 1 bilinear, 2 cubic, 3 area, 4 Lanczos, 9 auto, 10 random.
    mean_img : str, optional
        An NDArray file (``mx.nd.save``) with the mean image (key 'mean_img'), subtracted
        instead of ``mean_r/g/b``; made (from the augmented images) if it does not exist.
    mean_r, mean_g, mean_b, std_r, std_g, std_b, scale : float
    brightness, contrast, saturation, pca_noise : float, default 0
    random_h, random_s, random_l : int, default 0
        Shift hue, saturation, lightness (OpenCV's 8-bit HLS) by up to this much.
    max_random_contrast, max_random_illumination : float, default 0
    dtype : {'float32', 'float16', 'uint8', 'int8'}, default 'float32'
    seed_aug : int, optional
        The seed of the random augmentations (default: ``seed``).
    data_name, label_name : str, default 'data', 'softmax_label'

    Examples
    --------
    >>> import io, os, tempfile, numpy as np, symgraph as mx
    >>> from PIL import Image
    >>> d = tempfile.mkdtemp()
    >>> rec = mx.recordio.MXRecordIO(os.path.join(d, 'x.rec'), 'w')
    >>> for i in range(3):
    ...     png = io.BytesIO()
    ...     Image.fromarray(np.full((8, 10, 3), 40 * i, np.uint8)).save(png, 'PNG')
    ...     rec.write(mx.recordio.pack(mx.recordio.IRHeader(0, i, i, 0), png.getvalue()))
    >>> rec.close()
    >>> it = mx.io.ImageRecordIter(path_imgrec=os.path.join(d, 'x.rec'), data_shape=(3, 8, 8),
    ...                            batch_size=2, scale=1 / 40.)
    >>> [(b.data[0].shape, b.data[0][:, 0, 0, 0].asnumpy().tolist(),
    ...   b.label[0].asnumpy().tolist(), b.pad) for b in it]
    [((2, 3, 8, 8), [0.0, 1.0], [0.0, 1.0], 0), ((2, 3, 8, 8), [2.0, 0.0], [2.0, 0.0], 1)]
    """

    _DTYPE = None

    def __init__(self, **kwargs):
        p, names = self._parse(dict(kwargs))
        channels = p['data_shape'][0]
        rec = os.fspath(p['path_imgrec'])
        if not os.path.isfile(rec):
            raise MissingFileError('ImageRecordIter: path_imgrec %r is not a file' % rec)
        idx = p['path_imgidx']
        if idx and not os.path.isfile(idx):
            raise MissingFileError('ImageRecordIter: path_imgidx %r is not a file' % idx)
        idx_path, keys, tmp = _part_keys(rec, idx, p['num_parts'], p['part_index'])
        reader = recordio.MXIndexedRecordIO(idx_path, rec, 'r')
        imglist = _read_imglist(p['path_imglist'], p['label_width']) \
            if p['path_imglist'] else None
        augment = _Augmenter(p)
        mean_img = None
        if p['mean_img'] and p['dtype'] != np.uint8:
            if not os.path.isfile(p['mean_img']):
                _create_mean_img(p, reader, keys, augment, channels)
            loaded = nd.load(p['mean_img'])
            mean_img = (loaded['mean_img'] if isinstance(loaded, dict) else loaded[0])
            mean_img = mean_img.asnumpy().astype(np.float32)
            if mean_img.shape != tuple(p['data_shape']):
                raise ArgumentError('ImageRecordIter: the mean image of %s has the shape %s, '
                                    'not data_shape %s' % (p['mean_img'], mean_img.shape,
                                                           tuple(p['data_shape'])))
        ch = ['r', 'g', 'b'][:channels]
        normalize = _Normalizer(p['dtype'], [p['mean_' + k] for k in ch],
                                [p['std_' + k] for k in ch], p['scale'], mean_img,
                                p['max_random_contrast'], p['max_random_illumination'])
        label_width = p['label_width']

        crop_only = _crop_only(p, imglist)

        def prepare(raw, draws, out):
            if crop_only is not None:
                done = crop_only(raw, draws, out, normalize)
                if done is not None:
                    return done
            header, img = recordio.unpack(raw)
            if imglist is not None:
                if int(header.id) not in imglist:
                    raise KeyError('ImageRecordIter: image id %d is not in %s'
                                   % (header.id, p['path_imglist']))
                label = imglist[int(header.id)]
            elif header.flag > 0:
                label = header.label
                if len(label) != label_width:
                    raise ArgumentError('ImageRecordIter: the record of image %d has %d '
                                        'labels but label_width is %d'
                                        % (header.id, len(label), label_width))
            else:
                if label_width != 1:
                    raise ArgumentError('ImageRecordIter: label_width must be 1 unless an '
                                        'imglist is given or the records hold several labels')
                label = header.label
            rng = _Draws(draws)
            pixels = augment(_decode(img, channels), rng)
            normalize(pixels, out, rng)         # straight into the batch's row
            return label, header.id

        handle = _RecordBatches(reader, keys, p['batch_size'], p['round_batch'],
                                p['shuffle'], p['seed'], prepare, p['data_shape'],
                                label_width, p['dtype'], p['preprocess_threads'],
                                p['prefetch_buffer'], tmp, p['seed_aug'])
        super(ImageRecordIter, self).__init__(handle, **names)

    def _parse(self, kw):
        names = {'data_name': kw.pop('data_name', 'data'),
                 'label_name': kw.pop('label_name', 'softmax_label')}
        for key in ('path_imgrec', 'data_shape', 'batch_size'):
            if key not in kw:
                raise ArgumentError('%s: %s is required' % (type(self).__name__, key))
        p = {}
        p['path_imgrec'] = kw.pop('path_imgrec')
        p['path_imgidx'] = kw.pop('path_imgidx', '') or ''
        p['path_imglist'] = kw.pop('path_imglist', '') or ''
        p['mean_img'] = kw.pop('mean_img', '') or ''
        p['data_shape'] = _as_shape(kw.pop('data_shape'), 'data_shape')
        if len(p['data_shape']) != 3 or p['data_shape'][0] not in (1, 3):
            raise ArgumentError('data_shape must be (channels, height, width) with 1 or 3 '
                                'channels, got %r' % (p['data_shape'],))
        ints = dict(batch_size=(None, 1), label_width=(1, 1), seed=(0, 0), num_parts=(1, 1),
                    part_index=(0, 0), preprocess_threads=(4, 1), prefetch_buffer=(4, 1),
                    resize=(-1, -1), max_rotate_angle=(0, 0), rotate=(-1, -1), pad=(0, 0),
                    fill_value=(255, 0), inter_method=(1, 0))
        for key, (default, low) in ints.items():
            p[key] = _as_int(kw.pop(key, default), key, low)
        if p['part_index'] >= p['num_parts']:
            raise ArgumentError('part_index %d must be less than num_parts %d'
                                % (p['part_index'], p['num_parts']))
        if p['inter_method'] not in (0, 1, 2, 3, 4, 9, 10):
            raise ArgumentError('invalid inter_method %d: valid values are 0, 1, 2, 3, 4, 9, '
                                '10' % p['inter_method'])
        for key, default in dict(shuffle=False, round_batch=True, rand_crop=False,
                                 rand_mirror=False, mirror=False).items():
            p[key] = _as_bool(kw.pop(key, default), key)
        floats = dict(mean_r=0, mean_g=0, mean_b=0, mean_a=0, std_r=1, std_g=1, std_b=1,
                      std_a=1, scale=1, max_aspect_ratio=0, max_shear_ratio=0,
                      min_random_scale=1, max_random_scale=1, brightness=0, contrast=0,
                      saturation=0, pca_noise=0, random_h=0, random_s=0, random_l=0,
                      max_random_contrast=0, max_random_illumination=0)
        for key, default in floats.items():
            p[key] = _float(kw.pop(key, default), key)
        min_ar = kw.pop('min_aspect_ratio', None)
        if min_ar is None or min_ar == 'None':
            p['min_aspect_ratio'] = 1 - p['max_aspect_ratio']
            p['max_aspect_ratio'] = 1 + p['max_aspect_ratio']
        else:
            p['min_aspect_ratio'] = _float(min_ar, 'min_aspect_ratio')
        seed_aug = kw.pop('seed_aug', None)
        p['seed_aug'] = None if seed_aug in (None, 'None') else _as_int(seed_aug, 'seed_aug')
        dtype = kw.pop('dtype', None) if self._DTYPE is None else self._DTYPE
        dtype = 'float32' if dtype in (None, 'None') else dtype
        try:
            p['dtype'] = np.dtype(dtype)
        except TypeError:
            p['dtype'] = None
        if p['dtype'] not in (np.float32, np.float16, np.uint8, np.int8):
            raise ArgumentTypeError("dtype must be one of 'float32', 'float16', 'uint8', "
                                    "'int8', got %r" % (dtype,))
        p['affine'] = (p['max_rotate_angle'] > 0 or p['max_shear_ratio'] > 0 or
                       p['rotate'] > 0 or p['max_random_scale'] != 1 or
                       p['min_random_scale'] != 1 or p['min_aspect_ratio'] != 1 or
                       p['max_aspect_ratio'] != 1)
        p['color'] = p['brightness'] > 0 or p['contrast'] > 0 or p['saturation'] > 0
        unknown = sorted(k for k in kw if k not in _IGNORED)
        if unknown:
            raise ArgumentTypeError('%s: unknown argument(s) %s' % (
                type(self).__name__, ', '.join(repr(k) for k in unknown)))
        return p, names

    def close(self):
        """Stop the decoding threads and free the temporary index (also done when the
        iterator is garbage-collected)."""
        self.handle.close()

    def getdata(self):
        # each batch is a new array that the iterator never writes again: no copy
        return nd.NDArray(self.handle.data, cpu())

    def getlabel(self):
        return nd.NDArray(self.handle.label, cpu())


class ImageRecordUInt8Iter(ImageRecordIter):
    """:class:`ImageRecordIter` with ``dtype='uint8'``: raw pixels (no mean, std, scale)."""
    _DTYPE = 'uint8'


class ImageRecordInt8Iter(ImageRecordIter):
    """:class:`ImageRecordIter` with ``dtype='int8'``: pixels less the rounded mean,
    saturated to [-128, 127]."""
    _DTYPE = 'int8'
