"""Dataset downloads for ``mx.test_utils`` (MNIST, CIFAR-10) into MXNet's cache directory
``$MXNET_HOME/datasets`` (``~/.mxnet/datasets``), checked by SHA-1."""
from __future__ import annotations

import gzip
import hashlib
import logging
import os
import shutil
import struct
import tarfile
import tempfile
import urllib.request

import numpy as np

from .base import data_dir

__all__ = ['check_sha1', 'download', 'get_mnist', 'get_mnist_ubyte', 'get_cifar10']


#: SHA-1 of the dataset files on MXNet's Gluon repository (those of mxnet.gluon.data.vision)
_SHA1 = {
    'mnist/train-images-idx3-ubyte.gz': '6c95f4b05d2bf285e1bfb0e7960c31bd3b3f8a7d',
    'mnist/train-labels-idx1-ubyte.gz': '2a80914081dc54586dbdf242f9805a6b8d2a15fc',
    'mnist/t10k-images-idx3-ubyte.gz': 'c3a25af1f52dad7f726cce8cacb138654b760d48',
    'mnist/t10k-labels-idx1-ubyte.gz': '763e7fa3757d93b0cdec073cef058b2004252c17',
    'cifar10/cifar-10-binary.tar.gz': 'fab780a1e191a7eda0f345501ccd62d20f7ed891',
}


def _repo_file_url(namespace, filename):
    """URL of a file on the Gluon repository (``$MXNET_GLUON_REPO`` overrides it, as MXNet)."""
    repo = os.environ.get('MXNET_GLUON_REPO',
                          'https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/')
    if not repo.endswith('/'):
        repo += '/'
    return '%sgluon/dataset/%s/%s' % (repo, namespace, filename)


def check_sha1(filename, sha1_hash):
    """Whether the SHA-1 of the file's content is ``sha1_hash``."""
    sha1 = hashlib.sha1()
    with open(filename, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            sha1.update(chunk)
    return sha1.hexdigest() == sha1_hash


def download(url, fname=None, dirname=None, overwrite=False, retries=5, sha1_hash=None):
    """Download ``url`` (http, https, file) into a file, as MXNet's ``test_utils.download``.

    Parameters
    ----------
    url : str
    fname : str, optional
        File name (default: the last part of the URL); joined to ``dirname`` when given.
    dirname : str, optional
        Directory, created if missing (default: the directory of ``fname``).
    overwrite : bool
        Download even if the file exists (with the right SHA-1, when one is given).
    retries : int
        Attempts before the last error is raised.
    sha1_hash : str, optional
        Expected SHA-1 of the content; a mismatch counts as a failed attempt.

    Returns
    -------
    str
        The file name.
    """
    if not (isinstance(retries, int) and retries >= 0):
        raise ValueError('Number of retries should be at least 0, got %r' % (retries,))
    if fname is None:
        fname = url.split('/')[-1]
    if dirname is None:
        dirname = os.path.dirname(fname)
    else:
        fname = os.path.join(dirname, fname)
    if dirname and not os.path.exists(dirname):
        logging.info('create directory %s', dirname)
        os.makedirs(dirname, exist_ok=True)
    if not overwrite and os.path.exists(fname) and (sha1_hash is None
                                                    or check_sha1(fname, sha1_hash)):
        logging.info("%s exists, skipping download", fname)
        return fname
    attempts = max(retries, 1)
    for attempt in range(attempts):
        tmp = None
        try:
            with urllib.request.urlopen(url) as r, tempfile.NamedTemporaryFile(
                    'wb', dir=dirname or '.', prefix='.download-', delete=False) as f:
                tmp = f.name
                shutil.copyfileobj(r, f, 1 << 20)
            if sha1_hash is not None and not check_sha1(tmp, sha1_hash):
                raise ValueError('File %s downloaded from %s has the wrong content: SHA-1 is '
                                 'not %s (the download may be incomplete or the file '
                                 'outdated)' % (fname, url, sha1_hash))
            os.replace(tmp, fname)
            break
        except (OSError, ValueError) as e:
            if tmp is not None and os.path.exists(tmp):
                os.remove(tmp)
            left = attempts - attempt - 1
            if left == 0:
                raise
            print("download failed, retrying, {} attempt{} left"
                  .format(left, 's' if left > 1 else ''))
    logging.info("downloaded %s into %s successfully", url, fname)
    return fname


def _dataset_file(namespace, filename):
    """A dataset file in ``$MXNET_HOME/datasets/<namespace>``, downloaded once and checked."""
    return download(_repo_file_url(namespace, filename),
                    dirname=os.path.join(data_dir(), 'datasets', namespace),
                    sha1_hash=_SHA1['%s/%s' % (namespace, filename)])


def _read_mnist(label_name, image_name):
    with gzip.open(_dataset_file('mnist', label_name)) as flbl:
        struct.unpack(">II", flbl.read(8))
        label = np.frombuffer(flbl.read(), dtype=np.int8)
    with gzip.open(_dataset_file('mnist', image_name), 'rb') as fimg:
        _, _, rows, cols = struct.unpack(">IIII", fimg.read(16))
        image = np.frombuffer(fimg.read(), dtype=np.uint8).reshape(len(label), rows, cols)
        image = image.reshape(image.shape[0], 1, rows, cols).astype(np.float32) / 255
    return label, image


def get_mnist():
    """MNIST as NumPy arrays, downloaded once into ``$MXNET_HOME/datasets/mnist``
    (``~/.mxnet`` by default) and checked by SHA-1.

    Returns
    -------
    dict
        ``train_data`` (60000, 1, 28, 28) float32 in [0, 1], ``train_label`` (60000,) int8,
        ``test_data``, ``test_label``: MXNet's layout and dtypes.
    """
    train_lbl, train_img = _read_mnist('train-labels-idx1-ubyte.gz',
                                       'train-images-idx3-ubyte.gz')
    test_lbl, test_img = _read_mnist('t10k-labels-idx1-ubyte.gz', 't10k-images-idx3-ubyte.gz')
    return {'train_data': train_img, 'train_label': train_lbl,
            'test_data': test_img, 'test_label': test_lbl}


def get_mnist_ubyte():
    """Write the four MNIST idx files (uncompressed, as ``MNISTIter`` reads them) into
    ``./data``, from the checked downloads of :func:`get_mnist`."""
    os.makedirs('data', exist_ok=True)
    for name in ('train-images-idx3-ubyte', 'train-labels-idx1-ubyte',
                 't10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte'):
        target = os.path.join('data', name)
        if not os.path.exists(target):
            with gzip.open(_dataset_file('mnist', name + '.gz'), 'rb') as src, \
                    open(target + '.part', 'wb') as dst:
                shutil.copyfileobj(src, dst)
            os.replace(target + '.part', target)


def _extract(archive, root):
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, 'data_filter'):
            tar.extractall(root, filter='data')
            return
        for m in tar.getmembers():
            path = os.path.realpath(os.path.join(root, m.name))
            if not path.startswith(os.path.realpath(root) + os.sep) or m.issym() or m.islnk():
                raise ValueError('%s: refusing to extract %r outside %s'
                                 % (archive, m.name, root))
        tar.extractall(root)


