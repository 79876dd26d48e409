"""gluon.data.RecordFileDataset, gluon.data.vision's datasets (over tiny files written here
in MXNet's layouts, and the RecordIO files MXNet 1.9.1 wrote) and its transforms (against
NumPy references)."""
import gzip
import hashlib
import os
import pickle
import random
import shutil
import struct

import numpy as np
import pytest

import symgraph as mx
from symgraph.gluon.data import vision
from symgraph.gluon.data.vision import transforms

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden', 'data',
                      'recordio')


# ----------------------------------------------------------------------------- records
def test_record_file_dataset_reads_mxnet_file_and_pickles(tmp_path):
    for name in ('packed.rec', 'packed.idx'):
        shutil.copy(os.path.join(GOLDEN, name), tmp_path / name)
    ds = mx.gluon.data.RecordFileDataset(str(tmp_path / 'packed.rec'))
    assert len(ds) == 4
    assert [mx.recordio.unpack(ds[i])[1] for i in range(4)] == [b'payload', b'multi', b'',
                                                                b'\n#\xd7\xce' * 2]
    clone = pickle.loads(pickle.dumps(ds))
    assert clone[1] == ds[1] and len(clone) == 4
    assert list(ds.transform(lambda r: mx.recordio.unpack(r)[0].id)) == [7, 8, 2 ** 40 + 3, 10]


def test_image_record_dataset_mxnet_file(tmp_path):
    pytest.importorskip('PIL')
    for name in ('images.rec', 'images.idx'):
        shutil.copy(os.path.join(GOLDEN, name), tmp_path / name)
    want = np.load(os.path.join(GOLDEN, 'images_decoded.npz'))
    ds = vision.ImageRecordDataset(str(tmp_path / 'images.rec'))
    img, label = ds[0]
    assert isinstance(img, mx.nd.NDArray) and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy(), want['png'][..., ::-1])   # RGB
    assert label == 0.0
    gray, label = vision.ImageRecordDataset(str(tmp_path / 'images.rec'), flag=0)[2]
    np.testing.assert_array_equal(gray.asnumpy()[..., 0], want['gray'])
    assert label == 2.0
    ds = vision.ImageRecordDataset(str(tmp_path / 'images.rec'),
                                   transform=lambda d, l: (d.shape, l + 1))
    assert ds[1] == ((7, 5, 3), 2.0)


def _png(path, arr):
    from PIL import Image
    Image.fromarray(arr).save(path)


def test_image_folder_dataset(tmp_path):
    pytest.importorskip('PIL')
    rng = np.random.RandomState(0)
    imgs = {}
    for cls in ('cat', 'ant'):
        os.makedirs(tmp_path / cls)
        for i in range(2):
            arr = rng.randint(0, 256, (4, 3, 3)).astype(np.uint8)
            _png(str(tmp_path / cls / ('%d.png' % i)), arr)
            imgs[(cls, i)] = arr
    (tmp_path / 'cat' / 'notes.txt').write_text('x')
    (tmp_path / 'readme.md').write_text('x')
    with pytest.warns(UserWarning) as record:
        ds = vision.ImageFolderDataset(str(tmp_path))
    messages = ' '.join(str(w.message) for w in record)
    assert 'readme.md, which is not a directory' in messages
    assert 'notes.txt of type .txt' in messages
    assert ds.synsets == ['ant', 'cat']
    assert [os.path.basename(f) for f, _ in ds.items] == ['0.png', '1.png'] * 2
    assert [label for _, label in ds.items] == [0, 0, 1, 1]
    img, label = ds[3]
    np.testing.assert_array_equal(img.asnumpy(), imgs[('cat', 1)])
    assert label == 1
    with pytest.warns(UserWarning):
        gray = vision.ImageFolderDataset(str(tmp_path), flag=0,
                                         transform=lambda d, l: (d.shape, l))
    assert gray[0] == ((4, 3, 1), 0) and len(gray) == 4


