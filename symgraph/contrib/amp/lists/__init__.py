"""MXNet 1.9.1's AMP operator lists (``python/mxnet/contrib/amp/lists``), copied unchanged:
the names of all MXNet operators, registered here or not; ``amp.list_*`` give the
registered ones."""
from . import symbol_fp16
from . import symbol_bf16
