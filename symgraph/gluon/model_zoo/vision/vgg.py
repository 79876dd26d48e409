"""VGG 11, 13, 16 and 19, with and without batch norm, after MXNet 1.9.1's
python/mxnet/gluon/model_zoo/vision/vgg.py (same layers, initializers, parameter names and
published parameter files)."""
from ....context import cpu
from ....initializer import Xavier
from ...block import HybridBlock
from ... import nn
from ..model_store import load_pretrained

__all__ = ['VGG',
           'vgg11', 'vgg13', 'vgg16', 'vgg19',
           'vgg11_bn', 'vgg13_bn', 'vgg16_bn', 'vgg19_bn',
           'get_vgg']


class VGG(HybridBlock):
    r"""VGG of `"Very Deep Convolutional Networks for Large-Scale Image Recognition"
    <https://arxiv.org/abs/1409.1556>`_.

    Parameters
    ----------
    layers : list of int
        Number of convolutions in each block.
    filters : list of int
        Channels of each block (as many as ``layers``).
    classes : int, default 1000
        Number of classes of the output layer.
    batch_norm : bool, default False
        A batch norm after each convolution.
    """

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise ValueError('VGG: layers and filters must have the same length, got %d and %d'
                             % (len(layers), len(filters)))
        with self.name_scope():
            self.features = self._make_features(layers, filters, batch_norm)
            self.features.add(nn.Dense(4096, activation='relu', weight_initializer='normal',
                                       bias_initializer='zeros'))
            self.features.add(nn.Dropout(rate=0.5))
            self.features.add(nn.Dense(4096, activation='relu', weight_initializer='normal',
                                       bias_initializer='zeros'))
            self.features.add(nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer='normal',
                                   bias_initializer='zeros')

    def _make_features(self, layers, filters, batch_norm):
        featurizer = nn.HybridSequential(prefix='')
        for i, num in enumerate(layers):
            for _ in range(num):
                featurizer.add(nn.Conv2D(filters[i], kernel_size=3, padding=1,
                                         weight_initializer=Xavier(rnd_type='gaussian',
                                                                   factor_type='out',
                                                                   magnitude=2),
                                         bias_initializer='zeros'))
                if batch_norm:
                    featurizer.add(nn.BatchNorm())
                featurizer.add(nn.Activation('relu'))
            featurizer.add(nn.MaxPool2D(strides=2))
        return featurizer

    def hybrid_forward(self, F, x):
        x = self.features(x)
        return self.output(x)


vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers, pretrained=False, ctx=cpu(), root=None, **kwargs):
    r"""VGG of `"Very Deep Convolutional Networks for Large-Scale Image Recognition"
    <https://arxiv.org/abs/1409.1556>`_.

    Parameters
    ----------
    num_layers : int
        11, 13, 16 or 19.
    pretrained : bool, default False
        Whether to load the published parameters from ``root``.
    ctx : Context, default CPU
        Where to load the pretrained parameters.
    root : str, default ``$MXNET_HOME/models``
        Directory of the parameter files.
    **kwargs
        For :class:`VGG` (``classes``, ``batch_norm``, ...).
    """
    if num_layers not in vgg_spec:
        raise ValueError('Invalid number of layers: %d. Options are %s'
                         % (num_layers, sorted(vgg_spec)))
    layers, filters = vgg_spec[num_layers]
    net = VGG(layers, filters, **kwargs)
    if pretrained:
        suffix = '_bn' if kwargs.get('batch_norm') else ''
        load_pretrained(net, 'vgg%d%s' % (num_layers, suffix), ctx, root)
    return net


def _constructor(num_layers, batch_norm):
    def make(**kwargs):
        if batch_norm:
            kwargs['batch_norm'] = True
        return get_vgg(num_layers, **kwargs)
    make.__name__ = 'vgg%d%s' % (num_layers, '_bn' if batch_norm else '')
    make.__doc__ = ('VGG-%d%s; keywords as :func:`get_vgg` (``pretrained``, ``ctx``, '
                    '``root``, ``classes``, ...).'
                    % (num_layers, ' with batch normalization' if batch_norm else ''))
    return make


vgg11 = _constructor(11, False)
vgg13 = _constructor(13, False)
vgg16 = _constructor(16, False)
vgg19 = _constructor(19, False)
vgg11_bn = _constructor(11, True)
vgg13_bn = _constructor(13, True)
vgg16_bn = _constructor(16, True)
vgg19_bn = _constructor(19, True)
