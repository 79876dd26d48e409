"""Shared by the Gluon tests: a fresh name manager per test (block names such as
``dense0_`` count from 0 in each), the probe blocks of tests/golden/gluon_core_probes.py
and MXNet's golden data made with them."""
import json
import os

import numpy as np
import pytest

import symgraph as mx
import gluon_core_probes

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden', 'data',
                      'gluon_core')


@pytest.fixture(autouse=True)
def fresh_names():
    """Automatic names (``net0_``, ``dense0_``) as in a fresh MXNet process."""
    with mx.name.NameManager():
        yield


@pytest.fixture
def blocks():
    """{class name: HybridBlock class} of the probes, built on symgraph's gluon."""
    return gluon_core_probes.define(mx)


@pytest.fixture(scope='session')
def golden():
    """MXNet 1.9.1's arrays (values.npz) and observations (probes.json)."""
    with open(os.path.join(GOLDEN, 'probes.json')) as f:
        probes = json.load(f)
    return np.load(os.path.join(GOLDEN, 'values.npz')), probes


@pytest.fixture
def golden_file():
    """The path of a file of MXNet's in tests/golden/data/gluon_core/."""
    return lambda name: os.path.join(GOLDEN, name)
