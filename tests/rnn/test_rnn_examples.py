"""examples/rnn/ runs as a user runs it (a fresh interpreter) and its perplexity falls (the
pattern of tests/test_examples.py)."""
import os
import re
import subprocess
import sys

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'examples')


def run_lstm_bucketing(*args):
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, 'rnn', 'lstm_bucketing.py'),
                           '--num-epochs', '2', '--max-sentences', '640', '--num-hidden', '32',
                           '--num-embed', '16', '--disp-batches', '10'] + list(args),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, '%s\n%s' % (proc.stdout[-3000:], proc.stderr[-3000:])
    out, log = proc.stdout, proc.stderr
    assert 'vocabulary: 63 words; 640 training and 400 validation sentences' in out
    for epoch in range(2):      # MXNet's fit and Speedometer log lines
        assert re.search(r'^Epoch\[%d\] Batch \[0-10\]\tSpeed: [\d.]+ samples/sec\t'
                         r'perplexity=[\d.]+$' % epoch, log, re.M)
        assert re.search(r'^Epoch\[%d\] Train-perplexity=[\d.]+$' % epoch, log, re.M)
    ppl = [float(p) for p in re.findall(r'^Epoch\[\d\] Validation-perplexity=([\d.]+)$',
                                        log, re.M)]
    assert len(ppl) == 2
    m = re.search(r'^validation perplexity by epoch: ([\d.]+), ([\d.]+)$', out, re.M)
    assert m and all(abs(float(v) - p) < 1e-3 for v, p in zip(m.groups(), ppl))
    assert ppl[1] < ppl[0] < 63, ppl
    return ppl


def test_lstm_bucketing_unrolled_cells():
    run_lstm_bucketing()


def test_lstm_bucketing_fused_cell():
    run_lstm_bucketing('--fused')
