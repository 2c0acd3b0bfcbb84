"""Datasets, as in `neuralogic.dataset`: examples (lists of valued facts) and queries
(valued atoms: the value is the target), built in Python (`Dataset`) or read from the
text files (`FileDataset`). The classes live in lrnn.dataset.samples (and .pddl); this
package gathers them under PyNeuraLogic's names, with its built-in datasets."""

from __future__ import annotations

from typing import Any

from lrnn.dataset.pddl import PDDLDataset
from lrnn.dataset.samples import CSVDataset, CSVFile, Data, Dataset, FileDataset, Mode, Sample, TensorDataset

_LOADERS = ("XOR", "XOR_Vectorized", "Family", "Trains", "Mutagenesis", "Nations")


def __getattr__(name: str) -> Any:
    # The built-in datasets (lrnn.utils.data) under lrnn.dataset too, loaded on first use.
    if name in _LOADERS:
        from lrnn.utils import data

        return getattr(data, name)
    raise AttributeError(f"module 'lrnn.dataset' has no attribute {name!r}")


__all__ = ["Dataset", "Sample", "FileDataset", "Data", "TensorDataset", "CSVFile", "CSVDataset", "Mode", "PDDLDataset",
           *_LOADERS]
