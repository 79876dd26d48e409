"""Online evaluation metrics (MXNet 1.9.1's ``mxnet.metric``).

Labels and predictions may be NDArrays or NumPy arrays. Each metric accumulates as MXNet's
does: most in NumPy (float64 sums of per-batch values), Perplexity and Loss through NDArray
float32 reductions, so the values are MXNet's.
"""
from .base import (EvalMetric, CompositeEvalMetric, CustomMetric, np, create, register,
                   alias, check_label_shapes)
from .classification import Accuracy, TopKAccuracy, F1, MCC, PCC, Perplexity
from .regression import (MAE, MSE, RMSE, CrossEntropy, NegativeLogLikelihood,
                         PearsonCorrelation, Loss, Torch, Caffe)

__all__ = ['EvalMetric', 'CompositeEvalMetric', 'CustomMetric', 'np', 'create', 'register',
           'alias', 'check_label_shapes', 'Accuracy', 'TopKAccuracy', 'F1', 'MCC', 'PCC',
           'Perplexity', 'MAE', 'MSE', 'RMSE', 'CrossEntropy', 'NegativeLogLikelihood',
           'PearsonCorrelation', 'Loss', 'Torch', 'Caffe']
