"""Gluon's utilities (MXNet's ``mx.gluon.utils``), after MXNet 1.9.1's
``python/mxnet/gluon/utils.py``: splitting a batch over devices (:func:`split_data`,
:func:`split_and_load`), :func:`clip_global_norm`, file downloads checked by SHA-1
(:func:`check_sha1`, :func:`download`, :func:`replace_file`), the Gluon repository's URLs,
and the small helpers Block and Parameter use (:class:`HookHandle`, :func:`shape_is_known`).

:func:`download` fetches ``http``/``https`` URLs with ``requests`` where it is installed
(as MXNet does, so that code mocking ``requests.get`` works alike) and with the standard
library otherwise; other schemes (``file://``) always go through ``urllib``.
"""
import collections
import hashlib
import os
import shutil
import ssl
import urllib.request
import uuid
import warnings
import weakref

import numpy as np

from .. import ndarray
from ..ndarray import NDArray
from ..base import ArgumentError, ArgumentTypeError, SymgraphError

__all__ = ['split_data', 'split_and_load', 'clip_global_norm', 'check_sha1', 'download',
           'replace_file', 'HookHandle', 'shape_is_known', 'DownloadError']

#: the Gluon repository of MXNet's datasets and pretrained models
DEFAULT_REPO = 'https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/'


class DownloadError(SymgraphError, UserWarning, ValueError):
    """A downloaded file whose SHA-1 is not the expected one. MXNet raises a bare
    ``UserWarning`` there; this is one too (and a ValueError)."""


