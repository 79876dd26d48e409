"""Key-value stores for data parallel training (MXNet's ``mx.kvstore`` / ``mx.kv``)."""
from .base import KVStoreBase, TestStore
from .kvstore import KVStore, create

__all__ = ['KVStore', 'KVStoreBase', 'TestStore', 'create']