def get_cifar10():
    """CIFAR-10 as NumPy arrays: the binary archive of MXNet's Gluon repository, downloaded
    once into ``$MXNET_HOME/datasets/cifar10``, checked by SHA-1 and unpacked.

    MXNet's ``get_cifar10`` fetches RecordIO files for ``ImageRecordIter`` into ``./data``
    and returns nothing; symgraph has no RecordIO reader, so it returns the arrays.

    Returns
    -------
    dict
        ``train_data`` (50000, 3, 32, 32) float32 in [0, 1], ``train_label`` (50000,) int32,
        ``test_data`` (10000, 3, 32, 32), ``test_label``.
    """
    root = os.path.join(data_dir(), 'datasets', 'cifar10')
    names = ['data_batch_%d.bin' % i for i in range(1, 6)] + ['test_batch.bin']

    def find(name):
        for d in (root, os.path.join(root, 'cifar-10-batches-bin')):
            if os.path.exists(os.path.join(d, name)):
                return os.path.join(d, name)
        return None

    if any(find(n) is None for n in names):
        _extract(_dataset_file('cifar10', 'cifar-10-binary.tar.gz'), root)
        missing = [n for n in names if find(n) is None]
        if missing:
            raise FileNotFoundError('the CIFAR-10 archive in %s lacks %s' % (root, missing))

    def read(batch_names):
        raw = np.concatenate([np.fromfile(find(n), dtype=np.uint8).reshape(-1, 3072 + 1)
                              for n in batch_names])
        return (raw[:, 1:].reshape(-1, 3, 32, 32).astype(np.float32) / 255,
                raw[:, 0].astype(np.int32))

    train_data, train_label = read(names[:5])
    test_data, test_label = read(names[5:])
    return {'train_data': train_data, 'train_label': train_label,
            'test_data': test_data, 'test_label': test_label}
