"""python -m symgraph.im2rec against MXNet 1.9.1's tools/im2rec.py: its lists and records over
the same images (tests/golden/im2rec_probes.py made them, MXNet with OpenCV)."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from symgraph import im2rec, recordio

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'golden', 'data', 'im2rec')
ROOT = os.path.join(GOLDEN, 'images')
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'golden'))
import im2rec_probes as probes  # noqa: E402


def _bytes(path):
    with open(path, 'rb') as f:
        return f.read()


def _records(prefix):
    """[(header, payload)] of prefix.rec in its index's order, and the index's keys."""
    rec = recordio.MXIndexedRecordIO(prefix + '.idx', prefix + '.rec', 'r')
    out = [recordio.unpack(rec.read_idx(k)) for k in rec.keys]
    keys = list(rec.keys)
    rec.close()
    return out, keys


@pytest.mark.parametrize('prefix,opts', probes.LIST_RUNS)
def test_lists_equal_mxnet(tmp_path, prefix, opts, capsys):
    assert im2rec.main([str(tmp_path / prefix), ROOT] + opts) == 0
    made = sorted(f for f in os.listdir(str(tmp_path)))
    want = sorted(f for f in os.listdir(GOLDEN) if f.startswith(prefix) and
                  f.endswith('.lst') and (prefix != 'rec' or f == 'rec.lst'))
    assert made == want
    for name in made:
        assert _bytes(str(tmp_path / name)) == _bytes(os.path.join(GOLDEN, name)), name
    if '--recursive' in opts:
        assert capsys.readouterr().out.splitlines()[:4] == ['. 0', 'cat 1', 'dog 2',
                                                            'dog/deep 3']


def _pack(tmp_path, prefix, opts):
    shutil.copy(os.path.join(GOLDEN, prefix + '.lst'), str(tmp_path / (prefix + '.lst')))
    assert im2rec.main([str(tmp_path / prefix), ROOT] + opts) == 0
    return str(tmp_path / prefix)


def test_pass_through_is_mxnet_bytes(tmp_path):
    ours = _pack(tmp_path, 'pass', ['--pass-through'])
    for ext in ('.rec', '.idx'):
        assert _bytes(ours + ext) == _bytes(os.path.join(GOLDEN, 'pass' + ext))


@pytest.mark.parametrize('prefix,tol', [('png', 1), ('gray', 1), ('multi', 0), ('jpg', 12)])
def test_packed_images_match_mxnet(tmp_path, prefix, tol):
    pytest.importorskip('PIL')
    opts = dict(probes.PACK_RUNS)[prefix]
    ours, keys = _records(_pack(tmp_path, prefix, opts))
    theirs, their_keys = _records(os.path.join(GOLDEN, prefix))
    assert keys == their_keys == [4, 0, 5, 8, 6, 1, 3, 7, 2]
    for (h1, s1), (h2, s2) in zip(ours, theirs):
        assert (h1.flag, h1.id, h1.id2) == (h2.flag, h2.id, h2.id2)
        np.testing.assert_array_equal(h1.label, h2.label)
        _, a = recordio.unpack_img(recordio.pack(h1, s1))
        _, b = recordio.unpack_img(recordio.pack(h2, s2))
        assert a.shape == b.shape
        diff = np.abs(a.astype(int) - b)
        assert diff.max() <= tol, (h1.id, diff.max())
        if prefix == 'jpg':   # two JPEG encoders at quality 80: close on average
            assert diff.mean() < 2.5
    if prefix == 'multi':
        assert ours[1][0].flag == 3 and ours[1][0].label.tolist() == [0, 0, -1]
    if prefix == 'png':      # resized shorter side 5, centre-cropped square
        assert all(recordio.unpack_img(recordio.pack(h, s))[1].shape == (5, 5, 3)
                   for h, s in ours)
    if prefix == 'gray':
        assert recordio.unpack_img(recordio.pack(*ours[0]))[1].ndim == 2


def test_num_thread_keeps_list_order(tmp_path, capsys):
    pytest.importorskip('PIL')
    one = _pack(tmp_path, 'png', ['--encoding', '.png', '--resize', '5'])
    os.makedirs(str(tmp_path / 'two'))
    two = _pack(tmp_path / 'two', 'png', ['--encoding', '.png', '--resize', '5',
                                          '--num-thread', '2'])
    for ext in ('.rec', '.idx'):
        assert _bytes(one + ext) == _bytes(two + ext)
    err = capsys.readouterr().err
    assert 'png.rec: 9/9 images' in err


def test_bad_lines_and_images_are_reported_and_skipped(tmp_path, capsys):
    pytest.importorskip('PIL')
    root = tmp_path / 'root'
    os.makedirs(str(root))
    shutil.copy(os.path.join(ROOT, 'top0.png'), str(root / 'a.png'))
    (root / 'broken.png').write_bytes(b'not a png')
    (tmp_path / 'x.lst').write_text('0\t1.0\ta.png\nbad line\n1\tz\ta.png\n'
                                    '2\t2.0\tbroken.png\n3\t3.0\tmissing.png\n')
    assert im2rec.main([str(tmp_path / 'x'), str(root), '--encoding', '.png']) == 0
    out = capsys.readouterr().out
    assert 'x.lst, line 2: a .lst line has at least three parts' in out
    assert 'x.lst, line 3: cannot parse' in out
    assert 'broken.png' in out and 'missing.png' in out
    assert '2 of 3 images could not be packed' in out
    records, keys = _records(str(tmp_path / 'x'))
    assert keys == [0] and records[0][0].label == 1.0


def test_usage_errors(tmp_path, capsys):
    assert im2rec.main([str(tmp_path / 'nowhere' / 'x'), ROOT, '--list']) == 1
    assert 'does not exist' in capsys.readouterr().err
    assert im2rec.main([str(tmp_path / 'x'), ROOT]) == 1
    assert 'Did not find' in capsys.readouterr().err
    with pytest.raises(SystemExit):
        im2rec.main([str(tmp_path / 'x'), ROOT, '--encoding', '.bmp'])


def test_module_entry_point(tmp_path):
    proc = subprocess.run([sys.executable, '-m', 'symgraph.im2rec', '--list', '--no-shuffle',
                           str(tmp_path / 'l'), ROOT], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / 'l.lst').read_text().splitlines() == [
        '0\t0.000000\ttop0.png', '1\t0.000000\ttop1.png', '2\t0.000000\ttop2.jpg']


@pytest.mark.parametrize('prefix', ['png', 'jpg', 'gray', 'multi'])
def test_with_opencv_records_are_mxnet_bytes(tmp_path, prefix):
    # with OpenCV installed, im2rec reads, resizes and encodes as MXNet's script does
    pytest.importorskip('cv2')
    ours = _pack(tmp_path, prefix, dict(probes.PACK_RUNS)[prefix])
    for ext in ('.rec', '.idx'):
        assert _bytes(ours + ext) == _bytes(os.path.join(GOLDEN, prefix + ext))
