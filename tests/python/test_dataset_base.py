"""PyNeuraLogic's dataset base classes (`lrnn.dataset.base`, issue 11): lrnn's datasets are
instances of them, and a convertible dataset dumps what it converts to."""

import io

import pytest

from lrnn import R
from lrnn.dataset import Dataset, FileDataset, Sample, TensorDataset
from lrnn.dataset.base import BaseDataset, ConvertibleDataset


def test_datasets_derive_from_the_bases():
    assert isinstance(Dataset(), BaseDataset) and issubclass(FileDataset, BaseDataset)
    assert issubclass(TensorDataset, ConvertibleDataset)
    with pytest.raises(NotImplementedError, match="BaseDataset cannot be written"):
        BaseDataset().dump(io.StringIO(), io.StringIO())


def test_a_convertible_dataset_dumps_its_conversion():
    class Pairs(ConvertibleDataset):
        def to_dataset(self):
            return Dataset([Sample(R.q("a")[1.0], [R.f("a")[0.5]])])

    queries, examples = io.StringIO(), io.StringIO()
    Pairs().dump(queries, examples)
    expected_q, expected_e = io.StringIO(), io.StringIO()
    Pairs().to_dataset().dump(expected_q, expected_e)
    assert queries.getvalue() == expected_q.getvalue() and "q(a)" in queries.getvalue()
    assert examples.getvalue() == expected_e.getvalue() and "f(a)" in examples.getvalue()
