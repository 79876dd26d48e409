"""contrib.SyncBatchNorm across processes (python -m symgraph.launch, 2 processes x 1 or 2
devices each): outputs, gradients and moving statistics equal BatchNorm over the whole
batch. Every run is bounded."""
import re

import numpy as np
import pytest

import symgraph as mx
from mpi_util import launch, check

WORKER = '''
import sys
import numpy as np
import symgraph as mx
from symgraph import dist
from symgraph.dist.mpi import world
ndev, mode = int(sys.argv[1]), sys.argv[3]
comm = world()                       # the job's processes: SyncBatchNorm spans them
r, n = comm.rank, comm.size
d = np.load(sys.argv[2])
per = d['x'].shape[0] // n
x, dy = d['x'][r * per:(r + 1) * per], d['dy'][r * per:(r + 1) * per]
if mode == 'explicit':
    kw = dict(ndev=ndev, key='bn')
elif mode == 'inferred':
    kw = {}
elif mode == 'unequal':              # rank 0 runs on ndev devices, rank 1 on one
    kw = {}
    ndev = ndev if r == 0 else 1
elif mode == 'wrongkey':             # the processes run differently named layers
    kw = dict(key='bn%d' % r)
sym = mx.sym.contrib.SyncBatchNorm(mx.sym.var('data'), fix_gamma=False, name='bn', **kw)
group = dist.DataParallelExecutor(sym, [mx.cpu(k) for k in range(ndev)], data=x.shape)
group.set_params({'bn_gamma': mx.nd.array(d['gamma']), 'bn_beta': mx.nd.array(d['beta'])},
                 {'bn_moving_mean': mx.nd.array(d['mm']), 'bn_moving_var': mx.nd.array(d['mv'])})
out = group.forward(is_train=True, data=x)[0].asnumpy()
group.backward([dy])
exe = group.execs[0]
np.savez('out%d.npz' % r, out=out, dx=group.get_input_grads()[0].asnumpy(),
         dgamma=exe.grad_dict['bn_gamma'].asnumpy(), dbeta=exe.grad_dict['bn_beta'].asnumpy(),
         mm=exe.aux_dict['bn_moving_mean'].asnumpy(), mv=exe.aux_dict['bn_moving_var'].asnumpy())
'''


@pytest.mark.parametrize('ndev,mode', [(1, 'explicit'), (2, 'explicit'), (2, 'inferred'),
                                       (2, 'unequal')])
def test_syncbn_over_two_processes_equals_batchnorm_of_the_whole_batch(tmp_path, ndev, mode):
    """ndev and key given by hand (as MXNet needs), inferred, and inferred with rank 0 on
    two devices and rank 1 on one."""
    rng = np.random.RandomState(ndev)
    shape = (8, 3, 4, 5)
    d = {'x': (rng.uniform(-1, 1, shape) * 3 + 1).astype('f'),
         'dy': rng.uniform(-1, 1, shape).astype('f'),
         'gamma': rng.uniform(0.5, 1.5, 3).astype('f'), 'beta': rng.uniform(-1, 1, 3).astype('f'),
         'mm': rng.uniform(-0.5, 0.5, 3).astype('f'), 'mv': rng.uniform(0.5, 1.5, 3).astype('f')}
    np.savez(tmp_path / 'in.npz', **d)
    check(launch(tmp_path, 2, WORKER, args=[ndev, tmp_path / 'in.npz', mode]))
    got = [dict(np.load(tmp_path / ('out%d.npz' % r))) for r in range(2)]

    ref = mx.sym.BatchNorm(mx.sym.var('data'), fix_gamma=False, name='bn').simple_bind(
        mx.cpu(), data=shape)
    ref.copy_params_from({'bn_gamma': mx.nd.array(d['gamma']),
                          'bn_beta': mx.nd.array(d['beta'])},
                         {'bn_moving_mean': mx.nd.array(d['mm']),
                          'bn_moving_var': mx.nd.array(d['mv'])})
    want = ref.forward(is_train=True, data=d['x'])[0].asnumpy()
    ref.backward([mx.nd.array(d['dy'])])
    tol = dict(rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(np.concatenate([g['out'] for g in got]), want, **tol)
    np.testing.assert_allclose(np.concatenate([g['dx'] for g in got]),
                               ref.grad_dict['data'].asnumpy(), **tol)
    # gamma's and beta's gradients: each process holds its share; they sum to BatchNorm's
    np.testing.assert_allclose(got[0]['dgamma'] + got[1]['dgamma'],
                               ref.grad_dict['bn_gamma'].asnumpy(), **tol)
    np.testing.assert_allclose(got[0]['dbeta'] + got[1]['dbeta'],
                               ref.grad_dict['bn_beta'].asnumpy(), **tol)
    assert not np.allclose(got[0]['dbeta'], ref.grad_dict['bn_beta'].asnumpy())
    for g in got:
        np.testing.assert_allclose(g['mm'], ref.aux_dict['bn_moving_mean'].asnumpy(), **tol)
        np.testing.assert_allclose(g['mv'], ref.aux_dict['bn_moving_var'].asnumpy(), **tol)


def test_processes_running_different_layers_fail_naming_them(tmp_path):
    """Each process gives its layer another key (another layer): every process raises a
    ParameterError on the first step, long before the timeout, instead of mixing the
    statistics of different layers or hanging."""
    rng = np.random.RandomState(0)
    shape = (4, 3, 2, 2)
    np.savez(tmp_path / 'in.npz', x=rng.uniform(-1, 1, shape).astype('f'),
             dy=rng.uniform(-1, 1, shape).astype('f'), gamma=np.ones(3, 'f'),
             beta=np.zeros(3, 'f'), mm=np.zeros(3, 'f'), mv=np.ones(3, 'f'))
    proc = launch(tmp_path, 2, WORKER, args=[1, tmp_path / 'in.npz', 'wrongkey'], timeout=60,
                  bound=60)
    assert proc.returncode != 0
    assert 'ParameterError' in proc.stderr, proc.stderr[-3000:]
    assert re.search(r"SyncBatchNorm 'bn[01]': process [01] runs another SyncBatchNorm layer "
                     r"\(another key\) at this point than process [01]", proc.stderr), \
        proc.stderr[-3000:]
    assert 'DistTimeoutError' not in proc.stderr
