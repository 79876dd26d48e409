"""Vision datasets (MXNet's ``mx.gluon.data.vision.datasets``), after MXNet 1.9.1's
``python/mxnet/gluon/data/vision/datasets.py`` (``ImageListDataset`` after MXNet's master).

MNIST, FashionMNIST, CIFAR10 and CIFAR100 read MXNet's local file layouts under ``root``
(the gzipped IDX files of MNIST, the binary batches of CIFAR). Unlike MXNet, nothing is
downloaded unless ``download=True`` is passed: then missing files (or files whose SHA-1 is
not the published one) are fetched from MXNet's repository and checked. Without it, files
present in ``root`` are read as they are and a missing one is a FileNotFoundError that says
what to fetch.
"""
import gzip
import os
import struct
import tarfile
import warnings

import numpy as np

from .... import ndarray as nd
from .... import image, recordio, base
from ...utils import download as _download, check_sha1, _get_repo_file_url
from .. import dataset
from ..record import RecordFileDataset

__all__ = ['MNIST', 'FashionMNIST', 'CIFAR10', 'CIFAR100', 'ImageRecordDataset',
           'ImageFolderDataset', 'ImageListDataset']


class _DownloadedDataset(dataset.Dataset):
    """Base class of the datasets MXNet downloads: ``_get_data`` fills ``_data`` (an
    NDArray of images) and ``_label`` (a NumPy int32 array)."""

    def __init__(self, root, transform, download):
        super(_DownloadedDataset, self).__init__()
        self._transform = transform
        self._download = download
        self._data = None
        self._label = None
        self._root = os.path.expanduser(root)
        if download:
            os.makedirs(self._root, exist_ok=True)
        self._get_data()

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)

    def _fetch(self, filename, sha1, url_name=None):
        """The path of ``filename`` in root; downloaded (and checked) only when asked."""
        path = os.path.join(self._root, filename)
        url = _get_repo_file_url('gluon/dataset/' + self._namespace, url_name or filename)
        if self._download:
            return _download(url, path=path, sha1_hash=sha1)
        if not os.path.exists(path):
            raise FileNotFoundError(
                '%s: %s does not exist; pass download=True to fetch it (SHA-1 checked), or '
                'fetch %s into %s' % (type(self).__name__, path, url, self._root))
        return path


def _read_idx_gz(path, magic, ndim):
    """The array of a gzipped IDX file (MNIST's format: big-endian magic and sizes)."""
    with gzip.open(path, 'rb') as fin:
        head = fin.read(4 * (1 + ndim))
        if len(head) < 4 * (1 + ndim) or struct.unpack('>I', head[:4])[0] != magic:
            raise ValueError('%s is not an IDX file of magic number %d' % (path, magic))
        shape = struct.unpack('>' + 'I' * ndim, head[4:])
        data = np.frombuffer(fin.read(), dtype=np.uint8)
    if data.size != int(np.prod(shape)):
        raise ValueError('%s: %d bytes of data for shape %s' % (path, data.size, shape))
    return data.reshape(shape)


