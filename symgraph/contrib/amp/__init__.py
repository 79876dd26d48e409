"""``mx.contrib.amp``: automatic mixed precision (MXNet 1.9.1's ``mxnet.contrib.amp``):
graph conversion and ``amp.init`` in :mod:`.amp`, the Gluon parts (dynamic loss scaling of
a Trainer, ``convert_hybrid_block``) in :mod:`.gluon_amp`."""
from . import lists
from .amp import (init, convert_model, list_lp16_ops, list_fp32_ops, list_lp16_fp32_ops,
                  list_conditional_fp32_ops, list_widest_type_cast, list_loss_output_functions,
                  list_lp16_use_fp32_params, convert_symbol, convert_bucketing_module)
from .loss_scaler import LossScaler
from .gluon_amp import init_trainer, scale_loss, unscale, convert_hybrid_block

__all__ = ['lists', 'init', 'convert_model', 'list_lp16_ops', 'list_fp32_ops',
           'list_lp16_fp32_ops', 'list_conditional_fp32_ops', 'list_widest_type_cast',
           'list_loss_output_functions', 'list_lp16_use_fp32_params', 'convert_symbol',
           'convert_bucketing_module', 'LossScaler', 'init_trainer', 'scale_loss', 'unscale',
           'convert_hybrid_block']
