"""mx.test_utils' dataset downloads (get_mnist, get_mnist_ubyte, get_cifar10, download) on
small fake archives served through file:// URLs ($MXNET_GLUON_REPO) into a temporary
$MXNET_HOME: never the network."""
import gzip
import hashlib
import io
import os
import struct
import tarfile
import urllib.error

import numpy as np
import pytest

import symgraph as mx
from symgraph import test_utils as _datasets


def _sha1(path):
    with open(path, 'rb') as f:
        return hashlib.sha1(f.read()).hexdigest()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A fake Gluon repository and an empty MXNet home; returns (repo_dir, home_dir)."""
    repo_dir, home = tmp_path / 'repo', tmp_path / 'home'
    repo_dir.mkdir()
    monkeypatch.setenv('MXNET_GLUON_REPO', repo_dir.as_uri())       # no trailing slash
    monkeypatch.setenv('MXNET_HOME', str(home))
    monkeypatch.setattr(_datasets, '_SHA1', dict(_datasets._SHA1))
    return repo_dir, home


def _publish(repo_dir, namespace, name, content):
    d = repo_dir / 'gluon' / 'dataset' / namespace
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(content)
    _datasets._SHA1['%s/%s' % (namespace, name)] = _sha1(d / name)
    return d / name


def _idx(images=None, labels=None):
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode='wb') as f:
        if labels is not None:
            f.write(struct.pack('>II', 2049, len(labels)) + labels.astype(np.uint8).tobytes())
        else:
            n, r, c = images.shape
            f.write(struct.pack('>IIII', 2051, n, r, c) + images.astype(np.uint8).tobytes())
    return buf.getvalue()


@pytest.fixture
def fake_mnist(repo):
    repo_dir, home = repo
    rs = np.random.RandomState(0)
    data = {}
    for split, n in (('train', 5), ('t10k', 3)):
        img = rs.randint(0, 256, size=(n, 28, 28))
        lab = rs.randint(0, 10, size=n)
        _publish(repo_dir, 'mnist', '%s-images-idx3-ubyte.gz' % split, _idx(images=img))
        _publish(repo_dir, 'mnist', '%s-labels-idx1-ubyte.gz' % split, _idx(labels=lab))
        data[split] = (img, lab)
    return repo_dir, home, data


def test_get_mnist_downloads_checks_and_reads_into_mxnets_layout(fake_mnist):
    repo_dir, home, data = fake_mnist
    d = mx.test_utils.get_mnist()
    assert d['train_data'].shape == (5, 1, 28, 28) and d['train_data'].dtype == np.float32
    assert d['test_data'].shape == (3, 1, 28, 28)
    assert d['train_label'].dtype == np.int8                       # as MXNet's
    np.testing.assert_array_equal(d['train_label'], data['train'][1])
    np.testing.assert_allclose(d['test_data'][:, 0], data['t10k'][0] / np.float32(255),
                               rtol=1e-7)
    cached = sorted(os.listdir(home / 'datasets' / 'mnist'))
    assert cached == ['t10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz',
                      'train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz']
    # cached: a second call works without the repository
    for f in (repo_dir / 'gluon' / 'dataset' / 'mnist').iterdir():
        f.unlink()
    np.testing.assert_array_equal(mx.test_utils.get_mnist()['train_label'], data['train'][1])


def test_a_corrupt_cached_file_is_downloaded_again(fake_mnist):
    repo_dir, home, data = fake_mnist
    mx.test_utils.get_mnist()
    cached = home / 'datasets' / 'mnist' / 'train-labels-idx1-ubyte.gz'
    cached.write_bytes(b'truncated')
    np.testing.assert_array_equal(mx.test_utils.get_mnist()['train_label'], data['train'][1])
    assert _sha1(cached) == _datasets._SHA1['mnist/train-labels-idx1-ubyte.gz']


def test_a_wrong_checksum_fails_after_the_retries_and_leaves_no_file(fake_mnist, capsys):
    repo_dir, home, _ = fake_mnist
    _datasets._SHA1['mnist/train-labels-idx1-ubyte.gz'] = '0' * 40
    with pytest.raises(ValueError, match=r'train-labels-idx1-ubyte.gz .* wrong content: SHA-1 '
                                         r'is not 0{40}'):
        mx.test_utils.get_mnist()
    assert 'download failed, retrying, 4 attempts left' in capsys.readouterr().out
    left = os.listdir(home / 'datasets' / 'mnist')
    assert 'train-labels-idx1-ubyte.gz' not in left
    assert not [f for f in left if f.startswith('.download-')]


def test_get_mnist_ubyte_writes_the_idx_files_into_data(fake_mnist, tmp_path, monkeypatch):
    work = tmp_path / 'work'
    work.mkdir()
    monkeypatch.chdir(work)
    mx.test_utils.get_mnist_ubyte()
    assert sorted(os.listdir(work / 'data')) == [
        't10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte', 'train-images-idx3-ubyte',
        'train-labels-idx1-ubyte']
    raw = (work / 'data' / 'train-labels-idx1-ubyte').read_bytes()
    assert struct.unpack('>II', raw[:8]) == (2049, 5)
    np.testing.assert_array_equal(np.frombuffer(raw[8:], np.uint8), fake_mnist[2]['train'][1])


def test_get_mnist_iterator_reads_the_idx_files_as_mxnet(fake_mnist, tmp_path, monkeypatch):
    work = tmp_path / 'work'
    work.mkdir()
    monkeypatch.chdir(work)
    train, val = mx.test_utils.get_mnist_iterator(batch_size=2, input_shape=(1, 28, 28))
    assert isinstance(train, mx.io.MXDataIter)
    assert train.provide_data[0].shape == (2, 1, 28, 28)
    batch = next(iter(val))          # MNISTIter shuffles by default (MXNet's too): match pairs
    imgs, labs = fake_mnist[2]['t10k']
    for img, lab in zip(batch.data[0].asnumpy()[:, 0], batch.label[0].asnumpy()):
        k = [i for i in range(len(imgs)) if np.allclose(img, imgs[i] / np.float32(256))]
        assert len(k) == 1 and labs[k[0]] == lab
    flat, _ = mx.test_utils.get_mnist_iterator(batch_size=3, input_shape=(784,))
    assert flat.provide_data[0].shape == (3, 784)


def _cifar_tar(rs, prefix=''):
    buf, batches = io.BytesIO(), {}
    with tarfile.open(fileobj=buf, mode='w:gz') as tar:
        for name, n in [('data_batch_%d.bin' % i, 2) for i in range(1, 6)] + \
                [('test_batch.bin', 3)]:
            rec = rs.randint(0, 256, size=(n, 3073)).astype(np.uint8)
            rec[:, 0] %= 10
            batches[name] = rec
            info = tarfile.TarInfo(prefix + name)
            info.size = rec.nbytes
            tar.addfile(info, io.BytesIO(rec.tobytes()))
    return buf.getvalue(), batches


@pytest.mark.parametrize('prefix', ['', 'cifar-10-batches-bin/'])
def test_get_cifar10_downloads_unpacks_and_reads(repo, prefix):
    repo_dir, home = repo
    content, batches = _cifar_tar(np.random.RandomState(1), prefix)
    _publish(repo_dir, 'cifar10', 'cifar-10-binary.tar.gz', content)
    d = mx.test_utils.get_cifar10()
    assert d['train_data'].shape == (10, 3, 32, 32) and d['train_data'].dtype == np.float32
    assert d['test_data'].shape == (3, 3, 32, 32) and d['test_label'].dtype == np.int32
    train = np.concatenate([batches['data_batch_%d.bin' % i] for i in range(1, 6)])
    np.testing.assert_array_equal(d['train_label'], train[:, 0])
    np.testing.assert_allclose(d['train_data'].reshape(10, -1) * 255, train[:, 1:],
                               rtol=1e-6)
    np.testing.assert_array_equal(d['test_label'], batches['test_batch.bin'][:, 0])
    assert os.path.exists(home / 'datasets' / 'cifar10' / 'cifar-10-binary.tar.gz')


def test_get_cifar10_names_what_the_archive_lacks(repo):
    repo_dir, _ = repo
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w:gz') as tar:
        info = tarfile.TarInfo('readme.txt')
        info.size = 2
        tar.addfile(info, io.BytesIO(b'hi'))
    _publish(repo_dir, 'cifar10', 'cifar-10-binary.tar.gz', buf.getvalue())
    with pytest.raises(FileNotFoundError, match=r"lacks \['data_batch_1.bin'"):
        mx.test_utils.get_cifar10()


def test_download_names_the_url_that_fails(tmp_path, capsys):
    url = (tmp_path / 'missing.bin').as_uri()
    with pytest.raises(urllib.error.URLError):
        mx.test_utils.download(url, dirname=str(tmp_path / 'out'), retries=2)
    assert 'download failed, retrying, 1 attempt left' in capsys.readouterr().out
    with pytest.raises(ValueError, match='retries'):
        mx.test_utils.download(url, retries=-1)


def test_download_skips_an_existing_file_unless_told(tmp_path):
    src = tmp_path / 'src.txt'
    src.write_text('one')
    out = tmp_path / 'out'
    fname = mx.test_utils.download(src.as_uri(), dirname=str(out))
    assert fname == str(out / 'src.txt') and (out / 'src.txt').read_text() == 'one'
    src.write_text('two')
    mx.test_utils.download(src.as_uri(), dirname=str(out))
    assert (out / 'src.txt').read_text() == 'one'
    mx.test_utils.download(src.as_uri(), dirname=str(out), overwrite=True)
    assert (out / 'src.txt').read_text() == 'two'
