"""Golden outputs of MXNet 1.9.1's deterministic vision transforms (``Rotate`` with and
without zoom, ``CenterCrop``, ``Resize``, ``ToTensor`` + ``Normalize``) on one fixed image,
for tests/gluon/test_gluon_data_vision.py. Run with MXNet's interpreter::

    /path/to/mxnet/python tests/golden/vision_transform_probes.py

It writes tests/golden/data/vision_transforms.npz.
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'vision_transforms.npz')


def image():
    """A (7, 9, 3) uint8 image with distinct pixels."""
    return (np.arange(7 * 9 * 3).reshape(7, 9, 3) * 37 % 256).astype(np.uint8)


#: name -> (transform constructor name, args, kwargs, input kind: 'hwc' uint8 or 'chw' float)
CASES = {
    'rotate30': ('Rotate', (30.,), {}, 'chw'),
    'rotate30_in': ('Rotate', (30.,), {'zoom_in': True}, 'chw'),
    'rotate_m50_out': ('Rotate', (-50.,), {'zoom_out': True}, 'chw'),
    'center_crop': ('CenterCrop', ((4, 5),), {}, 'hwc'),
    'center_crop_up': ('CenterCrop', ((12, 4),), {}, 'hwc'),
    'resize_keep': ('Resize', (5,), {'keep_ratio': True}, 'hwc'),
}


def inputs(mx):
    img = mx.nd.array(image(), dtype='uint8')
    return {'hwc': img, 'chw': mx.nd.image.to_tensor(img)}


def main():
    import mxnet as mx
    from mxnet.gluon.data.vision import transforms
    ins = inputs(mx)
    out = {}
    for name, (cls, args, kwargs, kind) in CASES.items():
        out[name] = getattr(transforms, cls)(*args, **kwargs)(ins[kind]).asnumpy()
    np.savez(OUT, **out)
    print('wrote', OUT)


if __name__ == '__main__':
    main()
