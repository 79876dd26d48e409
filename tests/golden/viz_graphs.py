"""Networks for the visualisation golden data, built with either MXNet or symgraph.

Every builder takes the module (``mxnet`` or ``symgraph``) as ``mx`` so the golden
generator (``make_viz_golden.py``, run with MXNet 1.9.1 on Python 3.8) and the tests build
exactly the same graphs. Node names are explicit so they do not depend on name counters.
"""


def mlp(mx):
    """Three fully connected layers with ReLU, softmax loss."""
    data = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(data=data, name='fc1', num_hidden=128)
    net = mx.sym.Activation(data=net, name='relu1', act_type='relu')
    net = mx.sym.FullyConnected(data=net, name='fc2', num_hidden=64)
    net = mx.sym.Activation(data=net, name='relu2', act_type='relu')
    net = mx.sym.FullyConnected(data=net, name='fc3', num_hidden=10)
    return mx.sym.SoftmaxOutput(data=net, name='softmax')


def lenet(mx):
    """LeNet as in MXNet's tutorials (tanh, max pooling, explicit flatten)."""
    data = mx.sym.Variable('data')
    conv1 = mx.sym.Convolution(data=data, kernel=(5, 5), num_filter=20, name='conv1')
    tanh1 = mx.sym.Activation(data=conv1, act_type='tanh', name='tanh1')
    pool1 = mx.sym.Pooling(data=tanh1, pool_type='max', kernel=(2, 2), stride=(2, 2),
                           name='pool1')
    conv2 = mx.sym.Convolution(data=pool1, kernel=(5, 5), num_filter=50, name='conv2')
    tanh2 = mx.sym.Activation(data=conv2, act_type='tanh', name='tanh2')
    pool2 = mx.sym.Pooling(data=tanh2, pool_type='max', kernel=(2, 2), stride=(2, 2),
                           name='pool2')
    flat = mx.sym.Flatten(data=pool2, name='flatten')
    fc1 = mx.sym.FullyConnected(data=flat, num_hidden=500, name='fc1')
    tanh3 = mx.sym.Activation(data=fc1, act_type='tanh', name='tanh3')
    fc2 = mx.sym.FullyConnected(data=tanh3, num_hidden=10, name='fc2')
    return mx.sym.SoftmaxOutput(data=fc2, name='softmax')


def conv_fc(mx):
    """A convolution feeding FullyConnected without a Flatten (FC flattens itself).

    MXNet's print_summary counts only the input's channels for such a layer; the
    golden total records that.
    """
    data = mx.sym.Variable('data')
    conv = mx.sym.Convolution(data=data, kernel=(3, 3), num_filter=4, pad=(1, 1),
                              name='conv')
    act = mx.sym.Activation(data=conv, act_type='relu', name='relu')
    fc = mx.sym.FullyConnected(data=act, num_hidden=5, name='fc')
    return mx.sym.SoftmaxOutput(data=fc, name='softmax')


def _residual_unit(mx, data, num_filter, stride, dim_match, name, bottle_neck):
    """One unit of MXNet's ``example/image-classification/symbols/resnet.py`` (v2)."""
    bn_mom, eps = 0.9, 2e-5
    if bottle_neck:
        bn1 = mx.sym.BatchNorm(data=data, fix_gamma=False, eps=eps, momentum=bn_mom,
                               name=name + '_bn1')
        act1 = mx.sym.Activation(data=bn1, act_type='relu', name=name + '_relu1')
        conv1 = mx.sym.Convolution(data=act1, num_filter=num_filter // 4, kernel=(1, 1),
                                   stride=(1, 1), pad=(0, 0), no_bias=True,
                                   name=name + '_conv1')
        bn2 = mx.sym.BatchNorm(data=conv1, fix_gamma=False, eps=eps, momentum=bn_mom,
                               name=name + '_bn2')
        act2 = mx.sym.Activation(data=bn2, act_type='relu', name=name + '_relu2')
        conv2 = mx.sym.Convolution(data=act2, num_filter=num_filter // 4, kernel=(3, 3),
                                   stride=stride, pad=(1, 1), no_bias=True,
                                   name=name + '_conv2')
        bn3 = mx.sym.BatchNorm(data=conv2, fix_gamma=False, eps=eps, momentum=bn_mom,
                               name=name + '_bn3')
        act3 = mx.sym.Activation(data=bn3, act_type='relu', name=name + '_relu3')
        body = mx.sym.Convolution(data=act3, num_filter=num_filter, kernel=(1, 1),
                                  stride=(1, 1), pad=(0, 0), no_bias=True,
                                  name=name + '_conv3')
    else:
        bn1 = mx.sym.BatchNorm(data=data, fix_gamma=False, momentum=bn_mom, eps=eps,
                               name=name + '_bn1')
        act1 = mx.sym.Activation(data=bn1, act_type='relu', name=name + '_relu1')
        conv1 = mx.sym.Convolution(data=act1, num_filter=num_filter, kernel=(3, 3),
                                   stride=stride, pad=(1, 1), no_bias=True,
                                   name=name + '_conv1')
        bn2 = mx.sym.BatchNorm(data=conv1, fix_gamma=False, momentum=bn_mom, eps=eps,
                               name=name + '_bn2')
        act2 = mx.sym.Activation(data=bn2, act_type='relu', name=name + '_relu2')
        body = mx.sym.Convolution(data=act2, num_filter=num_filter, kernel=(3, 3),
                                  stride=(1, 1), pad=(1, 1), no_bias=True,
                                  name=name + '_conv2')
    if dim_match:
        shortcut = data
    else:
        shortcut = mx.sym.Convolution(data=act1, num_filter=num_filter, kernel=(1, 1),
                                      stride=stride, no_bias=True, name=name + '_sc')
    return mx.sym.elemwise_add(body, shortcut, name=name + '_plus')