def test_image_list_dataset(tmp_path):
    pytest.importorskip('PIL')
    arr = np.arange(36, dtype=np.uint8).reshape(3, 4, 3)
    os.makedirs(tmp_path / 'a')
    _png(str(tmp_path / 'a' / 'x.png'), arr)
    (tmp_path / 'l.lst').write_text('5\t1.0\t2.5\ta/x.png\n\n7\t3\ta/x.png\n')
    ds = vision.ImageListDataset(str(tmp_path), 'l.lst')
    assert len(ds) == 2
    img, label = ds[0]
    np.testing.assert_array_equal(img.asnumpy(), arr)
    assert label.asnumpy().tolist() == [1.0, 2.5]
    ds = vision.ImageListDataset(str(tmp_path), [[4, 'a/x.png'], [1, 2, 'a/x.png']], flag=0)
    assert ds[0][1].asnumpy().tolist() == [4.0] and ds[1][1].asnumpy().tolist() == [1, 2]
    assert ds[1][0].shape == (3, 4, 1)
    (tmp_path / 'bad.lst').write_text('x\t1\ta/x.png\n')
    with pytest.raises(ValueError, match='bad.lst, line 1'):
        vision.ImageListDataset(str(tmp_path), 'bad.lst')
    with pytest.raises(ValueError, match='imglist must be filename or list'):
        vision.ImageListDataset(str(tmp_path), None)


# ----------------------------------------------------------------------------- MNIST, CIFAR
def _write_idx(path, arr, magic):
    with gzip.open(path, 'wb') as f:
        f.write(struct.pack('>I', magic) + struct.pack('>' + 'I' * arr.ndim, *arr.shape))
        f.write(arr.astype(np.uint8).tobytes())


def _mnist_files(root, n=5, seed=0, prefix='train'):
    rng = np.random.RandomState(seed)
    images = rng.randint(0, 256, (n, 28, 28)).astype(np.uint8)
    labels = rng.randint(0, 10, n).astype(np.uint8)
    os.makedirs(root, exist_ok=True)
    _write_idx(os.path.join(root, '%s-images-idx3-ubyte.gz' % prefix), images, 2051)
    _write_idx(os.path.join(root, '%s-labels-idx1-ubyte.gz' % prefix), labels, 2049)
    return images, labels


@pytest.mark.parametrize('cls', [vision.MNIST, vision.FashionMNIST])
def test_mnist_layout(tmp_path, cls):
    images, labels = _mnist_files(str(tmp_path))
    test_images, test_labels = _mnist_files(str(tmp_path), 3, seed=1, prefix='t10k')
    ds = cls(root=str(tmp_path))
    assert len(ds) == 5
    img, label = ds[2]
    assert img.shape == (28, 28, 1) and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy()[..., 0], images[2])
    assert label == labels[2] and label.dtype == np.int32
    test = cls(root=str(tmp_path), train=False,
               transform=lambda d, l: (d.astype('float32') / 255, l))
    assert len(test) == 3
    np.testing.assert_allclose(test[0][0].asnumpy()[..., 0], test_images[0] / 255., rtol=1e-6)


def test_mnist_missing_and_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match='download=True'):
        vision.MNIST(root=str(tmp_path))
    assert not os.listdir(str(tmp_path))       # nothing fetched, nothing written
    _mnist_files(str(tmp_path))
    _write_idx(str(tmp_path / 'train-labels-idx1-ubyte.gz'), np.zeros(5), 2051)
    with pytest.raises(ValueError, match='magic number 2049'):
        vision.MNIST(root=str(tmp_path))
    _write_idx(str(tmp_path / 'train-labels-idx1-ubyte.gz'), np.zeros(4), 2049)
    with pytest.raises(ValueError, match='5 images but .* 4 labels'):
        vision.MNIST(root=str(tmp_path))


def _sha1(path):
    with open(path, 'rb') as f:
        return hashlib.sha1(f.read()).hexdigest()


def test_download_only_when_asked_with_sha1(tmp_path, monkeypatch, capsys):
    repo = tmp_path / 'repo'
    images, labels = _mnist_files(str(repo / 'gluon' / 'dataset' / 'mnist'))
    monkeypatch.setenv('MXNET_GLUON_REPO', repo.as_uri() + '/')
    root = tmp_path / 'root'
    with pytest.raises(mx.gluon.utils.DownloadError, match='hash does not match'):
        vision.MNIST(root=str(root), download=True)     # not the published files

    class Tiny(vision.MNIST):
        def _get_data(self):
            src = os.path.join(str(repo), 'gluon', 'dataset', 'mnist')
            self._train_data = (self._train_data[0],
                                _sha1(os.path.join(src, self._train_data[0])))
            self._train_label = (self._train_label[0],
                                 _sha1(os.path.join(src, self._train_label[0])))
            super(Tiny, self)._get_data()

    ds = Tiny(root=str(root), download=True)
    np.testing.assert_array_equal(ds[4][0].asnumpy()[..., 0], images[4])
    assert 'Downloading' in capsys.readouterr().out


