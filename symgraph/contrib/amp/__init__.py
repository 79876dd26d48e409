"""``mx.contrib.amp``: automatic mixed precision for symbolic models (MXNet 1.9.1's
``mxnet.contrib.amp`` without its Gluon parts); see :mod:`.amp`."""
from . import lists
from .amp import (__all__, init, init_trainer, scale_loss, unscale, convert_model,
                  convert_hybrid_block, list_lp16_ops, list_fp32_ops, list_lp16_fp32_ops,
                  list_conditional_fp32_ops, list_widest_type_cast, list_loss_output_functions,
                  list_lp16_use_fp32_params, convert_symbol, convert_bucketing_module)
