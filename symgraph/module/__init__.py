"""Modules (MXNet's ``mx.mod``): a Symbol bound to executors, with parameters, an
optimizer and the training loop ``fit``; bucketing, sequential and Python modules."""
from .base_module import BaseModule, ModuleStateError
from .module import Module
from .bucketing_module import BucketingModule
from .sequential_module import SequentialModule
from .python_module import PythonModule, PythonLossModule
from .feedforward import FeedForward

__all__ = ['BaseModule', 'ModuleStateError', 'Module', 'BucketingModule',
           'SequentialModule', 'PythonModule', 'PythonLossModule', 'FeedForward']
