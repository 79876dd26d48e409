"""Every code block of README.md runs as written: Python blocks are executed, shell blocks'
scripts and files exist (the commands themselves are the suite, CI and benchmarks)."""
import os
import re
import runpy
import shlex

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as _f:
    README = _f.read()
BLOCKS = re.findall(r'^```(\w*)\n(.*?)^```', README, re.S | re.M)
PYTHON = [code for lang, code in BLOCKS if lang == 'python']
SHELL = [code for lang, code in BLOCKS if lang in ('bash', 'sh', 'shell')]


def test_readme_has_the_two_commands_first():
    assert BLOCKS and BLOCKS[0][0] == 'bash'
    first = BLOCKS[0][1]
    assert 'examples/' in first and 'scripts/run_tests.sh' in first


@pytest.mark.parametrize('code', PYTHON, ids=['python%d' % i for i in range(len(PYTHON))])
def test_python_block_runs(code, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / 'block.py'
    path.write_text(code, encoding='utf-8')
    runpy.run_path(str(path), run_name='__main__')
    out = capsys.readouterr().out
    # each `print(...)  # expected` line's comment, when it is a literal, is what it prints
    for line in code.splitlines():
        m = re.match(r"\s*print\(.*\)\s+#\s+(\[.*\]|\(.*\)|True|False)\s*$", line)
        if m:
            assert m.group(1) in out, (line, out)


@pytest.mark.parametrize('code', SHELL, ids=['shell%d' % i for i in range(len(SHELL))])
def test_shell_block_names_files_that_exist(code):
    for line in code.splitlines():
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        for part in re.split(r'&&|\|\||;', line):
            words = shlex.split(part)
            for w in words:
                if re.match(r'^(examples|scripts|bench|tests|docs)/[\w./-]+$', w) \
                        and '*' not in w:
                    assert os.path.exists(os.path.join(ROOT, w)), '%s: %s missing' % (line, w)
