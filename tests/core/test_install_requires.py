"""``pip install symgraph`` installs what the mxnet 1.9.1 wheel installs (numpy, requests,
graphviz): MXNet-era scripts import them without declaring them."""
import configparser
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _requires():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, 'setup.cfg'))
    lines = [ln.strip() for ln in cfg['options']['install_requires'].splitlines()]
    return {re.split(r'[<>=!~;\[ ]', ln, maxsplit=1)[0].lower(): ln
            for ln in lines if ln and not ln.startswith('#')}


def test_what_the_mxnet_wheel_installs_is_required():
    reqs = _requires()
    # the mxnet 1.9.1 wheel's Requires-Dist: numpy, requests (>=2.20.0,<3), graphviz
    for name in ('numpy', 'requests', 'graphviz'):
        assert name in reqs, '%s missing from install_requires' % name
    assert reqs['requests'].replace(' ', '') == 'requests>=2.20,<3'
