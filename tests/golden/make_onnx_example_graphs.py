"""Write the deploy graphs of MXNet 1.9.1's example networks as MXNet builds them (symbol
JSON), for the ONNX export tests (tests/onnx/test_export_special_examples.py).

Run with MXNet 1.9.1's interpreter and the MXNet sources (a git directory holding the tag
1.9.1, or a checkout), from any directory::

    MXNET_SRC=/path/to/mxnet/.git /path/to/mxnet-venv/bin/python \
        tests/golden/make_onnx_example_graphs.py

The example code is taken from the sources at tag 1.9.1 (``git archive``) into a
temporary directory and imported from there:

* ``ssd_vgg16_reduced_300``: example/ssd/symbol/symbol_factory.get_symbol('vgg16_reduced',
  300, num_classes=20) (the deploy graph ends in MultiBoxDetection);
* ``rcnn_vgg16_test``: example/rcnn/symnet/symbol_vgg.get_vgg_test with the example's
  default configuration (MultiProposal, ROIPooling);
* ``ctc_lstm_ocr``: example/ctc/lstm.py's unrolled LSTM up to the class scores (the graph
  CTC's loss reads; ``lstm_unroll`` without its loss), 2 layers, seq_len 10;
* ``rnn_bucketing_lm``: example/rnn/bucketing/cudnn_rnn_bucketing.py's sym_gen (Embedding,
  FusedRNNCell LSTM unrolled, FullyConnected, SoftmaxOutput) for one bucket.

The JSON files go to tests/golden/data/onnx_examples/ (beside this script).
"""
import io
import os
import subprocess
import sys
import tarfile
import tempfile

import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'onnx_examples')


def _examples(src, dest):
    """Extract the example code of tag 1.9.1 from ``src`` into ``dest``."""
    git = ['git', '--git-dir', src] if not os.path.isdir(os.path.join(src, '.git')) else \
        ['git', '-C', src]
    tar = subprocess.run(git + ['archive', '1.9.1', 'example/ssd/symbol',
                                'example/rcnn/symnet', 'example/rcnn/symdata',
                                'example/ctc/lstm.py'],
                         check=True, stdout=subprocess.PIPE).stdout
    tarfile.open(fileobj=io.BytesIO(tar)).extractall(dest)
    return os.path.join(dest, 'example')


def _ssd(ex):
    sys.path.insert(0, os.path.join(ex, 'ssd'))
    from symbol import symbol_factory
    return symbol_factory.get_symbol('vgg16_reduced', 300, num_classes=20)


def _rcnn(ex):
    sys.path.insert(0, os.path.join(ex, 'rcnn'))
    from symnet import symbol_vgg
    # example/rcnn's defaults (train_end2end / test: args.rpn_* and rcnn_*)
    return symbol_vgg.get_vgg_test(anchor_scales=(8, 16, 32), anchor_ratios=(0.5, 1, 2),
                                   rpn_feature_stride=16, rpn_pre_topk=6000,
                                   rpn_post_topk=300, rpn_nms_thresh=0.7, rpn_min_size=16,
                                   num_classes=21, rcnn_feature_stride=16,
                                   rcnn_pooled_size=(7, 7), rcnn_batch_size=1)


def _ctc(ex):
    sys.path.insert(0, os.path.join(ex, 'ctc'))
    import lstm
    return lstm._lstm_unroll_base(num_lstm_layer=2, seq_len=10, num_hidden=16)


def _bucketing_lm(vocab=50, num_embed=16, num_hidden=16, num_layers=2, seq_len=8):
    """cudnn_rnn_bucketing.py's sym_gen (the script parses arguments on import, so its
    few lines are repeated here)."""
    cell = mx.rnn.FusedRNNCell(num_hidden, num_layers=num_layers, mode='lstm')
    data = mx.sym.Variable('data')
    label = mx.sym.Variable('softmax_label')
    embed = mx.sym.Embedding(data=data, input_dim=vocab, output_dim=num_embed, name='embed')
    output, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True, layout='NTC')
    pred = mx.sym.Reshape(output, shape=(-1, num_hidden))
    pred = mx.sym.FullyConnected(data=pred, num_hidden=vocab, name='pred')
    label = mx.sym.Reshape(label, shape=(-1,))
    return mx.sym.SoftmaxOutput(data=pred, label=label, name='softmax')


def main():
    src = os.environ.get('MXNET_SRC')
    if not src:
        sys.exit('set MXNET_SRC to the MXNet sources (a git directory with tag 1.9.1)')
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        ex = _examples(src, tmp)
        graphs = {'ssd_vgg16_reduced_300': _ssd(ex), 'rcnn_vgg16_test': _rcnn(ex),
                  'ctc_lstm_ocr': _ctc(ex), 'rnn_bucketing_lm': _bucketing_lm()}
        for name, sym in graphs.items():
            sym.save(os.path.join(OUT, name + '-symbol.json'))
            print(name, len(sym.get_internals().list_outputs()), 'entries')
    sys.stdout.flush()
    os._exit(0)


if __name__ == '__main__':
    main()
