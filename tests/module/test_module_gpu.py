"""Module on GPUs: the golden MLP run (tests/golden/make_module.py, mlp_sgd) on one GPU and
split over two, each equal to MXNet's CPU run.  Skipped without GPUs; in CI they run on
the strict CuPy stand-in (``SYMGRAPH_STRICT_CUPY=4``), which raises wherever an array of
one device meets a kernel of another."""
import pytest

import symgraph as mx
from symgraph.context import num_gpus

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(num_gpus() < 1, reason='needs a GPU')]


@pytest.mark.parametrize('ndev', [1, 2])
def test_golden_fit_on_gpus(ndev, tmp_path):
    if num_gpus() < ndev:
        pytest.skip('needs %d GPUs' % ndev)
    import test_module_golden as golden
    entry = golden.REPORT['mlp_sgd']
    args, aux = golden.initial('mlp')
    train_it, val_it = golden.iters('mlp')
    opt, opt_params, metric = golden.optimizer('sgd')
    mod = mx.mod.Module(golden.mlp(), context=[mx.gpu(i) for i in range(ndev)])
    mod.fit(train_it, eval_data=val_it, eval_metric=metric, optimizer=opt,
            optimizer_params=opt_params, arg_params=args, aux_params=aux, num_epoch=2)
    assert all(a.context == mx.gpu(i) for i, a in
               enumerate(mod._exec_group.param_arrays[0]))
    for k, v in mod.get_params()[0].items():
        golden.assert_close(v.asnumpy(), golden.RUNS['mlp_sgd|arg:%s' % k], k)
    pred = mod.predict(val_it)
    golden.assert_close(pred.asnumpy(), golden.RUNS['mlp_sgd|predict'], 'predict')
    assert mod.score(val_it, metric)[0][1] == pytest.approx(entry['score'][0][1])
