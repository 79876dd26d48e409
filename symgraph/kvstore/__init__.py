"""Key-value stores for data parallel training (MXNet's ``mx.kvstore`` / ``mx.kv``): the
single-process ones (``'nccl'`` in :mod:`.nccl`), the multi-process ``'dist_sync'`` ones in :mod:`.dist`, and in
:mod:`.training` the kvstore helpers Module uses (MXNet's ``model._create_kvstore`` ...)."""
from .base import KVStoreBase, TestStore
from .kvstore import KVStore, create
from . import training
from . import dist
from . import nccl

__all__ = ['KVStore', 'KVStoreBase', 'TestStore', 'create']
