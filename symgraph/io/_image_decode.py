"""Decoding the records of :class:`~.image_record.ImageRecordIter`: an image of any format
as MXNet's OpenCV decodes it (:func:`_decode`), and the crop-only fast path for the common
settings (:func:`_crop_only`: colour JPEGs decoded straight into arrays, crop and mirror as
views, normalised into the batch's row).

Cost: decoding dominates the fast path (64x64 JPEGs: ~90-100 us of ~110 us per image with
Pillow, ~45 us with OpenCV). Pillow 13's libjpeg-turbo (3.2) probes the CPU's SIMD support
for every decompressor it makes (three ``cpuid`` instructions), and Pillow makes one per
image; where ``cpuid`` traps to a hypervisor (~11 us each on the shared test VM) that is
~35 us per image. OpenCV's libjpeg-turbo probes once per process. Pillow offers no way to
reuse a decompressor, hence the ``image-fast`` extra.
"""
import io as _io
import struct
import threading

import numpy as np

from .. import ndarray as nd
from .. import recordio
from ._image_aug import _pillow

__all__ = []


def _decode(buf, channels):
    """(H, W, C) uint8 RGB (or gray) of an encoded image, as MXNet's OpenCV decodes it."""
    if channels == 3:
        # the common case: an 8-bit colour JPEG decoded straight into an array (OpenCV's
        # where it is installed; else a view of Pillow's RGBX), without Pillow's
        # Python-level header parsing or a copy
        cv = recordio._decode_jpeg_cv(buf)
        if cv is not None:
            img, rgb = cv
            return img if rgb else img[..., ::-1]
        rgbx = recordio._decode_jpeg_rgbx(buf)
        if rgbx is not None:
            return rgbx[..., :3]
        Image = _pillow()
        img = Image.open(_io.BytesIO(buf))
        if img.mode == 'RGB':                   # the common case, without the operator
            img.load()
            return np.asarray(img)
    out = nd._internal._cvimdecode(nd.array(np.frombuffer(buf, np.uint8), dtype=np.uint8),
                                   flag=0 if channels == 1 else 1, to_rgb=True)
    return out.asnumpy()


_IR_HEAD = struct.Struct(recordio._IR_FORMAT)
#: image sizes whose decoding buffers a thread keeps (more: it drops them all)
_KEEP_SIZES = 8


def _rgbx_decoder():
    """``recordio._decode_jpeg_rgbx`` for one image at a time per thread: Pillow's entry
    points looked up once, and each thread decodes into a buffer of its own, kept (with
    Pillow's mapping of it) per image size, instead of a new array and mapping per image.
    The (H, W, 4) array returned is valid until the thread's next call (the crop-only
    path copies its crop into the batch first); None where the fast path does not apply
    (as ``_decode_jpeg_rgbx``), or None instead of the function without Pillow."""
    try:
        from PIL import Image
        map_buffer, jpeg_decoder = Image.core.map_buffer, Image.core.jpeg_decoder
    except (ImportError, AttributeError):
        return None
    jpeg_size = recordio._jpeg_size
    local = threading.local()

    def decode(buf):
        size = jpeg_size(buf)
        if size is None:
            return None
        try:
            buffers = local.buffers
        except AttributeError:
            buffers = local.buffers = {}
        kept = buffers.get(size)
        h, w = size
        try:
            if kept is None:
                if len(buffers) >= _KEEP_SIZES:
                    buffers.clear()
                out = np.empty((h, w, 4), np.uint8)
                # Image.frombuffer's mapping of our array, writable here
                kept = buffers[size] = out, map_buffer(out, (w, h), 'raw', 0, ('RGBX', 0, 1))
            decoder = jpeg_decoder('RGBX', 'RGB', '')
            decoder.setimage(kept[1], (0, 0, w, h))
            consumed, err = decoder.decode(buf)     # libjpeg, without the GIL
            decoder.cleanup()
        except Exception:               # a Pillow without these internals, bad data
            return None
        if consumed >= 0 or err != 0:   # truncated or failed: the general path reports it
            return None
        return kept[0]
    return decode
#: take the crop-only fast path where it applies (tests compare it with the general one)
_FAST_CROP = True


def _crop_only(p, imglist):
    """A per-image function for the common settings (colour, no resize, affine, padding,
    colour or lighting changes; crop, centred or random, and mirror), or None: it parses
    the record's header with one ``struct`` call, decodes an 8-bit colour JPEG straight into
    an array (``recordio._decode_jpeg_cv`` where OpenCV is installed, else
    ``recordio._decode_jpeg_rgbx``), crops and mirrors views of it and writes the
    normalised pixels into the batch's row, drawing the same numbers in the same order as
    :class:`_Augmenter` (so the batches are the same). Fewer Python steps per image also
    means less time holding the GIL, which the decoding threads share. It returns None for
    a record it does not handle (another format, several labels, an image smaller than
    ``data_shape``), which then takes the general path."""
    c, dh, dw = p['data_shape']
    if (not _FAST_CROP or c != 3 or imglist is not None or p['label_width'] != 1 or
            p['affine'] or p['pad'] > 0 or p['resize'] > 0 or p['color'] or
            p['random_h'] or p['random_s'] or p['random_l'] or p['pca_noise'] > 0 or
            p['inter_method'] == 10 or p['max_random_contrast'] or
            p['max_random_illumination']):
        return None
    rand_crop, mirror, rand_mirror = p['rand_crop'], p['mirror'], p['rand_mirror']
    unpack_from, size = _IR_HEAD.unpack_from, recordio._IR_SIZE
    decode_cv = recordio._decode_jpeg_cv
    use_cv = recordio._opencv_jpeg() is not None
    decode = _rgbx_decoder() or recordio._decode_jpeg_rgbx

    def crop_only(raw, draws, out, normalize):
        if len(raw) <= size:
            return None
        flag, label, image_id, _ = unpack_from(raw)
        if flag:
            return None
        cv = decode_cv(memoryview(raw)[size:]) if use_cv else None
        if cv is None:
            rgbx, channels = decode(memoryview(raw)[size:]), slice(0, 3)
            if rgbx is None:
                return None
        else:                       # RGB, or BGR read backwards
            rgbx, channels = cv[0], slice(None) if cv[1] else slice(None, None, -1)
        h, w = rgbx.shape[0] - dh, rgbx.shape[1] - dw
        if h < 0 or w < 0:
            return None
        k = 0
        if rand_crop:               # _Draws.randint(0, n + 1), y then x
            y = min(int((h + 1) * float(draws[0])), h)
            x = min(int((w + 1) * float(draws[1])), w)
            k = 2
        else:
            y, x = h // 2, w // 2
        img = rgbx[y:y + dh, x:x + dw, channels]
        if mirror or (rand_mirror and float(draws[k]) < 0.5):
            img = img[:, ::-1]
        normalize(img, out)
        return label, image_id
    return crop_only
