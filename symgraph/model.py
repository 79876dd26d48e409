"""Checkpoints in MXNet's layout: ``prefix-symbol.json`` and ``prefix-%04d.params``."""
from __future__ import annotations

import logging

from . import ndarray as nd
from . import symbol as sym
from .base import MXNetError

__all__ = ['save_checkpoint', 'load_checkpoint', 'load_params']

log = logging.getLogger(__name__)


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Write ``prefix-symbol.json`` (if a symbol is given) and ``prefix-<epoch>.params``."""
    if symbol is not None:
        symbol.save('%s-symbol.json' % prefix)
    save_dict = {('arg:%s' % k): v.as_in_context(v.context) for k, v in arg_params.items()}
    save_dict.update({('aux:%s' % k): v for k, v in aux_params.items()})
    param_name = '%s-%04d.params' % (prefix, epoch)
    nd.save(param_name, save_dict)
    log.info('Saved checkpoint to "%s"', param_name)


def load_params(prefix, epoch):
    """``(arg_params, aux_params)`` from ``prefix-<epoch>.params``."""
    fname = '%s-%04d.params' % (prefix, epoch)
    save_dict = nd.load(fname)
    if not isinstance(save_dict, dict):
        raise MXNetError('%s holds an unnamed list of arrays, not a checkpoint' % fname)
    arg_params, aux_params = {}, {}
    for k, v in save_dict.items():
        tp, sep, name = k.partition(':')
        if not sep or tp not in ('arg', 'aux'):
            raise MXNetError('%s: entry %r is neither arg:<name> nor aux:<name>' % (fname, k))
        (arg_params if tp == 'arg' else aux_params)[name] = v
    return arg_params, aux_params


def load_checkpoint(prefix, epoch):
    """``(symbol, arg_params, aux_params)`` of a checkpoint written by MXNet or symgraph."""
    symbol = sym.load('%s-symbol.json' % prefix)
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params
