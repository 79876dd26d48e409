"""Time ``_contrib_MultiProposal`` on the input of MXNet 1.9.1's ``test_multi_proposal_op``
(batch 20, a 63 x 63 feature map, 9 anchors, pre-NMS top 12000, post-NMS top 2000), ours
against MXNet's, and report the peak resident memory of each process.

Usage::

    python bench/bench_proposal.py [--mxnet /path/to/python-with-mxnet] [--batch 20]

MXNet runs in a subprocess of the given interpreter (MXNET_MKLDNN_ENABLED=0), on the same
arrays (passed through a temporary ``.npz`` file).
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

KW = dict(feature_stride=16, scales=(8, 16, 32), ratios=(0.5, 1, 2), rpn_pre_nms_top_n=12000,
          rpn_post_nms_top_n=2000, threshold=0.7, rpn_min_size=16, output_score=True)


def make_input(batch, seed=0):
    """cls_prob, bbox_pred, im_info as MXNet's test builds them (uniform [0, 1) maps,
    image sizes 100..1007, scales 0.70..0.99)."""
    rng = np.random.RandomState(seed)
    feat = (1000 + 15) // 16
    cls = rng.random_sample((batch, 18, feat, feat)).astype(np.float32)
    bbox = rng.random_sample((batch, 36, feat, feat)).astype(np.float32)
    info = np.zeros((batch, 3), np.float32)
    for i in range(batch):
        size = rng.randint(100, feat * 16, size=(2,))
        info[i] = [size[0], size[1], rng.randint(70, 100) / 100.0]
    return cls, bbox, info


def run(mx, path):
    """Seconds for one forward (outputs copied to NumPy) and the peak RSS in MB."""
    d = np.load(path)
    args = {k: mx.nd.array(d[k]) for k in ('cls_prob', 'bbox_pred', 'im_info')}
    t = time.perf_counter()
    rois, score = mx.nd.contrib.MultiProposal(**args, **KW)
    rois.asnumpy(), score.asnumpy()
    return time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--mxnet', default='/work/mxvenv/bin/python')
    p.add_argument('--batch', type=int, default=20)
    p.add_argument('--child', help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        import mxnet as mx
        print('%.3f %.0f' % run(mx, a.child))
        return
    cls, bbox, info = make_input(a.batch)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'in.npz')
        np.savez(path, cls_prob=cls, bbox_pred=bbox, im_info=info)
        if a.mxnet and os.path.exists(a.mxnet):
            env = dict(os.environ, MXNET_MKLDNN_ENABLED='0')
            out = subprocess.run([a.mxnet, os.path.abspath(__file__), '--child', path],
                                 capture_output=True, text=True, env=env, check=True)
            sec, mb = out.stdout.split()[-2:]
            print('MXNet    batch %d: %6.2f s, peak RSS %5s MB' % (a.batch, float(sec), mb))
        import symgraph as mx
        print('symgraph batch %d: %6.2f s, peak RSS %5.0f MB' % ((a.batch,) + run(mx, path)))


if __name__ == '__main__':
    sys.exit(main())
