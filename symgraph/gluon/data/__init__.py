"""``mx.gluon.data``: datasets, samplers and the DataLoader (the minimum Gluon training
loops need; the vision datasets and worker processes come with the full data pipeline)."""
from . import dataset, sampler, dataloader  # noqa: F401  (mx.gluon.data.dataloader ...)
from . import batchify  # noqa: F401  (GluonNLP/GluonCV's Stack, Pad, Tuple, Group)
from .dataset import Dataset, SimpleDataset, ArrayDataset
from .sampler import (Sampler, SequentialSampler, RandomSampler, FilterSampler,
                      BatchSampler)
from .dataloader import DataLoader
from . import record, vision  # noqa: F401  (mx.gluon.data.vision.transforms ...)
from .record import RecordFileDataset

__all__ = ['Dataset', 'SimpleDataset', 'ArrayDataset', 'Sampler', 'SequentialSampler',
           'RandomSampler', 'FilterSampler', 'BatchSampler', 'DataLoader', 'RecordFileDataset']
