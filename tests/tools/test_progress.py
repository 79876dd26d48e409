"""symgraph/progress.py: progress lines with tqdm where installed, else a plain line."""
import io
import sys

import pytest

from symgraph import progress as P


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_plain_line_on_a_terminal_redraws_in_place():
    out = _Tty()
    got = list(P.progress(range(7), desc='packing', file=out, unit='img', use_tqdm=False))
    assert got == list(range(7))
    text = out.getvalue()
    assert text.endswith('\n') and text.count('\n') == 1
    last = text.split('\r')[-1]
    assert last.startswith('packing: 7/7 [100%] ') and 'img/s' in last


def test_plain_line_in_a_log_writes_whole_lines_and_finishes_early_exits():
    out = io.StringIO()
    it = P.progress(iter(range(10)), total=10, desc='dump', file=out, use_tqdm=False)
    for k in it:
        if k == 3:
            break
    it.close()              # (the generator's finally: the line is finished)
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith('dump: 3/10 [30%]')
    assert '\r' not in out.getvalue()


def test_line_bar_by_hand_with_postfix_and_unknown_total():
    out = io.StringIO()
    b = P.bar(None, 'epoch', out, 'batch', use_tqdm=False)
    assert isinstance(b, P.LineBar)
    b.update(5)
    b.set_postfix([('accuracy', 0.25)], refresh=False)
    b.close()
    b.close()               # once only
    (line,) = out.getvalue().splitlines()
    assert line.startswith('epoch: 5 ') and line.endswith('batch/s accuracy=0.25')


def test_tqdm_when_installed_and_the_fallback_without(monkeypatch):
    tqdm = pytest.importorskip('tqdm')
    out = io.StringIO()
    b = P.bar(3, 'x', out, use_tqdm=None, mininterval=0)
    assert isinstance(b, tqdm.tqdm)
    b.close()
    monkeypatch.setitem(sys.modules, 'tqdm', None)
    assert not P.have_tqdm()
    assert isinstance(P.bar(3, 'x', out), P.LineBar)
    with pytest.raises(ImportError, match=r'symgraph\[tqdm\]'):
        P.bar(3, 'x', out, use_tqdm=True)
