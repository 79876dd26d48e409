"""Golden data of ``mx.profiler``'s outputs, from MXNet 1.9.1:

    $MXNET_PYTHON tests/golden/make_profiler.py

writes ``tests/golden/data/profiler/aggregate.json``: for a fixed sequence of imperative
calls and a symbolic forward/backward with a custom operator (:func:`run`), what MXNet's
``profiler.dumps()`` prints: the table's text lines that do not hold a measured time
(``table_fixed``: the title, each category's name, header and dash lines, in order, with
the rows' names and counts in place of the rows: ``row <name> <count>``), and the JSON
form's structure (``json``: {"Time"/"Memory": {category: {name: [the keys of its
item] joined by commas, count}}}, "Unit"), and the trace's events as
``name|category|phase`` strings (``trace``).
Times differ from run to run and between machines; tests/profiler/test_profiler.py
compares everything else.
"""
import json
import os
import sys
import tempfile

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'profiler')

_REGISTERED = set()


def register(mx):
    """Register the custom operator ``GoldenSigmoid`` with ``mx`` (MXNet or symgraph)."""
    if id(mx) in _REGISTERED:
        return
    _REGISTERED.add(id(mx))

    class Sigmoid(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], 1 / (1 + mx.nd.exp(-in_data[0])))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            y = out_data[0]
            self.assign(in_grad[0], req[0], out_grad[0] * y * (1 - y))

    @mx.operator.register('GoldenSigmoid')
    class SigmoidProp(mx.operator.CustomOpProp):
        def __init__(self):
            super(SigmoidProp, self).__init__(need_top_grad=True)

        def list_arguments(self):
            return ['data']

        def list_outputs(self):
            return ['output']

        def infer_shape(self, in_shape):
            return [in_shape[0]], [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return Sigmoid()


def run(mx, profiler, filename):
    """The profiled program (the test runs the same one through symgraph)."""
    register(mx)
    profiler.set_config(profile_all=True, filename=filename, aggregate_stats=True,
                        continuous_dump=False)
    data = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(data, num_hidden=4, name='fc')
    net = mx.sym.Custom(net, op_type='GoldenSigmoid', name='sig')
    net = mx.sym.MakeLoss(mx.sym.sum(net), name='loss')
    exe = net.simple_bind(mx.cpu(), data=(2, 3))
    exe.arg_dict['data'][:] = 1
    exe.arg_dict['fc_weight'][:] = 0.1
    exe.arg_dict['fc_bias'][:] = 0
    profiler.set_state('run')
    x = mx.nd.zeros((10, 10))
    y = mx.nd.sqrt(x)
    x = x + 1
    x = x + 1
    y.wait_to_read()
    exe.forward(is_train=True)
    exe.backward()
    mx.nd.waitall()
    profiler.set_state('stop')
    profiler.dump()
    return profiler.dumps(), profiler.dumps(format='json')


def structure(table, js):
    fixed = []
    in_rows = False
    for line in table.splitlines():
        if line.startswith('----'):
            fixed.append(line)
            in_rows = True
            continue
        if in_rows and line.strip():
            parts = line.split()
            if len(parts) >= 5:
                # name (may hold spaces), count, then 3 or 4 numbers
                nums = 3 if '(kB)' in fixed[-2] else 4
                fixed.append('row %s %s' % (' '.join(parts[:-(nums + 1)]), parts[-(nums + 1)]))
                continue
        in_rows = False
        fixed.append(line)
    d = json.loads(js)
    shape = {}
    for kind in ('Time', 'Memory'):
        shape[kind] = {cat: {name: [','.join(sorted(item)), item['Count']]
                             for name, item in rows.items()}
                       for cat, rows in d[kind].items()}
    shape['Unit'] = d['Unit']
    return fixed, shape


def main():
    import mxnet as mx
    from mxnet import profiler
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        trace_file = os.path.join(tmp, 'trace.json')
        table, js = run(mx, profiler, trace_file)
        with open(trace_file) as f:
            trace = json.load(f)
    fixed, shape = structure(table, js)
    names = sorted({'%s|%s|%s' % (e.get('name'), e.get('cat'), e.get('ph'))
                    for e in trace['traceEvents'] if e.get('ph') != 'M'})
    with open(os.path.join(OUT, 'aggregate.json'), 'w') as f:
        json.dump({'mxnet': mx.__version__, 'table_fixed': fixed, 'json': shape,
                   'trace': names, 'display_time_unit': trace.get('displayTimeUnit')},
                  f, indent=1)
        f.write('\n')
    print('wrote', os.path.join(OUT, 'aggregate.json'), file=sys.stderr)


if __name__ == '__main__':
    main()
