"""The Module examples run as a user runs them (a fresh interpreter) and reach their goals
(the pattern of tests/test_examples.py)."""
import os
import re
import subprocess
import sys

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'examples')


def run_example(name, *args, timeout=300):
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, name)] + list(args),
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, \
        '%s failed:\n%s\n%s' % (name, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc.stdout, proc.stderr


def test_train_digits_module(tmp_path):
    prefix = str(tmp_path / 'lenet')
    out, log = run_example('train_digits_module.py', '--prefix', prefix)
    # MXNet's log lines, from fit, Speedometer and do_checkpoint
    for epoch in range(10):
        assert re.search(r'^Epoch\[%d\] Batch \[0-15\]\tSpeed: [\d.]+ samples/sec\t'
                         r'accuracy=[\d.]+$' % epoch, log, re.M)
        assert re.search(r'^Epoch\[%d\] Train-accuracy=[\d.]+$' % epoch, log, re.M)
        assert re.search(r'^Epoch\[%d\] Time cost=[\d.]+$' % epoch, log, re.M)
        assert 'Saved checkpoint to "%s-%04d.params"' % (prefix, epoch + 1) in log
        assert re.search(r'^Epoch\[%d\] Validation-accuracy=[\d.]+$' % epoch, log, re.M)
    assert sorted(os.listdir(str(tmp_path))) == \
        ['lenet-%04d.params' % e for e in range(1, 11)] + ['lenet-symbol.json']
    m = re.search(r'^checkpoint .*lenet-0010.params: test accuracy ([\d.]+)$', out, re.M)
    assert m and float(m.group(1)) >= 0.97


def test_train_digits_module_fails_below_target(tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, 'train_digits_module.py'),
                           '--epochs', '1', '--lr', '0.0001', '--prefix',
                           str(tmp_path / 'x')], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and 'below 0.97' in proc.stderr


def test_bucketing_example():
    out, log = run_example('bucketing.py')
    assert re.search(r'^buckets \(length: training batches\): 5: \d+, 10: \d+, 20: \d+, '
                     r'30: \d+$', out, re.M)
    assert 'Epoch[7] Validation-accuracy=' in log
    assert 'bucket executors: [5, 10, 20, 30]; parameters shared: yes' in out
    acc = float(re.search(r'^final test accuracy: ([\d.]+)$', out, re.M).group(1))
    assert acc >= 0.9


def test_multi_device_example():
    out, _ = run_example('multi_device.py')
    assert 'single device: cpu(0)' in out
    assert '4 devices: [cpu(0), cpu(1), cpu(2), cpu(3)], work_load_list [1, 2, 1, 2]' in out
    assert out.strip().endswith('the 4-device result equals the single-device run')
    diff = float(re.search(r'largest parameter difference: ([\de.+-]+)', out).group(1))
    assert diff < 1e-5