class MNIST(_DownloadedDataset):
    """MNIST handwritten digits: each sample is a uint8 image NDArray (28, 28, 1) and an
    int32 label.

    Parameters
    ----------
    root : str, default ``$MXNET_HOME/datasets/mnist``
        The folder of ``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``,
        ``t10k-images-idx3-ubyte.gz`` and ``t10k-labels-idx1-ubyte.gz``.
    train : bool, default True
        The training or the test set.
    transform : callable, default None
        ``transform(data, label)`` gives each sample.
    download : bool, default False
        Fetch missing files (symgraph's addition; MXNet always downloads).
    """

    def __init__(self, root=os.path.join(base.data_dir(), 'datasets', 'mnist'),
                 train=True, transform=None, download=False):
        self._train = train
        self._train_data = ('train-images-idx3-ubyte.gz',
                            '6c95f4b05d2bf285e1bfb0e7960c31bd3b3f8a7d')
        self._train_label = ('train-labels-idx1-ubyte.gz',
                             '2a80914081dc54586dbdf242f9805a6b8d2a15fc')
        self._test_data = ('t10k-images-idx3-ubyte.gz',
                           'c3a25af1f52dad7f726cce8cacb138654b760d48')
        self._test_label = ('t10k-labels-idx1-ubyte.gz',
                            '763e7fa3757d93b0cdec073cef058b2004252c17')
        self._namespace = 'mnist'
        super(MNIST, self).__init__(root, transform, download)

    def _get_data(self):
        if self._train:
            data, label = self._train_data, self._train_label
        else:
            data, label = self._test_data, self._test_label
        data_file = self._fetch(*data)
        label_file = self._fetch(*label)
        label = _read_idx_gz(label_file, 2049, 1).astype(np.int32)
        data = _read_idx_gz(data_file, 2051, 3)
        if data.shape[0] != len(label):
            raise ValueError('%s holds %d images but %s %d labels'
                             % (data_file, data.shape[0], label_file, len(label)))
        self._data = nd.array(data.reshape(len(label), 28, 28, 1), dtype=np.uint8)
        self._label = label


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST, MNIST's layout: each sample is a uint8 image NDArray
    (28, 28, 1) and an int32 label (``root`` defaults to
    ``$MXNET_HOME/datasets/fashion-mnist``; the other parameters as :class:`MNIST`)."""

    def __init__(self, root=os.path.join(base.data_dir(), 'datasets', 'fashion-mnist'),
                 train=True, transform=None, download=False):
        self._train = train
        self._train_data = ('train-images-idx3-ubyte.gz',
                            '0cf37b0d40ed5169c6b3aba31069a9770ac9043d')
        self._train_label = ('train-labels-idx1-ubyte.gz',
                             '236021d52f1e40852b06a4c3008d8de8aef1e40b')
        self._test_data = ('t10k-images-idx3-ubyte.gz',
                           '626ed6a7c06dd17c0eec72fa3be1740f146a2863')
        self._test_label = ('t10k-labels-idx1-ubyte.gz',
                            '17f9ab60e7257a1620f4ad76bbbaf857c3920701')
        self._namespace = 'fashion-mnist'
        _DownloadedDataset.__init__(self, root, transform, download)


class CIFAR10(_DownloadedDataset):
    """CIFAR-10: each sample is a uint8 image NDArray (32, 32, 3) and an int32 label.

    Parameters
    ----------
    root : str, default ``$MXNET_HOME/datasets/cifar10``
        The folder of ``data_batch_1.bin`` ... ``data_batch_5.bin`` and ``test_batch.bin``
        (records of a label byte and 3072 pixel bytes, channel-major).
    train : bool, default True
        The training or the test set.
    transform : callable, default None
        ``transform(data, label)`` gives each sample.
    download : bool, default False
        Fetch and unpack MXNet's archive when a file is missing or not the published one.
    """

    _label_bytes = 1

    def __init__(self, root=os.path.join(base.data_dir(), 'datasets', 'cifar10'),
                 train=True, transform=None, download=False):
        self._train = train
        self._archive_file = ('cifar-10-binary.tar.gz',
                              'fab780a1e191a7eda0f345501ccd62d20f7ed891')
        self._train_data = [('data_batch_1.bin', 'aadd24acce27caa71bf4b10992e9e7b2d74c2540'),
                            ('data_batch_2.bin', 'c0ba65cce70568cd57b4e03e9ac8d2a5367c1795'),
                            ('data_batch_3.bin', '1dd00a74ab1d17a6e7d73e185b69dbf31242f295'),
                            ('data_batch_4.bin', 'aab85764eb3584312d3c7f65fd2fd016e36a258e'),
                            ('data_batch_5.bin', '26e2849e66a845b7f1e4614ae70f4889ae604628')]
        self._test_data = [('test_batch.bin', '67eb016db431130d61cd03c7ad570b013799c88c')]
        self._namespace = 'cifar10'
        super(CIFAR10, self).__init__(root, transform, download)

    def _read_batch(self, filename):
        with open(filename, 'rb') as fin:
            raw = np.frombuffer(fin.read(), dtype=np.uint8)
        width = 3072 + self._label_bytes
        if raw.size % width:
            raise ValueError('%s: %d bytes is not a whole number of %d-byte CIFAR records'
                             % (filename, raw.size, width))
        raw = raw.reshape(-1, width)
        return (raw[:, self._label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1),
                raw[:, self._label_column()].astype(np.int32))

    def _label_column(self):
        return 0

    def _get_data(self):
        files = self._train_data if self._train else self._test_data
        paths = [os.path.join(self._root, name) for name, _ in files]
        stale = [(p, sha1) for p, (_, sha1) in zip(paths, files) if not os.path.exists(p)
                 or (self._download and not check_sha1(p, sha1))]
        if stale and not self._download:
            raise FileNotFoundError(
                '%s: %s missing in %s; pass download=True to fetch %s (SHA-1 checked), or '
                'unpack it there' % (type(self).__name__, ', '.join(os.path.basename(p) for
                                                                      p, _ in stale),
                                     self._root, self._archive_file[0]))
        if stale:
            archive = self._fetch(*self._archive_file)
            with tarfile.open(archive) as tar:
                if hasattr(tarfile, 'data_filter'):
                    tar.extractall(self._root, filter='data')
                else:   # Python before 3.10.12 / 3.11.4
                    tar.extractall(self._root)
        data, label = zip(*(self._read_batch(p) for p in paths))
        data = np.concatenate(data)
        self._data = nd.array(data, dtype=np.uint8)
        self._label = np.concatenate(label)


class CIFAR100(CIFAR10):
    """CIFAR-100: each sample is a uint8 image NDArray (32, 32, 3) and an int32 label, the
    coarse one (20 super-classes) or with ``fine_label=True`` the fine one (100 classes).
    ``root`` (default ``$MXNET_HOME/datasets/cifar100``) holds ``train.bin`` and
    ``test.bin``; the other parameters as :class:`CIFAR10`."""

    _label_bytes = 2

    def __init__(self, root=os.path.join(base.data_dir(), 'datasets', 'cifar100'),
                 fine_label=False, train=True, transform=None, download=False):
        self._train = train
        self._archive_file = ('cifar-100-binary.tar.gz',
                              'a0bb982c76b83111308126cc779a992fa506b90b')
        self._train_data = [('train.bin', 'e207cd2e05b73b1393c74c7f5e7bea451d63e08e')]
        self._test_data = [('test.bin', '8fb6623e830365ff53cf14adec797474f5478006')]
        self._fine_label = fine_label
        self._namespace = 'cifar100'
        _DownloadedDataset.__init__(self, root, transform, download)

    def _label_column(self):
        return 1 if self._fine_label else 0


def _imdecode(buf, flag):
    """``image.imdecode(buf, flag)``, with 8-bit colour JPEGs (``flag=1``) decoded straight
    into an array (``recordio._decode_jpeg_rgb``: the same pixels without the operator's
    and Pillow's Python-level costs, which dominate a small image's decoding)."""
    if flag == 1:
        rgb = recordio._decode_jpeg_rgb(buf)
        if rgb is not None:
            return nd.NDArray(rgb)
    return image.imdecode(buf, flag)


class ImageRecordDataset(RecordFileDataset):
    """Images packed in a RecordIO file (``.rec`` + ``.idx``, as im2rec writes them): each
    sample is the decoded image, a uint8 NDArray (H, W, 3) RGB (``flag=1``) or (H, W, 1)
    grey (``flag=0``), and the header's label (a float, or a float32 array for multi-label
    records).

    Parameters
    ----------
    filename : str
        Path to the ``.rec`` file.
    flag : {0, 1}, default 1
        0: decode to greyscale; 1: to colour (RGB).
    transform : callable, default None
        ``transform(data, label)`` gives each sample.
    """

    def __init__(self, filename, flag=1, transform=None):
        super(ImageRecordDataset, self).__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
        record = super(ImageRecordDataset, self).__getitem__(idx)
        header, img = recordio.unpack(record)
        img = _imdecode(img, self._flag)
        if self._transform is not None:
            return self._transform(img, header.label)
        return img, header.label


class ImageFolderDataset(dataset.Dataset):
    """Image files in one folder per class (``root/car/0001.jpg``, ``root/bus/123.png``):
    labels are the sorted folder names' positions.

    Parameters
    ----------
    root : str
        The folder of the class folders.
    flag : {0, 1}, default 1
        0: decode to greyscale (1 channel); 1: to colour (3 channels, RGB).
    transform : callable, default None
        ``transform(data, label)`` gives each sample.

    Attributes
    ----------
    synsets : list of str
        The class names; ``synsets[i]`` is the name of label ``i``.
    items : list of (str, int)
        (file name, label) of every image.
    """

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        self._exts = ['.jpg', '.jpeg', '.png']
        self._list_images(self._root)

    def _list_images(self, root):
        self.synsets = []
        self.items = []
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warnings.warn('Ignoring %s, which is not a directory.' % path, stacklevel=3)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                filename = os.path.join(path, filename)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn('Ignoring %s of type %s. Only support %s' % (
                        filename, ext, ', '.join(self._exts)), stacklevel=3)
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx):
        img = image.imread(self.items[idx][0], self._flag)
        label = self.items[idx][1]
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self):
        return len(self.items)


class ImageListDataset(dataset.Dataset):
    """Images named by a list: a ``.lst`` file (``index<TAB>label(s)<TAB>path`` lines, as
    im2rec writes them) or a Python list of ``[label(s)..., path]`` entries; each sample
    is the decoded image and its labels as a float32 NDArray.

    Parameters
    ----------
    root : str, default '.'
        The folder the paths (and a list file's name) are relative to.
    imglist : str or list
        The list file's name, or the list.
    flag : {0, 1}, default 1
        0: decode to greyscale; 1: to colour (RGB).
    """

    def __init__(self, root='.', imglist=None, flag=1):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._imglist = {}
        self._imgkeys = []
        if isinstance(imglist, str):
            fname = os.path.join(self._root, imglist)
            with open(fname, 'rt') as fin:
                for lineno, line in enumerate(fin, 1):
                    fields = line.strip().split('\t')
                    if fields == ['']:
                        continue
                    try:
                        key = int(fields[0])
                        label = [float(v) for v in fields[1:-1]]
                    except ValueError as err:
                        raise ValueError('%s, line %d: not an "index<TAB>label(s)<TAB>path" '
                                         'line (%s)' % (fname, lineno, err)) from None
                    if len(fields) < 3:
                        raise ValueError('%s, line %d: not an "index<TAB>label(s)<TAB>path" '
                                         'line' % (fname, lineno))
                    self._add(key, label, fields[-1])
        elif isinstance(imglist, list):
            for index, img in enumerate(imglist, 1):
                if not isinstance(img[-1], str):
                    raise TypeError('the last field of an image list entry is its path, got '
                                    '%r' % (img[-1],))
                label = img[:-1] if len(img) > 2 else img[0]
                self._add(str(index), np.ravel(np.asarray(label, dtype=np.float32)), img[-1])
        else:
            raise ValueError('imglist must be filename or list of valid entries, given {}'
                             .format(type(imglist)))

    def _add(self, key, label, path):
        self._imglist[key] = (nd.array(label, dtype=np.float32), os.path.join(self._root, path))
        self._imgkeys.append(key)

    def __getitem__(self, idx):
        key = self._imgkeys[idx]
        label, path = self._imglist[key]
        return image.imread(path, self._flag), label

    def __len__(self):
        return len(self._imgkeys)
