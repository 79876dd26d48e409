"""gluon.utils: splitting batches over contexts, clip_global_norm against NumPy, SHA-1
checks, download (file:// and a local HTTP server on 127.0.0.1: retries, hashes, atomic
rename, existing files), the repository URLs and the small helpers."""
import collections
import contextlib
import hashlib
import http.server
import os
import threading

import numpy as np
import pytest

import symgraph as mx
from symgraph.gluon import utils
from symgraph.gluon.utils import DownloadError


# ----------------------------------------------------------------------------- splitting
def test_split_data_even_and_uneven():
    x = mx.nd.array(np.arange(24).reshape(6, 4))
    parts = utils.split_data(x, 3)
    assert [p.shape for p in parts] == [(2, 4)] * 3
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts]), x.asnumpy())
    parts = utils.split_data(x, 4, even_split=False)
    assert [p.shape[0] for p in parts] == [2, 2, 1, 1]
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts]), x.asnumpy())
    assert len(utils.split_data(x, 1)) == 1


def test_split_data_along_another_axis():
    x = mx.nd.array(np.arange(30).reshape(2, 5, 3))
    parts = utils.split_data(x, 2, batch_axis=1, even_split=False)
    assert [p.shape for p in parts] == [(2, 3, 3), (2, 2, 3)]
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts], axis=1),
                                  x.asnumpy())
    parts = utils.split_data(x, 3, batch_axis=-1)
    np.testing.assert_array_equal(parts[2].asnumpy(), x.asnumpy()[:, :, 2:])


def test_split_data_errors():
    x = mx.nd.ones((5, 2))
    with pytest.raises(ValueError, match='cannot be evenly split into 2 slices'):
        utils.split_data(x, 2)
    with pytest.raises(ValueError, match='non-empty slices'):
        utils.split_data(x, 6, even_split=False)
    with pytest.raises(ValueError, match='num_slice'):
        utils.split_data(x, 0)
    with pytest.raises(ValueError, match='batch_axis 2 is out of range'):
        utils.split_data(x, 1, batch_axis=2)
    with pytest.raises(TypeError, match='splits an NDArray'):
        utils.split_data(np.ones((4, 2)), 2)


def test_split_and_load():
    ctxs = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    data = np.arange(12, dtype=np.float32).reshape(6, 2)
    parts = utils.split_and_load(data, ctxs)
    assert [p.context for p in parts] == ctxs
    np.testing.assert_array_equal(parts[1].asnumpy(), data[2:4])
    one = utils.split_and_load(mx.nd.array(data), [mx.cpu(1)])
    assert len(one) == 1 and one[0].context == mx.cpu(1) and one[0].shape == (6, 2)
    with pytest.raises(TypeError, match='ctx_list'):
        utils.split_and_load(data, mx.cpu())


# ----------------------------------------------------------------------------- clipping
def test_clip_global_norm_scales_all_arrays_together():
    rng = np.random.RandomState(0)
    values = [rng.normal(size=s).astype(np.float32) for s in ((3, 4), (5,), (2, 2, 2))]
    arrays = [mx.nd.array(v, ctx=mx.cpu(i)) for i, v in enumerate(values)]
    norm = np.sqrt(sum((v.astype(np.float64) ** 2).sum() for v in values))
    got = utils.clip_global_norm(arrays, 1.0)
    assert isinstance(got, (float, np.floating))
    np.testing.assert_allclose(got, norm, rtol=1e-5)
    for a, v, i in zip(arrays, values, range(3)):
        assert a.context == mx.cpu(i)
        np.testing.assert_allclose(a.asnumpy(), v / (norm + 1e-8), rtol=1e-5, atol=1e-7)
    after = np.sqrt(sum((a.asnumpy().astype(np.float64) ** 2).sum() for a in arrays))
    np.testing.assert_allclose(after, 1.0, rtol=1e-5)


def test_clip_global_norm_leaves_small_norms_alone():
    arrays = [mx.nd.array([0.3, 0.4])]
    total = utils.clip_global_norm(arrays, 1.0, check_isfinite=False)
    assert isinstance(total, mx.nd.NDArray) and total.shape == (1,)
    np.testing.assert_allclose(total.asnumpy(), [0.5], rtol=1e-6)
    np.testing.assert_allclose(arrays[0].asnumpy(), [0.3, 0.4], rtol=1e-6)