def _cifar_file(path, n, label_bytes, seed):
    rng = np.random.RandomState(seed)
    raw = rng.randint(0, 256, (n, 3072 + label_bytes)).astype(np.uint8)
    raw[:, :label_bytes] %= 20
    raw.tofile(path)
    return raw


def test_cifar10_layout(tmp_path):
    raws = [_cifar_file(str(tmp_path / ('data_batch_%d.bin' % i)), 2, 1, i)
            for i in range(1, 6)]
    test = _cifar_file(str(tmp_path / 'test_batch.bin'), 3, 1, 9)
    ds = vision.CIFAR10(root=str(tmp_path))
    assert len(ds) == 10
    img, label = ds[3]                     # batch 2, second record
    assert img.shape == (32, 32, 3) and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy(),
                                  raws[1][1, 1:].reshape(3, 32, 32).transpose(1, 2, 0))
    assert label == raws[1][1, 0] and label.dtype == np.int32
    ds = vision.CIFAR10(root=str(tmp_path), train=False)
    assert len(ds) == 3 and ds[2][1] == test[2, 0]
    os.remove(str(tmp_path / 'data_batch_4.bin'))
    with pytest.raises(FileNotFoundError, match='data_batch_4.bin missing'):
        vision.CIFAR10(root=str(tmp_path))
    with open(str(tmp_path / 'test_batch.bin'), 'ab') as f:
        f.write(b'xx')
    with pytest.raises(ValueError, match='whole number of 3073-byte'):
        vision.CIFAR10(root=str(tmp_path), train=False)


def test_cifar100_labels(tmp_path):
    raw = _cifar_file(str(tmp_path / 'train.bin'), 4, 2, 0)
    coarse = vision.CIFAR100(root=str(tmp_path))
    fine = vision.CIFAR100(root=str(tmp_path), fine_label=True)
    assert [int(coarse[i][1]) for i in range(4)] == raw[:, 0].tolist()
    assert [int(fine[i][1]) for i in range(4)] == raw[:, 1].tolist()
    np.testing.assert_array_equal(fine[0][0].asnumpy(),
                                  raw[0, 2:].reshape(3, 32, 32).transpose(1, 2, 0))


# ----------------------------------------------------------------------------- transforms
def _image(h=6, w=8, seed=0):
    return np.random.RandomState(seed).randint(0, 256, (h, w, 3)).astype(np.uint8)


def test_to_tensor_normalize_cast():
    img = _image()
    out = transforms.ToTensor()(mx.nd.array(img, dtype=np.uint8))
    np.testing.assert_allclose(out.asnumpy(), img.transpose(2, 0, 1) / 255., rtol=1e-6)
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    norm = transforms.Normalize(mean, std)(out).asnumpy()
    want = (img.transpose(2, 0, 1) / 255. - np.reshape(mean, (3, 1, 1))) / np.reshape(
        std, (3, 1, 1))
    np.testing.assert_allclose(norm, want, rtol=1e-5, atol=1e-6)
    assert transforms.Cast('float16')(mx.nd.array(img)).dtype == np.float16


def test_resize_and_crops():
    img = _image(6, 8)
    x = mx.nd.array(img, dtype=np.uint8)
    assert transforms.Resize((4, 3), interpolation=0)(x).shape == (3, 4, 3)
    assert transforms.Resize(3, keep_ratio=True)(x).shape == (3, 4, 3)
    np.testing.assert_array_equal(transforms.CenterCrop((4, 2))(x).asnumpy(), img[2:4, 2:6])
    np.testing.assert_array_equal(transforms.CenterCrop(5)(x).asnumpy(), img[0:5, 1:6])
    # larger than the image: the centred crop of the aspect ratio, resized up
    big = transforms.CenterCrop((16, 6), interpolation=0)(x).asnumpy()
    assert big.shape == (6, 16, 3)
    np.testing.assert_array_equal(big[:, ::2], img[1:4].repeat(2, axis=0))
    np.testing.assert_array_equal(transforms.CropResize(1, 2, 3, 2)(x).asnumpy(),
                                  img[2:4, 1:4])
    assert transforms.CropResize(1, 2, 3, 2, size=(5, 4))(x).shape == (4, 5, 3)


