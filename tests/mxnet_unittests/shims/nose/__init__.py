"""A stand-in for the few parts of nose that MXNet 1.9.1's unit tests import.

nose is unmaintained and does not import on current Python; MXNet's tests use only
``nose.tools`` (``assert_raises``, ``raises``, ``ok_``, ``make_decorator``) and call
``nose.runmodule()`` under ``if __name__ == '__main__'``. The harness puts this package on
the path for both runs, real MXNet's and symgraph's, so the two run the same test code.
"""
from . import tools  # noqa: F401


def runmodule(*args, **kwargs):
    """Run a test module as a script: pytest runs these files, never this function."""
    raise RuntimeError('run MXNet test files through pytest (scripts/run_mxnet_unittests.py)')
