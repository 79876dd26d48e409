"""DLPack exchange: ``mx.nd.from_dlpack``, ``mx.nd.to_dlpack_for_read`` / ``_for_write``.

After MXNet 1.9.1's ``ndarray.from_dlpack`` / ``to_dlpack_for_*``. An NDArray's data is a
NumPy or CuPy array, so the exchange is theirs: ``NDArray.__dlpack__`` hands on the array's
capsule and ``from_dlpack`` wraps what ``numpy.from_dlpack`` / ``cupy.from_dlpack`` make of
the producer, without a copy either way. ``from_dlpack`` takes an object with
``__dlpack__`` (a NumPy 2 array, a PyTorch tensor, another NDArray) or a bare capsule (what
``to_dlpack_for_read`` and MXNet code hand around); a capsule can be consumed once.
"""
import ctypes

import numpy as np

from ..base import ArgumentTypeError
from ..context import cpu, gpu
from .ndarray import NDArray

__all__ = ['from_dlpack', 'to_dlpack_for_read', 'to_dlpack_for_write']

#: DLPack's device types (dlpack.h DLDeviceType)
_KDLCPU, _KDLCUDA, _KDLCUDAHOST = 1, 2, 3

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
#: where DLTensor.device lies in the capsule's struct: DLManagedTensor begins with the
#: DLTensor (data pointer, then the device); DLManagedTensorVersioned has its version,
#: manager context, deleter and flags (8 bytes each) first
_DEVICE_OFFSET = {b'dltensor': 8, b'dltensor_versioned': 32 + 8}


def to_dlpack_for_read(data):
    """A DLPack capsule of ``data`` (an NDArray) for reading, sharing its memory.

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.nd.ones((2, 3))
    >>> float(mx.nd.from_dlpack(mx.nd.to_dlpack_for_read(x)).asnumpy().sum())
    6.0
    """
    return data.to_dlpack_for_read()


def to_dlpack_for_write(data):
    """A DLPack capsule of ``data`` (an NDArray) for writing, sharing its memory."""
    return data.to_dlpack_for_write()


class _Capsule:
    """A bare capsule dressed as a DLPack producer, for ``numpy/cupy.from_dlpack``."""

    def __init__(self, capsule, device):
        self._capsule = capsule
        self._device = device

    def __dlpack__(self, stream=None, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def _capsule_device(capsule):
    """``(device_type, device_id)`` read from a capsule's DLTensor.

    Raises
    ------
    ValueError
        A capsule already consumed (renamed ``used_dltensor``) or not a DLPack one.
    """
    name = _get_name(capsule)
    if name not in _DEVICE_OFFSET:
        raise ValueError('from_dlpack: the capsule is %s, not a DLPack tensor (DLTensor '
                         'capsules can be consumed only once)' % (name.decode() if name else
                                                                  'unnamed'))
    base = _get_pointer(capsule, name)
    device = (ctypes.c_int32 * 2).from_address(base + _DEVICE_OFFSET[name])
    return int(device[0]), int(device[1])


def from_dlpack(dlpack):
    """An NDArray sharing the memory of a DLPack producer or capsule (no copy).

    Parameters
    ----------
    dlpack : PyCapsule or object with ``__dlpack__``
        A capsule (``to_dlpack_for_read``'s, PyTorch's ``to_dlpack``), or a NumPy, CuPy
        or PyTorch array, or an NDArray.

    Raises
    ------
    TypeError
        ``dlpack`` is neither.
    ValueError
        A consumed capsule.

    Examples
    --------
    >>> import numpy as np
    >>> import symgraph as mx
    >>> a = np.arange(6.0).reshape(2, 3)
    >>> x = mx.nd.from_dlpack(a)
    >>> a[0, 0] = 7                # the same memory
    >>> float(x.asnumpy()[0, 0])
    7.0
    """
    if hasattr(dlpack, '__dlpack__'):
        producer, (kind, device_id) = dlpack, dlpack.__dlpack_device__()
    elif type(dlpack).__name__ == 'PyCapsule':
        kind, device_id = _capsule_device(dlpack)
        producer = _Capsule(dlpack, (kind, device_id))
    else:
        raise ArgumentTypeError('from_dlpack: expected a DLPack capsule or an object with '
                                '__dlpack__, got %s' % type(dlpack).__name__)
    if kind == _KDLCUDA:
        import cupy
        with cupy.cuda.Device(device_id):
            return NDArray(cupy.from_dlpack(producer), gpu(device_id))
    return NDArray(np.from_dlpack(producer), cpu())
