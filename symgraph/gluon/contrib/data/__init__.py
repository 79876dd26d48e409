"""``mx.gluon.contrib.data`` (after MXNet 1.9.1's gluon/contrib/data): the contributed
samplers. MXNet's ``text`` datasets (WikiText, downloaded) are not here."""
from .sampler import IntervalSampler  # noqa: F401
from . import sampler  # noqa: F401
