"""examples/image_rec.py runs as a user runs it (a fresh interpreter, --quick): it packs a
drawn folder of images with ``python -m symgraph.im2rec`` and both ways of training from the
``.rec`` (ImageRecordIter + Module.fit, DataLoader(num_workers=2) + Trainer) learn."""
import os
import re
import subprocess
import sys

import pytest

import symgraph as mx

pytest.importorskip('PIL')

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'examples',
                       'image_rec.py')


def test_image_rec_example_packs_and_learns(tmp_path):
    proc = subprocess.run([sys.executable, EXAMPLE, '--quick', '--work', str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    # im2rec wrote the lists and the indexed records: 4 classes x 80 images, split 80/20
    counts = {}
    for part in ('train', 'val'):
        prefix = str(tmp_path / ('images_' + part))
        with open(prefix + '.lst') as f:
            lines = [line.split('\t') for line in f if line.strip()]
        rec = mx.recordio.MXIndexedRecordIO(prefix + '.idx', prefix + '.rec', 'r')
        counts[part] = len(rec.keys)
        assert counts[part] == len(lines)
        header, _ = mx.recordio.unpack(rec.read_idx(rec.keys[0]))
        assert float(header.label) == float(lines[0][1])
        rec.close()
    assert counts == {'train': 256, 'val': 64}
    assert '(4 classes)' in out
    # chance is 0.25: both must be well above it
    for way in ('module', 'gluon'):
        m = re.search(r'^%s accuracy: ([\d.]+)' % way, out, re.M)
        assert m, out[-2000:]
        assert float(m.group(1)) > 0.45, (way, out[-2000:])
    losses = [float(x) for x in re.findall(r'^gluon epoch \d+  loss ([\d.]+)$', out, re.M)]
    assert len(losses) == 8 and losses[-1] < 0.8 * losses[0]
