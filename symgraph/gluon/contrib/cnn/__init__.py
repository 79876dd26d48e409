"""``mx.gluon.contrib.cnn`` (after MXNet 1.9.1's gluon/contrib/cnn): deformable
convolution layers over the ``_contrib_DeformableConvolution`` and
``_contrib_ModulatedDeformableConvolution`` operators."""
from .conv_layers import DeformableConvolution, ModulatedDeformableConvolution  # noqa: F401
from . import conv_layers  # noqa: F401

__all__ = ['DeformableConvolution', 'ModulatedDeformableConvolution']
