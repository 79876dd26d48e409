"""Pack a folder of images into RecordIO with im2rec and train a small CNN from the ``.rec``
twice: with ``mx.io.ImageRecordIter`` + ``Module.fit``, and with Gluon's
``DataLoader(ImageRecordDataset(...).transform_first(...), num_workers=2)`` + ``Trainer``.

    python examples/image_rec.py [--root DIR] [--work DIR] [--epochs 6] [--quick]

The folder holds one subfolder per class (``root/<class>/<image>``), as
``python -m symgraph.im2rec --list --recursive`` expects. Without ``--root`` the script
draws one: 4 classes of 32x32 JPEG images (horizontal stripes, vertical stripes, a disc, a
square outline) in random colours with noise, so that the classes survive random crops and
mirrors but a network has to learn them. Then, in ``--work`` (a temporary folder by
default)::

    python -m symgraph.im2rec --list --recursive --train-ratio 0.8 images ROOT
    python -m symgraph.im2rec --num-thread 2 images ROOT

make ``images_train.lst/.rec/.idx`` and ``images_val.lst/.rec/.idx``. The script prints
the held-out accuracy of each way of training (``module accuracy: ...``, ``gluon accuracy:
...``); chance is 1 / number of classes. ``--quick`` (fewer images and epochs) runs in well
under a minute on two cores.
"""
import argparse
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import symgraph as mx

SIZE = 32           # the drawn images (pixels)
CROP = 28           # the network's input: random crops while training, centre crops after
MEAN, STD = 128.0, 64.0


