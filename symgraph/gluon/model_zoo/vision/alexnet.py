"""AlexNet, after MXNet 1.9.1's python/mxnet/gluon/model_zoo/vision/alexnet.py (same layers,
parameter names and published parameter file)."""
from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ..model_store import load_pretrained

__all__ = ['AlexNet', 'alexnet']


class AlexNet(HybridBlock):
    r"""AlexNet of `"One weird trick..." <https://arxiv.org/abs/1404.5997>`_.

    Parameters
    ----------
    classes : int, default 1000
        Number of classes of the output layer.
    """

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            with self.features.name_scope():
                self.features.add(nn.Conv2D(64, kernel_size=11, strides=4, padding=2,
                                            activation='relu'))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Conv2D(192, kernel_size=5, padding=2, activation='relu'))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Conv2D(384, kernel_size=3, padding=1, activation='relu'))
                self.features.add(nn.Conv2D(256, kernel_size=3, padding=1, activation='relu'))
                self.features.add(nn.Conv2D(256, kernel_size=3, padding=1, activation='relu'))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Flatten())
                self.features.add(nn.Dense(4096, activation='relu'))
                self.features.add(nn.Dropout(0.5))
                self.features.add(nn.Dense(4096, activation='relu'))
                self.features.add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        x = self.features(x)
        return self.output(x)


def alexnet(pretrained=False, ctx=cpu(), root=None, **kwargs):
    r"""AlexNet of `"One weird trick..." <https://arxiv.org/abs/1404.5997>`_.

    Parameters
    ----------
    pretrained : bool, default False
        Whether to load the published parameters from ``root``.
    ctx : Context, default CPU
        Where to load the pretrained parameters.
    root : str, default ``$MXNET_HOME/models``
        Directory of the parameter files.
    """
    net = AlexNet(**kwargs)
    if pretrained:
        load_pretrained(net, 'alexnet', ctx, root)
    return net
