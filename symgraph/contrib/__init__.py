"""``mx.contrib``: MXNet's contributed modules that symgraph has (``amp``,
``autograd``, ``svrg_optimization``) and the contrib operator namespaces under the names MXNet's
``mxnet.contrib`` gives them (``mx.contrib.nd`` is ``mx.nd.contrib``, ``mx.contrib.sym`` is
``mx.sym.contrib``)."""
from .. import ndarray as _ndarray
from .. import symbol as _symbol
from . import amp
from . import autograd
from .. import onnx  # mx.contrib.onnx: MXNet's older home of mx.onnx

#: ``mx.contrib.ndarray`` / ``mx.contrib.nd``: the contrib operators on NDArrays
ndarray = nd = _ndarray.contrib
#: ``mx.contrib.symbol`` / ``mx.contrib.sym``: the contrib operators on Symbols
symbol = sym = _symbol.contrib
from . import quantization
#: ``mx.contrib.quant``: MXNet's short name of ``mx.contrib.quantization``
quant = quantization