# ------------------------------------------------------------------ the image folder
def draw(kind, rng):
    """One SIZE x SIZE uint8 RGB image of pattern ``kind`` (0-3)."""
    yy, xx = np.mgrid[0:SIZE, 0:SIZE]
    fg, bg = rng.randint(0, 256, 3), rng.randint(0, 256, 3)
    while np.abs(fg - bg).sum() < 200:          # keep the pattern visible
        fg = rng.randint(0, 256, 3)
    period, phase = rng.randint(5, 9), rng.randint(0, 8)
    cy, cx = rng.uniform(10, 22, 2)
    r = rng.uniform(6, 10)
    if kind == 0:
        mask = ((yy + phase) // (period // 2 + 1)) % 2 == 0
    elif kind == 1:
        mask = ((xx + phase) // (period // 2 + 1)) % 2 == 0
    elif kind == 2:
        mask = (yy - cy) ** 2 + (xx - cx) ** 2 < r ** 2
    else:
        d = np.maximum(np.abs(yy - cy), np.abs(xx - cx))
        mask = (d < r) & (d > r - 3)
    img = np.where(mask[..., None], fg, bg).astype(np.float64)
    img += rng.normal(0, 20, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def make_folder(root, per_class, seed=0):
    """root/<class name>/<n>.jpg for the 4 drawn classes."""
    from PIL import Image
    rng = np.random.RandomState(seed)
    names = ['hstripes', 'vstripes', 'disc', 'square']
    for k, name in enumerate(names):
        os.makedirs(os.path.join(root, name), exist_ok=True)
        for i in range(per_class):
            Image.fromarray(draw(k, rng)).save(os.path.join(root, name, '%03d.jpg' % i),
                                               quality=90)
    return len(names)


def im2rec(work, root):
    """Run ``python -m symgraph.im2rec`` as a user would: the lists, then the records."""
    prefix = os.path.join(work, 'images')
    for args in (['--list', '--recursive', '--train-ratio', '0.8'], ['--num-thread', '2']):
        cmd = [sys.executable, '-m', 'symgraph.im2rec'] + args + [prefix, root]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            sys.exit('im2rec failed: %s\n%s' % (' '.join(cmd), proc.stderr[-2000:]))
    return prefix + '_train', prefix + '_val'


def count_classes(lst):
    with open(lst) as f:
        return len({float(line.split('\t')[1]) for line in f if line.strip()})


# ------------------------------------------------------------------ Module + ImageRecordIter
def record_iter(prefix, batch_size, train):
    return mx.io.ImageRecordIter(
        path_imgrec=prefix + '.rec', path_imgidx=prefix + '.idx',
        data_shape=(3, CROP, CROP), batch_size=batch_size, shuffle=train,
        rand_crop=train, rand_mirror=train, mean_r=MEAN, mean_g=MEAN, mean_b=MEAN,
        std_r=STD, std_g=STD, std_b=STD, preprocess_threads=2, seed=1)


def symbol_cnn(num_classes):
    x = mx.sym.var('data')
    for i, channels in enumerate((16, 32)):
        x = mx.sym.Convolution(x, num_filter=channels, kernel=(3, 3), pad=(1, 1),
                               name='conv%d' % i)
        x = mx.sym.Activation(x, act_type='relu')
        x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type='max')
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=num_classes, name='fc')
    return mx.sym.SoftmaxOutput(x, name='softmax')


def train_module(train, val, num_classes, epochs, batch_size):
    mod = mx.mod.Module(symbol_cnn(num_classes), context=mx.cpu())
    mod.fit(record_iter(train, batch_size, True), num_epoch=epochs,
            optimizer='sgd', optimizer_params={'learning_rate': 0.05, 'momentum': 0.9},
            initializer=mx.init.Xavier(magnitude=2))
    return mod.score(record_iter(val, batch_size, False), 'acc')[0][1]


# ------------------------------------------------------------------ Gluon + DataLoader
def gluon_cnn(num_classes):
    nn = mx.gluon.nn
    net = nn.HybridSequential()
    with net.name_scope():
        for channels in (16, 32):
            net.add(nn.Conv2D(channels, kernel_size=3, padding=1, activation='relu'),
                    nn.MaxPool2D(pool_size=2, strides=2))
        net.add(nn.Flatten(), nn.Dense(num_classes))
    return net


def loaders(train, val, batch_size, workers):
    from symgraph.gluon.data import DataLoader
    from symgraph.gluon.data.vision import ImageRecordDataset, transforms
    normalize = [transforms.ToTensor(),
                 transforms.Normalize([MEAN / 255] * 3, [STD / 255] * 3)]
    augment = transforms.Compose([transforms.RandomResizedCrop(CROP, scale=(0.6, 1.0)),
                                  transforms.RandomFlipLeftRight()] + normalize)
    plain = transforms.Compose([transforms.CenterCrop(CROP)] + normalize)
    return (DataLoader(ImageRecordDataset(train + '.rec').transform_first(augment),
                       batch_size=batch_size, shuffle=True, num_workers=workers,
                       last_batch='rollover'),
            DataLoader(ImageRecordDataset(val + '.rec').transform_first(plain),
                       batch_size=batch_size, num_workers=workers))


def train_gluon(train, val, num_classes, epochs, batch_size, workers=2):
    net = gluon_cnn(num_classes)
    net.initialize(mx.init.Xavier(magnitude=2))
    net.hybridize()
    trainer = mx.gluon.Trainer(net.collect_params(), 'sgd',
                               {'learning_rate': 0.05, 'momentum': 0.9})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    train_data, val_data = loaders(train, val, batch_size, workers)
    for epoch in range(epochs):
        total, n = 0.0, 0
        for data, label in train_data:
            # the workers' batches lie in shared memory (cpu_shared): move them as MXNet
            # scripts do
            data, label = data.as_in_context(mx.cpu()), label.as_in_context(mx.cpu())
            with mx.autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(data.shape[0])
            total += float(loss.sum().asscalar())
            n += data.shape[0]
        print('gluon epoch %d  loss %.4f' % (epoch + 1, total / max(n, 1)))
    metric = mx.metric.Accuracy()
    for data, label in val_data:
        metric.update([label], [net(data.as_in_context(mx.cpu()))])
    return metric.get()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--root', help='a folder of class subfolders (default: drawn)')
    ap.add_argument('--work', help='where the .lst/.rec/.idx go (default: a temporary dir)')
    ap.add_argument('--epochs', type=int, default=6)
    ap.add_argument('--per-class', type=int, default=150,
                    help='images per class to draw (without --root)')
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--quick', action='store_true',
                    help='80 images per class and 8 epochs')
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format='%(message)s')   # Module.fit's epochs
    if args.quick:
        args.per_class, args.epochs = 80, 8
    mx.random.seed(0)
    np.random.seed(0)
    work = args.work or tempfile.mkdtemp(prefix='image_rec_')
    try:
        start = time.time()
        root = args.root
        if root is None:
            root = os.path.join(work, 'folder')
            make_folder(root, args.per_class)
        train, val = im2rec(work, root)
        num_classes = count_classes(train + '.lst')
        print('packed %s into %s.rec and %s.rec (%d classes) in %.1fs'
              % (root, train, val, num_classes, time.time() - start))
        t = time.time()
        acc = train_module(train, val, num_classes, args.epochs, args.batch)
        print('module accuracy: %.4f  (%.1fs; chance %.2f)'
              % (acc, time.time() - t, 1.0 / num_classes))
        t = time.time()
        acc = train_gluon(train, val, num_classes, args.epochs, args.batch)
        print('gluon accuracy: %.4f  (%.1fs; chance %.2f)'
              % (acc, time.time() - t, 1.0 / num_classes))
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
