"""Property-based tests: no text breaks the symbol JSON loader.

Every outcome of ``mx.sym.load_json`` / ``mx.sym.load`` is a Symbol that works (lists its
arguments and outputs, writes JSON that loads back to the same JSON) or the loader's format
error (:class:`SymbolFormatError`, a ValueError): never another exception or a hang.

Seeds are the committed golden symbol files (MXNet 1.9.1 exports, symgraph's own, and the
0.8-1.9 legacy files); mutations work on the bytes (truncations, flips, non-UTF-8 bytes) and on
the parsed document (any value replaced by any JSON value, keys dropped, huge integers, deep
nesting).
"""
import copy
import glob
import json
import os
import tempfile
import warnings

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import symgraph as mx
from symgraph.graph.json_format import SymbolFormatError

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(__file__)), 'golden')


def _seeds():
    texts = []
    for f in sorted(glob.glob(os.path.join(GOLDEN, '**', '*-symbol.json'), recursive=True)):
        with open(f, encoding='utf-8') as fh:
            texts.append(fh.read())
    for f in sorted(glob.glob(os.path.join(GOLDEN, 'data', 'json_legacy', '*.json'))):
        with open(f, encoding='utf-8') as fh:
            case = json.load(fh)
        if 'json' in case:       # (fills_missing_inputs.json is a table, not a graph)
            texts.append(case['json'])
    # small ones first: hypothesis shrinks towards the start of sampled_from
    return sorted(texts, key=len)


SEEDS = _seeds()
DOCS = [json.loads(t) for t in SEEDS]


def test_seed_corpus_is_there():
    assert len(SEEDS) >= 20
    assert any('mxnet_version' not in d.get('attrs', {}) for d in DOCS)   # 0.8 files


def check_outcome(load, arg):
    """``load(arg)``: a usable Symbol or SymbolFormatError, nothing else."""
    # the one warning a valid load may give: different Variables sharing a name (MXNet binds
    # them by name); any other warning is still an error
    with warnings.catch_warnings():
        warnings.filterwarnings('ignore', message='.*different Variables share a name',
                                category=UserWarning)
        try:
            sym = load(arg)
        except SymbolFormatError as e:
            assert isinstance(e, ValueError) and isinstance(e, mx.MXNetError)
            assert str(e)
            return None
        assert isinstance(sym, mx.sym.Symbol)
        sym.list_arguments()
        sym.list_outputs()
        sym.list_auxiliary_states()
        text = sym.tojson()
        assert mx.sym.load_json(text).tojson() == text
    return sym


# --- byte-level mutations ------------------------------------------------------------------

@st.composite
def mutated_bytes(draw):
    b = bytearray(draw(st.sampled_from(SEEDS)).encode('utf-8'))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(['truncate', 'flip', 'insert', 'delete']))
        pos = draw(st.integers(0, max(len(b) - 1, 0)))
        if kind == 'truncate':
            del b[pos:]
        elif kind == 'flip' and b:
            b[pos] ^= draw(st.integers(1, 255))
        elif kind == 'insert':
            b[pos:pos] = draw(st.sampled_from([b'[', b'{', b'"', b',', b'\\', b'\xff', b'\xc3',
                                               b'1e999', b'-0', b'null', b'\\ud800']))
        else:
            del b[pos:pos + draw(st.integers(1, 8))]
    return bytes(b)


@given(mutated_bytes())
def test_mutated_text_loads_or_raises_format_error(blob):
    check_outcome(mx.sym.load_json, blob.decode('utf-8', 'replace'))
    check_outcome(mx.sym.load_json, blob)        # bytes: json decodes them as UTF-8


@given(mutated_bytes())
@example(b'{"nodes": [{"op": "null", "name": "d\xffata"}], "heads": [[0, 0, 0]]}')
def test_mutated_files_load_or_raise_format_error(blob):
    with tempfile.TemporaryDirectory() as tmp:
        fname = os.path.join(tmp, 'model-symbol.json')
        with open(fname, 'wb') as f:
            f.write(blob)
        check_outcome(mx.sym.load, fname)


