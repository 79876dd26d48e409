"""``mx.onnx``: ONNX export (and import, where present) of symgraph graphs.

``export_model`` writes a Symbol and its parameters as an ONNX model (MXNet 1.9.1's
``mx.onnx.export_model``); converters for operators are registered with
:func:`symgraph.onnx._registry.converter`, exporters for Custom operators with
:func:`register_custom_exporter`. The ``onnx`` and ``onnxruntime`` packages are imported
only when an export or import runs (``pip install "symgraph[onnx]"``).
"""
import importlib

from ._registry import ExportError, register_custom_exporter
from .export import export_model, export_onnx_model, get_operator_support

__all__ = ['export_model', 'export_onnx_model', 'get_operator_support', 'ExportError',
           'register_custom_exporter']

try:        # the import half (symgraph/onnx/import_onnx.py), where present
    _import_onnx = importlib.import_module('.import_onnx', __name__)
except ModuleNotFoundError as _e:
    if _e.name != __name__ + '.import_onnx':
        raise
else:
    for _name in ('import_model', 'get_model_metadata', 'import_to_gluon'):
        if hasattr(_import_onnx, _name):
            globals()[_name] = getattr(_import_onnx, _name)
            __all__.append(_name)
