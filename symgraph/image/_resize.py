"""OpenCV's ``cv::resize`` with nearest (0), cubic (2), area (3) and Lanczos (4) on NumPy
(H, W, C) images, for ``mx.image.imresize``: the operator ``_cvimresize`` runs the kernels
(``ops/_cv_resize.py``, shared with ``_image_resize`` and ``ImageRecordIter``; the core
does not import the operators, so this goes through ``mx.nd``).
"""
import numpy as np

from .. import ndarray as nd


def resize(img, w, h, interp):
    """``cv::resize`` of the NumPy (H, W, C) image ``img`` to (h, w, C) with ``interp`` 0
    (nearest), 2 (cubic), 3 (area) or 4 (Lanczos); same dtype (uint8, float32 or
    float64)."""
    img = np.asarray(img)
    out = nd._internal._cvimresize(nd.array(img, dtype=img.dtype), w=int(w), h=int(h),
                                   interp=int(interp))
    return out.asnumpy()
