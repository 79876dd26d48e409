"""Key-value stores for data parallel training (MXNet's ``mx.kvstore`` / ``mx.kv``), and in
:mod:`.training` the kvstore helpers Module uses (MXNet's ``model._create_kvstore`` ...)."""
from .base import KVStoreBase, TestStore
from .kvstore import KVStore, create
from . import training

__all__ = ['KVStore', 'KVStoreBase', 'TestStore', 'create']