def test_clip_global_norm_warns_on_a_non_finite_norm():
    arrays = [mx.nd.array([1.0, np.inf]), mx.nd.array([2.0])]
    with pytest.warns(UserWarning, match='nan or inf is detected'):
        total = utils.clip_global_norm(arrays, 1.0)
    assert np.isinf(total)
    with pytest.raises(ValueError, match='non-empty list'):
        utils.clip_global_norm([], 1.0)
    with pytest.raises(TypeError, match='clips NDArrays'):
        utils.clip_global_norm([np.ones(2)], 1.0)


# ----------------------------------------------------------------------------- files
def _sha1(data):
    return hashlib.sha1(data).hexdigest()


def test_check_sha1(tmp_path):
    path = tmp_path / 'f.bin'
    path.write_bytes(b'x' * 3000000)        # more than one read chunk
    assert utils.check_sha1(str(path), _sha1(b'x' * 3000000))
    assert not utils.check_sha1(str(path), _sha1(b'y'))
    with pytest.raises(FileNotFoundError):
        utils.check_sha1(str(tmp_path / 'missing'), 'abc')


def test_download_a_file_url(tmp_path, capsys):
    src = tmp_path / 'src' / 'data.txt'
    src.parent.mkdir()
    src.write_bytes(b'hello gluon\n')
    url = src.as_uri()
    out_dir = tmp_path / 'out'
    out_dir.mkdir()
    # a directory as path: the URL's file name inside it
    got = utils.download(url, path=str(out_dir), sha1_hash=_sha1(b'hello gluon\n'))
    assert got == str(out_dir / 'data.txt')
    assert (out_dir / 'data.txt').read_bytes() == b'hello gluon\n'
    assert os.listdir(str(out_dir)) == ['data.txt']          # no temporary file left
    # a new directory is made for a file path
    nested = tmp_path / 'a' / 'b' / 'copy.txt'
    assert utils.download(url, path=str(nested)) == str(nested)
    assert nested.read_bytes() == b'hello gluon\n'
    assert 'Downloading' in capsys.readouterr().out


def test_download_keeps_a_good_existing_file_and_replaces_a_bad_one(tmp_path):
    src = tmp_path / 'new.txt'
    src.write_bytes(b'new content')
    dst = tmp_path / 'dst.txt'
    dst.write_bytes(b'old content')
    utils.download(src.as_uri(), path=str(dst))
    assert dst.read_bytes() == b'old content'           # exists, no hash: kept
    utils.download(src.as_uri(), path=str(dst), sha1_hash=_sha1(b'old content'))
    assert dst.read_bytes() == b'old content'           # the right hash: kept
    utils.download(src.as_uri(), path=str(dst), sha1_hash=_sha1(b'new content'))
    assert dst.read_bytes() == b'new content'           # wrong hash: downloaded again
    src.write_bytes(b'newer')
    utils.download(src.as_uri(), path=str(dst), overwrite=True)
    assert dst.read_bytes() == b'newer'


class _Server:
    """A local HTTP server answering from ``routes`` {path: [status or bytes, ...]}: each
    request of a path takes the next answer (the last one repeats)."""

    def __init__(self, routes):
        self.routes = routes
        self.hits = {}
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.hits[self.path] = server.hits.get(self.path, 0) + 1
                answers = server.routes.get(self.path, [404])
                answer = answers[min(server.hits[self.path], len(answers)) - 1]
                if isinstance(answer, int):
                    self.send_error(answer)
                    return
                self.send_response(200)
                self.send_header('Content-Length', str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path):
        return 'http://127.0.0.1:%d%s' % (self.httpd.server_address[1], path)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@contextlib.contextmanager
def _no_proxy(monkeypatch):
    for var in ('http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'all_proxy',
                'ALL_PROXY'):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv('NO_PROXY', '127.0.0.1')
    yield


def test_download_over_http_retries_until_it_succeeds(tmp_path, monkeypatch, capsys):
    body = b'weights' * 1000
    with _no_proxy(monkeypatch), _Server({'/m.params': [500, 503, body]}) as srv:
        got = utils.download(srv.url('/m.params'), path=str(tmp_path), retries=3,
                             sha1_hash=_sha1(body))
        assert srv.hits['/m.params'] == 3
    with open(got, 'rb') as f:
        assert f.read() == body
    assert os.listdir(str(tmp_path)) == ['m.params']
    out = capsys.readouterr().out
    assert 'retrying, 2 attempts left' in out and 'retrying, 1 attempt left' in out


