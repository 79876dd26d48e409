"""Convolution fills unknown data dimensions from a known output, as MXNet 1.9.1's
ConvolutionShape does (MXNet's test_infer_shape.py test_incomplete_infer_convolution; the
begin states of mx.rnn's convolutional cells have an unknown batch size)."""
import symgraph as mx


def test_batch_and_stride_one_spatial_sizes_come_from_the_output():
    a = mx.sym.Variable('a', shape=(0, 10, 0, 0))
    b = mx.sym.Convolution(data=a, num_filter=21, kernel=(3, 3), dilate=(1, 1), pad=(1, 1))
    d = b + mx.sym.Variable('c', shape=(5, 21, 32, 32))
    args = dict(zip(d.list_arguments(), d.infer_shape()[0]))
    assert args['a'] == (5, 10, 32, 32)
    # dilation 2, no padding: input = output + dilate * (kernel - 1)
    b = mx.sym.Convolution(data=a, num_filter=4, kernel=(3, 5), dilate=(2, 2), no_bias=True)
    d = b + mx.sym.Variable('c', shape=(2, 4, 7, 9))
    assert dict(zip(d.list_arguments(), d.infer_shape()[0]))['a'] == (2, 10, 11, 17)


def test_a_strided_spatial_size_stays_unknown():
    a = mx.sym.Variable('a', shape=(0, 3, 0, 8))
    b = mx.sym.Convolution(data=a, num_filter=4, kernel=(3, 3), stride=(2, 1), pad=(1, 1))
    d = b + mx.sym.Variable('c', shape=(2, 4, 5, 8))
    arg_shapes, _, _ = d.infer_shape_partial()
    assert dict(zip(d.list_arguments(), arg_shapes))['a'] == (2, 3, 0, 8)