# ----------------------------------------------------------------------------- data parallel
def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Split an NDArray into ``num_slice`` slices along ``batch_axis`` (one per device).

    Parameters
    ----------
    data : NDArray
        A batch of data.
    num_slice : int
        Number of slices.
    batch_axis : int, default 0
        The axis along which to slice.
    even_split : bool, default True
        Whether every slice must have the same size: if so, a ``num_slice`` that does not
        divide ``data.shape[batch_axis]`` is an error. Otherwise the first
        ``size % num_slice`` slices are one element larger.

    Returns
    -------
    list of NDArray
        A list even when ``num_slice`` is 1.

    Examples
    --------
    >>> import symgraph as mx
    >>> parts = mx.gluon.utils.split_data(mx.nd.arange(10), 3, even_split=False)
    >>> [p.asnumpy().tolist() for p in parts]
    [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]
    """
    if not isinstance(data, NDArray):
        raise ArgumentTypeError('split_data splits an NDArray, got %s' % type(data).__name__)
    if isinstance(num_slice, bool) or not isinstance(num_slice, (int, np.integer)) \
            or num_slice < 1:
        raise ArgumentError('num_slice must be a positive int, got %r' % (num_slice,))
    if not -data.ndim <= batch_axis < data.ndim:
        raise ArgumentError('batch_axis %d is out of range for data of shape %s'
                            % (batch_axis, data.shape))
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ArgumentError(
            "data with shape %s cannot be evenly split into %d slices along axis %d. "
            "Use a batch size that's multiple of %d or set even_split=False to allow "
            "uneven partitioning of data." % (str(data.shape), num_slice, batch_axis,
                                              num_slice))
    if size < num_slice:
        # MXNet hands out empty slices here, which no operator accepts afterwards
        raise ArgumentError('data with %d elements along axis %d cannot be split into %d '
                            'non-empty slices' % (size, batch_axis, num_slice))
    n_each, extras = divmod(size, num_slice)
    sizes = [0] + extras * [n_each + 1] + (num_slice - extras) * [n_each]
    points = np.cumsum(sizes)
    if batch_axis % data.ndim == 0:
        return [data[int(points[i]):int(points[i + 1])] for i in range(num_slice)]
    return [ndarray.slice_axis(data, axis=batch_axis, begin=int(points[i]),
                               end=int(points[i + 1])) for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Split ``data`` into ``len(ctx_list)`` slices along ``batch_axis`` and copy each
    slice to one context.

    Parameters
    ----------
    data : NDArray or numpy.ndarray
        A batch of data (a NumPy array is made an NDArray on ``ctx_list[0]`` first).
    ctx_list : list of Context
        The contexts.
    batch_axis : int, default 0
        The axis along which to slice.
    even_split : bool, default True
        Whether every slice must have the same size.

    Returns
    -------
    list of NDArray
        One per context.

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.gluon.utils.split_and_load(mx.nd.ones((4, 2)), [mx.cpu(0), mx.cpu(1)])
    >>> [(a.shape, str(a.context)) for a in x]
    [((2, 2), 'cpu(0)'), ((2, 2), 'cpu(1)')]
    """
    if not isinstance(ctx_list, (list, tuple)) or not ctx_list:
        raise ArgumentTypeError('ctx_list must be a non-empty list of Contexts, got %r'
                                % (ctx_list,))
    if not isinstance(data, NDArray):
        data = ndarray.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [s.as_in_context(ctx) for s, ctx in zip(slices, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Rescale NDArrays in place so that the 2-norm of all of them together is at most
    ``max_norm``.

    Parameters
    ----------
    arrays : list of NDArray
        The arrays (gradients), on any contexts.
    max_norm : float
        The largest norm allowed.
    check_isfinite : bool, default True
        Check that the norm is finite (a UserWarning when it is not, as MXNet: the clipped
        values are then undefined) and return it as a float.

    Returns
    -------
    float or NDArray
        The norm before clipping: a float with ``check_isfinite``, else an NDArray of
        shape (1,).

    Examples
    --------
    >>> import symgraph as mx
    >>> a = [mx.nd.array([3.0, 0.0]), mx.nd.array([4.0])]
    >>> float(mx.gluon.utils.clip_global_norm(a, 1.0))
    5.0
    >>> [[round(float(v), 3) for v in x.asnumpy()] for x in a]
    [[0.6, 0.0], [0.8]]
    """
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise ArgumentError('clip_global_norm needs a non-empty list of NDArrays, got %r'
                            % (arrays,))
    for a in arrays:
        if not isinstance(a, NDArray):
            raise ArgumentTypeError('clip_global_norm clips NDArrays, got a %s'
                                    % type(a).__name__)
    ctx = arrays[0].context

    def _norm_sq(array):
        if array.stype != 'default':      # (sparse arrays do not reshape, as MXNet's)
            return ndarray.square(ndarray.norm(array)).as_in_context(ctx)
        x = array.reshape((-1,))
        return ndarray.dot(x, x).as_in_context(ctx)

    total_norm = ndarray.sqrt(ndarray.add_n(*[_norm_sq(a) for a in arrays]))
    if check_isfinite and not np.isfinite(total_norm.asscalar()):
        warnings.warn(UserWarning('nan or inf is detected. Clipping results will be '
                                  'undefined.'), stacklevel=2)
    # (a non-finite norm makes the results NaN, as in MXNet: warned about above, once)
    with np.errstate(invalid='ignore', over='ignore'):
        scale = max_norm / (total_norm + 1e-8)
        scale = ndarray.min(ndarray.concat(scale, ndarray.ones(1, ctx=ctx), dim=0))
        for a in arrays:
            a *= scale.as_in_context(a.context)
    if check_isfinite:
        return total_norm.asscalar()
    return total_norm


# ----------------------------------------------------------------------------- files
def check_sha1(filename, sha1_hash):
    """Whether the SHA-1 of the file's content is ``sha1_hash`` (hex digits).

    Raises
    ------
    FileNotFoundError
        No such file.
    """
    sha1 = hashlib.sha1()
    with open(filename, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            sha1.update(chunk)
    return sha1.hexdigest() == sha1_hash


def replace_file(src, dst):
    """Move ``src`` onto ``dst`` atomically (both on one file system); ``src`` is removed
    when the move fails."""
    try:
        os.replace(src, dst)
    except OSError as err:
        try:
            os.remove(src)
        except OSError:
            pass
        raise OSError('Moving downloaded temp file - {}, to {} failed: {}. Please retry the '
                      'download.'.format(src, dst, err)) from err


def _fetch(url, out, verify_ssl):
    """Write the content at ``url`` into the open binary file ``out``."""
    if url.lower().startswith(('http://', 'https://')):
        try:
            import requests
        except ImportError:
            requests = None
        if requests is not None:
            r = requests.get(url, stream=True, verify=verify_ssl)
            if r.status_code != 200:
                raise OSError('Failed downloading url {} (HTTP status {})'
                              .format(url, r.status_code))
            for chunk in r.iter_content(chunk_size=1 << 16):
                if chunk:
                    out.write(chunk)
            return
    context = None
    if not verify_ssl:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(url, context=context) as r:
        status = getattr(r, 'status', None)
        if status is not None and url.lower().startswith('http') and status != 200:
            raise OSError('Failed downloading url {} (HTTP status {})'.format(url, status))
        shutil.copyfileobj(r, out, 1 << 20)


def download(url, path=None, overwrite=False, sha1_hash=None, retries=5, verify_ssl=True):
    """Download a URL into a file, as MXNet's ``gluon.utils.download``.

    The content goes to a temporary file beside the target, which is renamed onto it (so
    that processes downloading the same file at once leave one whole file). A file that
    already exists is kept unless ``overwrite`` or its SHA-1 is not ``sha1_hash``.

    Parameters
    ----------
    url : str
        The URL (``http``, ``https``, ``file``).
    path : str, optional
        The file, or a directory to put it in; default: the URL's last part in the current
        directory.
    overwrite : bool, default False
        Download even if the file exists.
    sha1_hash : str, optional
        The expected SHA-1 (hex); a mismatch after the download counts as a failed attempt.
    retries : int, default 5
        Attempts before the last error is raised (at least one attempt is made).
    verify_ssl : bool, default True
        Verify SSL certificates (a warning when not, as MXNet).

    Returns
    -------
    str
        The file's path.

    Raises
    ------
    ValueError
        No file name in the URL and no ``path``; ``retries`` < 0.
    DownloadError
        The content's SHA-1 is not ``sha1_hash`` (a UserWarning subclass, as MXNet).
    OSError
        The download failed ``retries`` times (the last error).
    """
    if not isinstance(url, str):
        raise ArgumentTypeError('url must be a str, got %s' % type(url).__name__)
    if path is None:
        fname = url.split('/')[-1]
        if not fname:
            raise ArgumentError("Can't construct file-name from this URL (%r). Please set "
                                "the `path` option manually." % url)
    else:
        path = os.path.expanduser(path)
        fname = os.path.join(path, url.split('/')[-1]) if os.path.isdir(path) else path
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ArgumentError("Number of retries should be at least 0, currently it's {}"
                            .format(retries))
    if not verify_ssl:
        warnings.warn('Unverified HTTPS request is being made (verify_ssl=False). '
                      'Adding certificate verification is strongly advised.')
    if not (overwrite or not os.path.exists(fname)
            or (sha1_hash and not check_sha1(fname, sha1_hash))):
        return fname
    dirname = os.path.dirname(os.path.abspath(fname))
    os.makedirs(dirname, exist_ok=True)
    while True:
        tmp = '{}.{}'.format(fname, uuid.uuid4())
        try:
            print('Downloading {} from {}...'.format(fname, url))
            try:
                with open(tmp, 'wb') as f:
                    _fetch(url, f, verify_ssl)
                if sha1_hash and not check_sha1(tmp, sha1_hash):
                    raise DownloadError(
                        'File {} is downloaded but the content hash does not match. The repo '
                        'may be outdated or download may be incomplete. If the "repo_url" is '
                        'overridden, consider switching to the default repo.'.format(fname))
                # another process may have written the file meanwhile: keep its copy if good
                if overwrite or not os.path.exists(fname) \
                        or (sha1_hash and not check_sha1(fname, sha1_hash)):
                    replace_file(tmp, fname)
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)
            return fname
        except Exception as err:  # pylint: disable=broad-except  (MXNet retries on any)
            retries -= 1
            if retries <= 0:
                raise
            print('download failed due to {}, retrying, {} attempt{} left'
                  .format(repr(err), retries, 's' if retries > 1 else ''))


def _get_repo_url():
    """The base URL of the Gluon dataset and model repository (``$MXNET_GLUON_REPO``
    overrides it), ending with ``/``."""
    repo_url = os.environ.get('MXNET_GLUON_REPO', DEFAULT_REPO)
    if not repo_url.endswith('/'):
        repo_url += '/'
    return repo_url


def _get_repo_file_url(namespace, filename):
    """The URL of ``filename`` in ``namespace`` of the Gluon repository.

    >>> import os, symgraph as mx
    >>> os.environ.pop('MXNET_GLUON_REPO', None) is None or True
    True
    >>> mx.gluon.utils._get_repo_file_url('gluon/models', 'a.zip')
    'https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/gluon/models/a.zip'
    """
    return '{base_url}{namespace}/{filename}'.format(base_url=_get_repo_url(),
                                                     namespace=namespace, filename=filename)


# ----------------------------------------------------------------------------- helpers
def _indent(s_, num_spaces):
    """``s_`` with every line but the first indented by ``num_spaces`` (Block's repr)."""
    lines = s_.split('\n')
    if len(lines) == 1:
        return s_
    first = lines.pop(0)
    return '\n'.join([first] + [(num_spaces * ' ') + line for line in lines])


def _brief_print_list(lst, limit=7):
    """At most ``limit`` elements of a list, quoted, with ``...`` between the ends."""
    lst = list(lst)
    if len(lst) > limit:
        return _brief_print_list(lst[:limit // 2], limit) + ', ..., ' + \
            _brief_print_list(lst[-limit // 2:], limit)
    return ', '.join(["'%s'" % str(i) for i in lst])


class HookHandle(object):
    """A handle that attaches a hook to a dict of hooks and detaches it (Block's forward
    hooks); a context manager that detaches on exit."""

    def __init__(self):
        self._hooks_dict_ref = None
        self._id = None

    def attach(self, hooks_dict, hook):
        """Put ``hook`` into ``hooks_dict`` (once per handle)."""
        if self._hooks_dict_ref is not None:
            raise ArgumentError('The same handle cannot be attached twice.')
        self._id = id(hook)
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict)

    def detach(self):
        """Remove the hook (nothing when it is gone already)."""
        hooks_dict = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        if hooks_dict is not None and self._id in hooks_dict:
            del hooks_dict[self._id]

    def __getstate__(self):
        return (self._hooks_dict_ref() if self._hooks_dict_ref is not None else None,
                self._id)

    def __setstate__(self, state):
        if state[0] is None:
            self._hooks_dict_ref = weakref.ref(collections.OrderedDict())
        else:
            self._hooks_dict_ref = weakref.ref(state[0])
        self._id = state[1]

    def __enter__(self):
        return self

    def __exit__(self, ptype, value, trace):
        self.detach()


def shape_is_known(shape):
    """Whether every dimension of ``shape`` is known (MXNet 1.x's legacy shapes: 0 is
    unknown, and an empty shape is unknown too).

    Raises
    ------
    ValueError
        A negative dimension.
    """
    if shape is None or len(shape) == 0:
        return False
    for dim_size in shape:
        if dim_size == 0:
            return False
        if dim_size < 0:
            raise ArgumentError('shape dimension size cannot be less than 0, while received '
                                '{}'.format(dim_size))
    return True
