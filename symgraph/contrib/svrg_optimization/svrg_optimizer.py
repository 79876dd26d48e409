"""The optimizers behind :class:`~.svrg_module.SVRGModule`, after MXNet 1.9.1's
``contrib/svrg_optimization/svrg_optimizer.py``.

``_SVRGOptimizer`` holds two optimizers: parameters whose name contains ``full`` (the
full gradients SVRGModule keeps in the kvstore under ``<name>_full``) are assigned their
gradient by ``_AssignmentOptimizer``; every other parameter goes to the default optimizer
given to ``init_optimizer``. Both are registered under their class names, as MXNet's are.
"""
from ...optimizer import Optimizer, create, register

__all__ = ['_AssignmentOptimizer', '_SVRGOptimizer']

#: the keywords of the Optimizer base class, the rest go to the default optimizer only
_BASE_PARAMS = ('rescale_grad', 'param_idx2name', 'wd', 'clip_gradient', 'learning_rate',
                'lr_scheduler', 'sym', 'begin_num_update', 'multi_precision', 'param_dict')


@register
class _AssignmentOptimizer(Optimizer):
    """Assigns the gradient to the weight: the kvstore then sums full gradients over
    devices and workers. For SVRGModule only."""

    def update(self, index, weight, grad, state):
        """``weight[:] = grad``."""
        weight[:] = grad


@register
class _SVRGOptimizer(Optimizer):
    """An ``_AssignmentOptimizer`` for the ``*_full`` keys and ``default_optimizer`` (a name
    or an Optimizer) for the parameters. For SVRGModule only.

    Parameters
    ----------
    default_optimizer : str or Optimizer
        The optimizer of the parameters; a name is created with every keyword given here.
    **kwargs
        The Optimizer base class takes those of its own keywords that are given.
    """

    def __init__(self, default_optimizer, **kwargs):
        super().__init__(**self._check_params(**kwargs))
        if isinstance(default_optimizer, str):
            self.default_opt = create(default_optimizer, **kwargs)
        else:
            self.default_opt = default_optimizer
        self.aux_opt = create(_AssignmentOptimizer.__name__)

    @staticmethod
    def _check_params(**kwargs):
        """The keywords among ``kwargs`` that the Optimizer base class takes."""
        return {k: v for k, v in kwargs.items() if k in _BASE_PARAMS}

    def update(self, index, weight, grad, state):
        """Update with the assignment optimizer for ``*full*`` names, else the default."""
        if 'full' in self._check_index(index):
            self.aux_opt.update(index, weight, grad, state)
        else:
            self.default_opt.update(index, weight, grad, state)

    def create_state(self, index, weight):
        """The state of the optimizer that updates ``index``."""
        if 'full' in self._check_index(index):
            return self.aux_opt.create_state(index, weight)
        return self.default_opt.create_state(index, weight)

    def _check_index(self, index):
        """The parameter name of ``index`` (an int of ``idx2name``, or already a name).

        Raises
        ------
        KeyError
            ``index`` is neither a known index nor a known name.
        """
        if index in self.idx2name.values():
            return index
        try:
            return self.idx2name[index]
        except KeyError:
            raise KeyError('_SVRGOptimizer: %r is neither an index of param_idx2name nor a '
                           'parameter name (%s)' % (index, sorted(self.idx2name.values())))