def resnet(mx, num_layers=20, num_classes=10, image_size=32):
    """MXNet's symbol-API ResNet v2 (CIFAR layout for 32x32 images, ImageNet otherwise).

    ``num_layers``: 20 (CIFAR, basic units), 18 or 50 (ImageNet).
    """
    bn_mom, eps = 0.9, 2e-5
    if image_size <= 32:
        units = [(num_layers - 2) // 6] * 3
        filters, bottle_neck = [16, 16, 32, 64], False
    elif num_layers == 18:
        units, filters, bottle_neck = [2, 2, 2, 2], [64, 64, 128, 256, 512], False
    elif num_layers == 50:
        units, filters, bottle_neck = [3, 4, 6, 3], [64, 256, 512, 1024, 2048], True
    else:
        raise ValueError('unsupported num_layers %d' % num_layers)
    data = mx.sym.Variable(name='data')
    body = mx.sym.BatchNorm(data=data, fix_gamma=True, eps=eps, momentum=bn_mom,
                            name='bn_data')
    if image_size <= 32:
        body = mx.sym.Convolution(data=body, num_filter=filters[0], kernel=(3, 3),
                                  stride=(1, 1), pad=(1, 1), no_bias=True, name='conv0')
    else:
        body = mx.sym.Convolution(data=body, num_filter=filters[0], kernel=(7, 7),
                                  stride=(2, 2), pad=(3, 3), no_bias=True, name='conv0')
        body = mx.sym.BatchNorm(data=body, fix_gamma=False, eps=eps, momentum=bn_mom,
                                name='bn0')
        body = mx.sym.Activation(data=body, act_type='relu', name='relu0')
        body = mx.sym.Pooling(data=body, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                              pool_type='max', name='pool0')
    for i, n_units in enumerate(units):
        stride = (1, 1) if i == 0 else (2, 2)
        body = _residual_unit(mx, body, filters[i + 1], stride, False,
                              'stage%d_unit%d' % (i + 1, 1), bottle_neck)
        for j in range(n_units - 1):
            body = _residual_unit(mx, body, filters[i + 1], (1, 1), True,
                                  'stage%d_unit%d' % (i + 1, j + 2), bottle_neck)
    bn1 = mx.sym.BatchNorm(data=body, fix_gamma=False, eps=eps, momentum=bn_mom, name='bn1')
    relu1 = mx.sym.Activation(data=bn1, act_type='relu', name='relu1')
    pool1 = mx.sym.Pooling(data=relu1, global_pool=True, kernel=(7, 7), pool_type='avg',
                           name='pool1')
    flat = mx.sym.Flatten(data=pool1, name='flatten0')
    fc1 = mx.sym.FullyConnected(data=flat, num_hidden=num_classes, name='fc1')
    return mx.sym.SoftmaxOutput(data=fc1, name='softmax')


def resnet18(mx):
    return resnet(mx, 18, 1000, 224)


def resnet50(mx):
    return resnet(mx, 50, 1000, 224)


#: name -> (builder, input shapes); print_summary text is stored for these
SUMMARY_CASES = {
    'mlp': (mlp, {'data': (1, 100)}),
    'lenet': (lenet, {'data': (1, 1, 28, 28)}),
    'resnet20': (resnet, {'data': (1, 3, 32, 32)}),
    'conv_fc': (conv_fc, {'data': (1, 3, 6, 6)}),
}

#: name -> (builder, input shapes); only the totals are stored (the tables are long)
TOTAL_CASES = {
    'resnet18': (resnet18, {'data': (1, 3, 224, 224)}),
    'resnet50': (resnet50, {'data': (1, 3, 224, 224)}),
}