def test_download_gives_up_after_retries(tmp_path, monkeypatch):
    with _no_proxy(monkeypatch), _Server({'/gone': [404]}) as srv:
        with pytest.raises(OSError, match='Failed downloading url .*404'):
            utils.download(srv.url('/gone'), path=str(tmp_path), retries=2)
        assert srv.hits['/gone'] == 2
        # retries=0 still makes one attempt
        with pytest.raises(OSError):
            utils.download(srv.url('/gone'), path=str(tmp_path), retries=0)
        assert srv.hits['/gone'] == 3
    assert os.listdir(str(tmp_path)) == []


def test_download_with_a_wrong_hash_fails_and_leaves_no_file(tmp_path, monkeypatch):
    with _no_proxy(monkeypatch), _Server({'/f': [b'corrupt']}) as srv:
        with pytest.raises(DownloadError, match='content hash does not match'):
            utils.download(srv.url('/f'), path=str(tmp_path / 'f'), sha1_hash=_sha1(b'good'),
                           retries=2)
        assert srv.hits['/f'] == 2
    assert os.listdir(str(tmp_path)) == []
    assert issubclass(DownloadError, UserWarning) and issubclass(DownloadError, ValueError)


def test_download_through_urllib_without_requests(tmp_path, monkeypatch):
    """Without the requests package the standard library fetches http URLs."""
    import builtins
    real_import = builtins.__import__

    def no_requests(name, *args, **kwargs):
        if name == 'requests':
            raise ImportError('no requests here')
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, '__import__', no_requests)
    with _no_proxy(monkeypatch), _Server({'/u': [b'via urllib'], '/missing': [404]}) as srv:
        got = utils.download(srv.url('/u'), path=str(tmp_path))
        with pytest.raises(OSError):
            utils.download(srv.url('/missing'), path=str(tmp_path), retries=1)
    with open(got, 'rb') as f:
        assert f.read() == b'via urllib'


def test_download_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="Can't construct file-name"):
        utils.download('http://127.0.0.1:1/dir/')
    with pytest.raises(ValueError, match='retries should be at least 0'):
        utils.download('http://127.0.0.1:1/x', path=str(tmp_path), retries=-1)
    with pytest.raises(TypeError, match='url must be a str'):
        utils.download(None)


def test_download_warns_when_ssl_is_not_verified(tmp_path):
    src = tmp_path / 's.txt'
    src.write_bytes(b's')
    with pytest.warns(UserWarning, match='Unverified HTTPS request'):
        utils.download(src.as_uri(), path=str(tmp_path / 'd.txt'), verify_ssl=False)


def test_repo_urls(monkeypatch):
    monkeypatch.delenv('MXNET_GLUON_REPO', raising=False)
    assert utils._get_repo_url() == utils.DEFAULT_REPO
    monkeypatch.setenv('MXNET_GLUON_REPO', 'http://127.0.0.1:8000/mirror')
    assert utils._get_repo_url() == 'http://127.0.0.1:8000/mirror/'
    assert utils._get_repo_file_url('gluon/models', 'resnet18_v1-a0666292.zip') == \
        'http://127.0.0.1:8000/mirror/gluon/models/resnet18_v1-a0666292.zip'


# ----------------------------------------------------------------------------- helpers
def test_hook_handle():
    hooks = collections.OrderedDict()

    def hook():
        pass
    handle = utils.HookHandle()
    handle.attach(hooks, hook)
    assert list(hooks.values()) == [hook]
    with pytest.raises(ValueError, match='attached twice'):
        handle.attach(hooks, hook)
    with handle:
        pass
    assert not hooks
    handle.detach()         # twice is harmless


def test_shape_is_known():
    assert utils.shape_is_known((2, 3))
    assert not utils.shape_is_known((2, 0))
    assert not utils.shape_is_known(())
    assert not utils.shape_is_known(None)
    with pytest.raises(ValueError, match='cannot be less than 0'):
        utils.shape_is_known((2, -1))


def test_brief_print_list_and_indent():
    assert utils._brief_print_list(['a', 'b']) == "'a', 'b'"
    assert utils._brief_print_list(range(10)) == "'0', '1', '2', ..., '6', '7', '8', '9'"
    assert utils._indent('a\nb', 2) == 'a\n  b'
