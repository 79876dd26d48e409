"""AMP for Gluon, as MXNet 1.9.1's ``mxnet.contrib.amp``: dynamic loss scaling of a
Trainer (:func:`init_trainer`, :func:`scale_loss`, :func:`unscale`) and
:func:`convert_hybrid_block` (a hybridized block's graph through :func:`convert_symbol`,
as a SymbolBlock).

A training loop::

    amp.init()
    net = ...; net.initialize(); net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {...})
    amp.init_trainer(trainer)
    with autograd.record():
        loss = loss_fn(net(x), y)
        with amp.scale_loss(loss, trainer) as scaled:
            autograd.backward(scaled)
    trainer.step(batch_size)       # skipped when the gradients overflowed
"""
import contextlib

from ... import optimizer as opt
from ...base import ArgumentTypeError, UsageError, as_dtype
from ...graph.nodes import CODE_TYPE
from ...gluon.trainer import Trainer
from ...gluon.block import HybridBlock, SymbolBlock
from . import amp as _amp
from .loss_scaler import LossScaler

__all__ = ['init_trainer', 'scale_loss', 'unscale', 'convert_hybrid_block']


def _check_trainer(optimizer_or_trainer, what):
    if isinstance(optimizer_or_trainer, Trainer):
        return optimizer_or_trainer
    if isinstance(optimizer_or_trainer, opt.Optimizer):
        raise ArgumentTypeError('amp.%s: AMP is currently only compatible with Gluon Trainer '
                                '(got an Optimizer; for a Module, scale the loss by hand: '
                                'grad_scale of the loss output and rescale_grad of the '
                                'optimizer)' % what)
    raise ArgumentTypeError('amp.%s: optimizer_or_trainer should be a Gluon Trainer or an '
                            'optimizer, instead is %s' % (what, type(optimizer_or_trainer)))


def init_trainer(optimizer_or_trainer):
    """Give a Trainer dynamic loss scaling: its steps are skipped when the gradients
    overflow (see :class:`~.loss_scaler.LossScaler`). The first Trainer gets the scaler
    whose factor ``amp.init``'s imperative loss outputs (``nd.SoftmaxOutput`` ...) scale
    their gradients by; later ones get their own.

    Raises
    ------
    RuntimeError
        ``amp.init()`` was not called.
    TypeError
        Not a Trainer (MXNet refuses an Optimizer too).
    """
    if not _amp.is_initialized():
        raise UsageError('AMP not initialized, did you forget to call amp.init()?')
    trainer = _check_trainer(optimizer_or_trainer, 'init_trainer')
    scaler = _amp.take_global_loss_scaler() or LossScaler()
    trainer._amp_loss_scaler = scaler
    trainer._amp_original_scale = trainer._scale


def scale_loss(loss, optimizer_or_trainer):
    """A context giving ``loss`` (an NDArray or a list of them) times the trainer's loss
    scale, to call backward on; the trainer's next step divides the factor out.

    Raises
    ------
    TypeError
        Not a Trainer.
    RuntimeError
        :func:`init_trainer` was not called on the trainer.
    """
    trainer = _check_trainer(optimizer_or_trainer, 'scale_loss')
    scaler = trainer._amp_loss_scaler
    if scaler is None:
        raise UsageError('Loss scaler is not initialized, did you forget to call '
                         'amp.init_trainer()?')
    return _scaled(loss, trainer, scaler.loss_scale)


@contextlib.contextmanager
def _scaled(loss, trainer, factor):
    trainer._scale = trainer._amp_original_scale / factor
    if isinstance(loss, (list, tuple)):
        yield [l * factor for l in loss]
    else:
        yield factor * loss


def unscale(optimizer_or_trainer):
    """Divide the loss scale out of the gradients now (to read or clip them before
    ``step``); the step then rescales by ``1/batch_size`` only."""
    trainer = _check_trainer(optimizer_or_trainer, 'unscale')
    for p in trainer._params:
        if p._grad is not None:
            for g in p._grad:
                g *= trainer._scale
    trainer._scale = 1.


def convert_hybrid_block(block, target_dtype='float16', target_dtype_ops=None, fp32_ops=None,
                         conditional_fp32_ops=None, excluded_sym_names=None, ctx=None,
                         cast_optional_params=False):
    """A SymbolBlock running a hybridized (and once run) float32 HybridBlock in mixed
    precision, for inference: its graph through :func:`convert_symbol`, its parameters
    cast to the ``__dtype__`` the conversion gives them.

    Parameters
    ----------
    block : HybridBlock
        Hybridized and run at least once (its graph is the one of that run).
    target_dtype : str, default 'float16'
    target_dtype_ops, fp32_ops, conditional_fp32_ops, excluded_sym_names
        As :func:`convert_symbol`.
    ctx : Context, optional
        Where the new block's parameters live (MXNet's default is ``gpu(0)``; here the
        current context).
    cast_optional_params : bool, default False
        Also cast the parameters that may stay float32.

    Returns
    -------
    SymbolBlock
    """
    if not isinstance(block, HybridBlock):
        raise ArgumentTypeError('amp.convert_hybrid_block: block input should be a HybridBlock, '
                                'got %s' % type(block).__name__)
    if not block._cached_graph:
        raise UsageError('Please first call block.hybridize() and then run forward with this '
                         'block at least once before calling export.')
    inputs, sym = block._cached_graph
    input_names = [inp.name for inp in inputs]
    converted = _amp.convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops,
                                    conditional_fp32_ops, excluded_sym_names,
                                    data_names=input_names,
                                    cast_optional_params=cast_optional_params)
    arg_names = set(converted.list_arguments())
    aux_names = set(converted.list_auxiliary_states())
    attr_dict = converted.attr_dict()
    arg_dict = {}
    for name, param in block.collect_params().items():
        if name in arg_names:
            key = 'arg:%s' % name
        elif name in aux_names:
            key = 'aux:%s' % name
        else:
            continue            # a parameter the traced graph does not use
        value = param._reduce()
        code = attr_dict.get(name, {}).get('__dtype__')
        if code is not None and code != '-1':
            value = value.astype(as_dtype(CODE_TYPE[int(code)]))
        arg_dict[key] = value
    ret = SymbolBlock(converted, inputs)
    for name, param in ret.collect_params().items():
        for key in ('arg:%s' % name, 'aux:%s' % name):
            if key in arg_dict and as_dtype(param.dtype) != as_dtype(arg_dict[key].dtype):
                param.cast(arg_dict[key].dtype)
    ret.collect_params().load_dict(arg_dict, ctx=ctx)
    return ret