def test_random_resized_crop():
    img = _image(6, 8)
    x = mx.nd.array(img, dtype=np.uint8)
    # the whole image at its own aspect ratio: the identity
    whole = transforms.RandomResizedCrop((8, 6), scale=(1, 1), ratio=(8 / 6., 8 / 6.))
    np.testing.assert_array_equal(whole(x).asnumpy(), img)
    random.seed(3)
    crop = transforms.RandomResizedCrop((4, 4), scale=(0.2, 0.5), ratio=(1, 1),
                                        interpolation=0)
    seen = set()
    for _ in range(20):
        out = crop(x).asnumpy()
        assert out.shape == (4, 4, 3)
        # nearest resizing: every output pixel is an input pixel
        assert set(map(tuple, out.reshape(-1, 3))) <= set(map(tuple, img.reshape(-1, 3)))
        seen.add(out.tobytes())
    assert len(seen) > 5
    # no crop fits (area > 1): the centre crop
    fallback = transforms.RandomResizedCrop((4, 2), scale=(4, 4), ratio=(2, 2))
    np.testing.assert_array_equal(fallback(x).asnumpy(), img[2:4, 2:6])


def test_random_flips_and_colour():
    mx.random.seed(0)
    img = _image(4, 5)
    x = mx.nd.array(img, dtype=np.uint8)
    outs = {transforms.RandomFlipLeftRight()(x).asnumpy().tobytes() for _ in range(30)}
    assert outs == {img.tobytes(), img[:, ::-1].tobytes()}
    outs = {transforms.RandomFlipTopBottom()(x).asnumpy().tobytes() for _ in range(30)}
    assert outs == {img.tobytes(), img[::-1].tobytes()}
    t = x.astype('float32') / 255     # the colour operators take (H, W, C) images
    for _ in range(10):
        ratio = transforms.RandomBrightness(0.3)(t).asnumpy() / np.maximum(t.asnumpy(), 1e-6)
        r = ratio[t.asnumpy() > 0.1]
        assert 0.7 - 1e-5 <= r.min() and r.max() <= 1.3 + 1e-5
        np.testing.assert_allclose(r, r[0], rtol=1e-4)     # one factor for the image
    for cls in (transforms.RandomContrast, transforms.RandomSaturation,
                transforms.RandomHue):
        assert cls(0.2)(t).shape == (4, 5, 3)
        np.testing.assert_allclose(cls(0)(t).asnumpy(), t.asnumpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(transforms.RandomColorJitter()(t).asnumpy(), t.asnumpy(),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(transforms.RandomLighting(0)(t).asnumpy(), t.asnumpy(),
                               rtol=1e-6)
    assert not np.allclose(transforms.RandomLighting(0.5)(t).asnumpy(), t.asnumpy())


def test_compose_groups_hybrid_runs():
    t = transforms.Compose([transforms.Resize(4), transforms.CenterCrop(3),
                            transforms.ToTensor(), transforms.Normalize(0.5, 0.5),
                            transforms.Cast('float64')])
    kinds = [type(b).__name__ for b in t._children.values()]
    assert kinds == ['Resize', 'CenterCrop', 'HybridSequential']
    img = _image(6, 8)
    out = t(mx.nd.array(img, dtype=np.uint8))
    assert out.shape == (3, 3, 3) and out.dtype == np.float64
    resized = transforms.Resize(4)(mx.nd.array(img, dtype=np.uint8)).asnumpy()
    want = (resized[0:3, 0:3].transpose(2, 0, 1) / 255. - 0.5) / 0.5
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_random_apply():
    x = mx.nd.array(_image(), dtype=np.uint8)
    flip = transforms.RandomApply(transforms.Cast('float32'), p=0)
    assert flip(x).dtype == np.uint8
    assert transforms.RandomApply(transforms.Cast('float32'), p=1)(x).dtype == np.float32


def test_dataloader_over_image_records(tmp_path):
    pytest.importorskip('PIL')
    for name in ('images.rec', 'images.idx'):
        shutil.copy(os.path.join(GOLDEN, name), tmp_path / name)
    ds = vision.ImageRecordDataset(str(tmp_path / 'images.rec')).transform_first(
        transforms.ToTensor())
    batches = list(mx.gluon.data.DataLoader(ds, batch_size=3))
    assert len(batches) == 1
    data, label = batches[0]
    assert data.shape == (3, 3, 7, 5)
    assert label.asnumpy().tolist() == [0, 1, 2]


def test_transforms_equal_mxnet():
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                                    'golden'))
    import vision_transform_probes as probes
    want = np.load(os.path.join(GOLDEN, '..', 'vision_transforms.npz'))
    ins = probes.inputs(mx)
    for name, (cls, args, kwargs, kind) in probes.CASES.items():
        got = getattr(transforms, cls)(*args, **kwargs)(ins[kind]).asnumpy()
        assert got.shape == want[name].shape, name
        # uint8 bilinear upscaling (mx.image.imresize) rounds a few pixels one level apart
        # from MXNet's OpenCV (8 of 144 in center_crop_up); the rest is exact
        atol = 1 if name == 'center_crop_up' else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), want[name], rtol=1e-5, atol=atol,
                                   err_msg=name)


