"""``mx.gluon.data.vision``: vision datasets and image transforms."""
from . import datasets, transforms  # noqa: F401
from .datasets import (MNIST, FashionMNIST, CIFAR10, CIFAR100, ImageRecordDataset,
                       ImageFolderDataset, ImageListDataset)

__all__ = ['MNIST', 'FashionMNIST', 'CIFAR10', 'CIFAR100', 'ImageRecordDataset',
           'ImageFolderDataset', 'ImageListDataset', 'datasets', 'transforms']