# --- document-level mutations ----------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True)
    | st.text(max_size=8) | st.sampled_from(['null', 'FullyConnected', '(2, 3)', '-1', 'int',
                                              '__shape__', '__dtype__', '99', 'True', '']),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=6)


def _paths(doc, prefix=()):
    """Every (container, key) inside ``doc``."""
    out = []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) \
        if isinstance(doc, list) else ()
    for k, v in items:
        out.append(prefix + (k,))
        out.extend(_paths(v, prefix + (k,)))
    return out


def _at(doc, path):
    for k in path:
        doc = doc[k]
    return doc


@st.composite
def mutated_doc(draw):
    doc = copy.deepcopy(draw(st.sampled_from(DOCS)))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = _at(doc, path[:-1])
        kind = draw(st.sampled_from(['replace', 'replace', 'delete', 'int']))
        if kind == 'delete':
            del parent[path[-1]]
        elif kind == 'int':
            parent[path[-1]] = draw(st.sampled_from([-1, 0, 1, 2, 2**31, 2**63, 10**30,
                                                     True, 1.5]))
        else:
            parent[path[-1]] = draw(json_values)
    return doc


@given(mutated_doc())
@example({'nodes': [{'op': 'null', 'name': 'x', 'attrs': {'__dtype__': '99'}}],
          'heads': [[0, 0, 0]]})                        # was a KeyError at infer_type
@example({'nodes': [{'op': 'null', 'name': 'x', 'attrs': {'__dtype__': 'a'}}],
          'heads': [[0, 0, 0]]})                        # NumPy's DeprecationWarning (long run)
@example({'nodes': [{'op': 'null', 'name': 'x', 'attrs': {'__shape__': '(2, x)'}}],
          'heads': [[0, 0, 0]]})                        # was a ValueError at infer_shape
@example({'nodes': [{'op': 'null', 'name': 'x'},
                    {'op': 'Activation', 'name': 'a', 'attrs': {'act_typ': 'relu'},
                     'inputs': [[0, 0, 0]]}],
          'heads': [[1, 0, 0]]})                        # was MXNetError, not a ValueError
@example({'nodes': [{'op': 'null', 'name': 'w'}, {'op': 'null', 'name': 'w'},
                    {'op': 'elemwise_add', 'name': 'add', 'inputs': [[0, 0, 0], [1, 0, 0]]}],
          'heads': [[2, 0, 0]]})                        # same-named Variables: loads, warns
def test_mutated_documents_load_or_raise_format_error(doc):
    check_outcome(mx.sym.load_json, json.dumps(doc))


@given(st.integers(1, 200000), st.sampled_from(['[', '{"a": ', '{"nodes": [']))
@example(100000, '[')                     # was RecursionError from the JSON decoder
def test_deep_nesting_is_a_format_error(depth, opener):
    closer = {'[': ']', '{"a": ': '}', '{"nodes": [': ']}'}[opener]
    with pytest.raises(SymbolFormatError):
        mx.sym.load_json(opener * depth + '1' + closer * depth)


@given(st.text(min_size=1, max_size=12), st.binary(min_size=1, max_size=6))
@example('data', b'\xed\xa0\x80')          # an encoded surrogate
def test_names_of_any_text_and_bytes(name, raw):
    doc = {'nodes': [{'op': 'null', 'name': name},
                     {'op': 'relu', 'name': 'r', 'inputs': [[0, 0, 0]]}],
           'heads': [[1, 0, 0]]}
    sym = check_outcome(mx.sym.load_json, json.dumps(doc))
    assert sym.list_arguments() == [name]
    blob = json.dumps(doc, ensure_ascii=False).encode('utf-8', 'surrogatepass') \
        .replace(b'"r"', b'"r' + raw.replace(b'"', b'').replace(b'\\', b'') + b'"')
    with tempfile.TemporaryDirectory() as tmp:
        fname = os.path.join(tmp, 'm-symbol.json')
        with open(fname, 'wb') as f:
            f.write(blob)
        check_outcome(mx.sym.load, fname)