def test_rotate_errors_and_batches():
    with pytest.raises(TypeError, match='float32'):
        transforms.Rotate(10.)(mx.nd.ones((3, 4, 5), dtype='uint8'))
    with pytest.raises(ValueError, match='both True'):
        transforms.Rotate(10., zoom_in=True, zoom_out=True)(mx.nd.ones((3, 4, 5)))
    with pytest.raises(ValueError, match='ordered'):
        transforms.RandomRotation((5, 5))
    with pytest.raises(ValueError, match='between 0 and 1'):
        transforms.RandomRotation((-5, 5), rotate_with_proba=1.5)
    batch = mx.nd.array(np.random.RandomState(0).rand(2, 3, 5, 6).astype(np.float32))
    np.random.seed(1)
    out = transforms.RandomRotation((-40, 40))(batch).asnumpy()
    np.random.seed(1)
    np.random.random()          # RandomRotation first draws whether to rotate
    angles = np.random.uniform(-40, 40, size=2)
    for i in range(2):
        np.testing.assert_allclose(out[i], transforms.Rotate(angles[i])(batch[i]).asnumpy(),
                                   rtol=1e-5, atol=1e-6)
    same = transforms.RandomRotation((-90, 90), rotate_with_proba=0)(batch)
    assert same is batch


@pytest.mark.parametrize('method', ['fork', 'spawn'])
def test_worker_processes_read_records(tmp_path, method):
    # the record file is reopened in each worker (forked: its pid differs; spawned: pickled)
    pytest.importorskip('PIL')
    import multiprocessing
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip('no %s start method' % method)
    for name in ('images.rec', 'images.idx'):
        shutil.copy(os.path.join(GOLDEN, name), tmp_path / name)
    ds = vision.ImageRecordDataset(str(tmp_path / 'images.rec'))
    ds[2]                          # the parent has read: its file offset must not leak
    loader = mx.gluon.data.DataLoader(ds, batch_size=1, num_workers=2,
                                      multiprocessing_context=method)
    try:
        labels = [float(label.asscalar()) for _, label in loader]
        shapes = [data.shape for data, _ in loader]
    finally:
        loader.close()
    assert labels == [0.0, 1.0, 2.0]
    assert shapes == [(1, 7, 5, 3)] * 3
    assert ds[0][1] == 0.0


def test_image_record_dataset_multi_label_from_mxnet_im2rec():
    # im2rec --pack-label records (MXNet 1.9.1 made them): the label is a float32 array
    pytest.importorskip('PIL')
    ds = vision.ImageRecordDataset(os.path.join(GOLDEN, '..', 'im2rec', 'multi.rec'))
    assert len(ds) == 9
    img, label = ds[0]                      # cat/1.png, index 4
    assert label.dtype == np.float32 and label.tolist() == [1.0, 2.0, -1.0]
    from PIL import Image
    with Image.open(os.path.join(GOLDEN, '..', 'im2rec', 'images', 'cat', '1.png')) as im:
        np.testing.assert_array_equal(img.asnumpy(), np.asarray(im.convert('RGB')))
