"""The golden generators run from any checkout: no absolute path to an interpreter or a
machine's folders in them. They run under an interpreter with MXNet 1.9.1, named
``$MXNET_PYTHON`` in their usage lines (e.g. ``MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON
tests/golden/make_graphs.py``); the few that start symgraph's side in a subprocess take its
interpreter from ``$SYMGRAPH_PYTHON`` (default ``python3``) or use ``sys.executable``."""
import glob
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
#: what a path tied to one machine looks like: a home or work folder, a venv's interpreter
MACHINE_PATH = re.compile(r'(?<![\w$.])/(root|home|work|opt|Users|tmp)/|mxvenv|/usr/bin/python')


def _sources():
    for path in glob.glob(os.path.join(HERE, '**', '*'), recursive=True):
        rel = os.path.relpath(path, HERE)
        if rel.startswith('data' + os.sep) or not path.endswith(('.py', '.sh')) \
                or rel == os.path.basename(__file__):
            continue
        yield rel, path


def test_no_generator_names_a_path_of_one_machine():
    found = []
    for rel, path in _sources():
        with open(path, encoding='utf-8') as f:
            for k, line in enumerate(f, 1):
                if MACHINE_PATH.search(line):
                    found.append('tests/golden/%s:%d: %s' % (rel, k, line.strip()))
    assert not found, '\n'.join(found)


def test_the_rule_sees_such_paths():
    assert MACHINE_PATH.search('    /work/mxvenv/bin/python make_graphs.py')
    assert MACHINE_PATH.search("subprocess.run(['/root/venv/bin/python', me])")
    assert not MACHINE_PATH.search('MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON make_graphs.py')
    assert not MACHINE_PATH.search("os.path.join(ROOT, 'tests', 'golden', 'data')")


def _text(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def test_generators_name_their_interpreter_portably():
    usage = [rel for rel, path in _sources() if os.path.basename(rel).startswith('make_')
             and '$MXNET_PYTHON' in _text(path)]
    assert len(usage) >= 20, usage
