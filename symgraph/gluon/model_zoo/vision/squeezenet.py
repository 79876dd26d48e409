"""SqueezeNet 1.0 and 1.1, after MXNet 1.9.1's
python/mxnet/gluon/model_zoo/vision/squeezenet.py (same layers, parameter names and published
parameter files)."""
from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ...contrib.nn import HybridConcurrent
from ..model_store import load_pretrained

__all__ = ['SqueezeNet', 'squeezenet1_0', 'squeezenet1_1']


def _make_fire(squeeze_channels, expand1x1_channels, expand3x3_channels):
    out = nn.HybridSequential(prefix='')
    out.add(_make_fire_conv(squeeze_channels, 1))
    paths = HybridConcurrent(axis=1, prefix='')
    paths.add(_make_fire_conv(expand1x1_channels, 1))
    paths.add(_make_fire_conv(expand3x3_channels, 3, 1))
    out.add(paths)
    return out


def _make_fire_conv(channels, kernel_size, padding=0):
    out = nn.HybridSequential(prefix='')
    out.add(nn.Conv2D(channels, kernel_size, padding=padding))
    out.add(nn.Activation('relu'))
    return out


class SqueezeNet(HybridBlock):
    r"""SqueezeNet of `"SqueezeNet: AlexNet-level accuracy with 50x fewer parameters and
    <0.5MB model size" <https://arxiv.org/abs/1602.07360>`_; version 1.1 (the official
    repository's) needs 2.4x less computation for the same accuracy.

    Parameters
    ----------
    version : str
        '1.0' or '1.1'.
    classes : int, default 1000
        Number of classes.
    """

    def __init__(self, version, classes=1000, **kwargs):
        super().__init__(**kwargs)
        if version not in ('1.0', '1.1'):
            raise ValueError('Unsupported SqueezeNet version %s: 1.0 or 1.1 expected'
                             % (version,))
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            if version == '1.0':
                self.features.add(nn.Conv2D(96, kernel_size=7, strides=2))
                self.features.add(nn.Activation('relu'))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
                self.features.add(_make_fire(16, 64, 64))
                self.features.add(_make_fire(16, 64, 64))
                self.features.add(_make_fire(32, 128, 128))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
                self.features.add(_make_fire(32, 128, 128))
                self.features.add(_make_fire(48, 192, 192))
                self.features.add(_make_fire(48, 192, 192))
                self.features.add(_make_fire(64, 256, 256))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
                self.features.add(_make_fire(64, 256, 256))
            else:
                self.features.add(nn.Conv2D(64, kernel_size=3, strides=2))
                self.features.add(nn.Activation('relu'))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
                self.features.add(_make_fire(16, 64, 64))
                self.features.add(_make_fire(16, 64, 64))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
                self.features.add(_make_fire(32, 128, 128))
                self.features.add(_make_fire(32, 128, 128))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
                self.features.add(_make_fire(48, 192, 192))
                self.features.add(_make_fire(48, 192, 192))
                self.features.add(_make_fire(64, 256, 256))
                self.features.add(_make_fire(64, 256, 256))
            self.features.add(nn.Dropout(0.5))

            self.output = nn.HybridSequential(prefix='')
            self.output.add(nn.Conv2D(classes, kernel_size=1))
            self.output.add(nn.Activation('relu'))
            self.output.add(nn.AvgPool2D(13))
            self.output.add(nn.Flatten())

    def hybrid_forward(self, F, x):
        x = self.features(x)
        return self.output(x)


def get_squeezenet(version, pretrained=False, ctx=cpu(), root=None, **kwargs):
    r"""SqueezeNet ``version`` ('1.0' or '1.1').

    Parameters
    ----------
    version : str
        '1.0' or '1.1'.
    pretrained : bool, default False
        Whether to load the published parameters from ``root``.
    ctx : Context, default CPU
        Where to load the pretrained parameters.
    root : str, default ``$MXNET_HOME/models``
        Directory of the parameter files.
    """
    net = SqueezeNet(version, **kwargs)
    if pretrained:
        load_pretrained(net, 'squeezenet%s' % version, ctx, root)
    return net


def squeezenet1_0(**kwargs):
    r"""SqueezeNet 1.0; keywords as :func:`get_squeezenet`."""
    return get_squeezenet('1.0', **kwargs)


def squeezenet1_1(**kwargs):
    r"""SqueezeNet 1.1; keywords as :func:`get_squeezenet`."""
    return get_squeezenet('1.1', **kwargs)
