"""PyNeuraLogic's static graph datasets (`model.build_static_dataset(dataset)`): samples that
share one structure and differ in fact values, trained one sample at a time.

PyNeuraLogic grounds the first sample only and writes every other sample's fact values into
that one network, so a sample whose structure differs would silently be computed on the
first one's. lrnn grounds every sample and its engine already shares one execution plan
between networks of equal structure, so the result is the same where PyNeuraLogic's is
right and still right where it is not. `fact_mappings` and `targets` are kept as
PyNeuraLogic gives them, for code that reads them.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from lrnn.core.atoms import Atom
from lrnn.dataset.samples import Dataset


class StaticGraphDataset:
    """A dataset built for one model, trained one sample at a time in order. `static_sample`
    is the first sample of the built dataset; `fact_mappings[i]` lists (fact, value) of sample
    i's example as written (1.0 for a fact without a value); `targets[i]` its query's target."""

    __slots__ = ("_built", "_fact_mappings", "_targets", "_batch_size")

    def __init__(self, built: Any, fact_mappings: List[List[Tuple[Atom, Any]]], targets: List[Any], batch_size: int = 1):
        self._built = built
        self._fact_mappings = fact_mappings
        self._targets = targets
        self._batch_size = batch_size

    @property
    def static_sample(self) -> Any:
        return self._built[0]

    @property
    def fact_mappings(self) -> List[List[Tuple[Atom, Any]]]:
        return self._fact_mappings

    @property
    def targets(self) -> List[Any]:
        return self._targets

    @property
    def built_dataset(self) -> Any:
        """The lrnn BuiltDataset behind it (batch size 1, in order)."""
        return self._built

    def __len__(self) -> int:
        return len(self._fact_mappings)


def _as_written(weight: Any) -> Any:
    """A fact's value or a query's target as PyNeuraLogic hands it on: a float, a list, or a
    list of rows."""
    if weight is None:
        return None
    if weight.kind == weight.SCALAR:
        return float(weight.data.reshape(-1)[0])
    if weight.kind == weight.VECTOR:
        return [float(x) for x in weight.data.reshape(-1)]
    if weight.kind == weight.MATRIX:
        return weight.data.reshape(weight.rows, weight.cols).tolist()
    return weight  # a weight name or dimensions (learnable facts): the Weight itself


def _fact_value(fact: Atom) -> Any:
    return 1.0 if fact.weight is None else _as_written(fact.weight)


def build_static_graph_dataset(model: Any, dataset: Any, *, batch_size: int = 1, learnable_facts: bool = False,
                               progress: bool = False) -> StaticGraphDataset:
    """Builds `dataset` (a Dataset of samples with one query each) for `model` as a static
    graph dataset. Refuses what PyNeuraLogic's static graph cannot hold: a batch size other
    than 1 (training goes sample by sample) and a sample with several queries."""
    if not isinstance(dataset, Dataset) or not dataset.to_samples():
        raise ValueError("a static graph dataset is built from a Dataset with at least one sample")
    if batch_size != 1:
        raise NotImplementedError(
            f"a static graph trains one sample at a time, so batch_size must be 1, got {batch_size}"
        )
    samples = dataset.to_samples()
    for index, sample in enumerate(samples):
        if len(sample.queries) != 1:
            raise NotImplementedError(
                f"sample {index} has several queries ({len(sample.queries)}); a static graph sample holds one query"
            )
    built = model.build_dataset(Dataset(samples), batch_size=1, learnable_facts=learnable_facts)
    mappings = [[(fact, _fact_value(fact)) for fact in sample.example] for sample in samples]
    targets = [_as_written(s.queries[0].weight) for s in samples]
    return StaticGraphDataset(built, mappings, targets)


__all__ = ["StaticGraphDataset", "build_static_graph_dataset"]
