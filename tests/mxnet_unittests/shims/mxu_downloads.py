"""pytest plugin of the harness's children (both runs, real MXNet's and symgraph's): local
stand-ins for the files MXNet 1.9.1's unit tests download, and nose's class fixtures.

* ``mxnet.test_utils.download(url, dirname=..., fname=...)`` of a URL in ``STAND_INS``
  copies the stand-in from ``stand_ins/`` to where the test asks for it (``dirname``/the
  URL's file name, or ``fname``) and returns that path, as a download would; any other URL
  goes to the real ``download``. The harness has no network, and neither has CI.
* nose ran a ``unittest.TestCase``'s ``setupClass`` / ``teardownClass`` (its spelling of
  ``setUpClass``); pytest does not, so a class that defines only nose's spelling gets the
  unittest names (test_image.py loads its images in ``setupClass``).

The stand-ins are small generated files, not MXNet's: tests that check values against
OpenCV or SciPy check them on these; nothing compares them with MXNet's originals.
"""
import functools
import os
import shutil
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
#: URL -> stand-in file under stand_ins/ (the generator beside it says what it holds)
STAND_INS = {
    'http://data.mxnet.io/data/test_images.tar.gz': 'test_images.tar.gz',
}
#: nose's class-fixture spelling -> unittest's
NOSE_CLASS_FIXTURES = {'setupClass': 'setUpClass', 'teardownClass': 'tearDownClass'}


def _with_stand_ins(download):
    @functools.wraps(download)
    def wrapper(url, fname=None, dirname=None, overwrite=False, *args, **kwargs):
        if url not in STAND_INS:
            return download(url, fname, dirname, overwrite, *args, **kwargs)
        if fname is None:
            fname = url.split('/')[-1]
            if dirname is not None:
                fname = os.path.join(dirname, fname)
        elif dirname is not None:
            fname = os.path.join(dirname, fname)
        if overwrite or not os.path.exists(fname):
            parent = os.path.dirname(os.path.abspath(fname))
            os.makedirs(parent, exist_ok=True)
            shutil.copyfile(os.path.join(HERE, 'stand_ins', STAND_INS[url]), fname)
        return fname
    wrapper.stand_ins = STAND_INS
    return wrapper


def pytest_configure(config):
    # before the test modules' ``from mxnet.test_utils import *`` binds ``download``
    import mxnet.test_utils as tu
    if not hasattr(tu.download, 'stand_ins'):
        tu.download = _with_stand_ins(tu.download)


def pytest_pycollect_makeitem(collector, name, obj):
    if isinstance(obj, type) and issubclass(obj, unittest.TestCase):
        for nose_name, unittest_name in NOSE_CLASS_FIXTURES.items():
            if nose_name in vars(obj) and unittest_name not in vars(obj):
                setattr(obj, unittest_name, vars(obj)[nose_name])
    return None
