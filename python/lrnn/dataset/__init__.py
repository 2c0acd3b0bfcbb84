"""Datasets, as in `neuralogic.dataset`: examples (lists of valued facts) and queries
(valued atoms: the value is the target), built in Python (`Dataset`) or read from the
text files (`FileDataset`)."""

from __future__ import annotations

import os
from typing import Any, Iterable, List, Optional, Sequence, Union

import numpy as np

from lrnn.core.atoms import Atom
from lrnn.core.rules import Rule
from lrnn.core.terms import to_term
from lrnn.core.values import Weight


def _check_fact(fact: Any, where: str) -> Atom:
    if isinstance(fact, Rule):
        raise TypeError(f"{where} holds facts, not rules ({fact}); put rules in the template")
    if not isinstance(fact, Atom):
        raise TypeError(f"{where} holds facts such as R.edge(1, 2) or R.x(1)[0.5], got {type(fact).__name__}: {fact!r}")
    if fact.special or fact.hidden or fact.negated or fact.soft_negated or fact.transposed:
        raise ValueError(f"{where} holds plain facts, got {fact.to_str()}")
    if fact.weight is not None and fact.weight.kind in (Weight.DIMS, Weight.REFERENCE):
        raise ValueError(f"a fact's value is a number, a list or an array, got {fact.to_str()}")
    return fact


def _check_query(query: Any) -> Atom:
    fact = _check_fact(query, "a query")
    return fact


class Sample:
    """One learning sample: its queries (atoms whose values are the targets) and its
    example (facts)."""

    __slots__ = ("query", "example")

    def __init__(self, query: Union[Atom, Sequence[Atom], None], example: Union[Sequence[Atom], Atom, None]):
        if query is None:
            queries: List[Atom] = []
        elif isinstance(query, Atom):
            queries = [query]
        else:
            queries = list(query)
        self.query = [_check_query(q) for q in queries]
        if example is None:
            example = []
        elif isinstance(example, Atom):
            example = [example]
        self.example = [_check_fact(f, "an example") for f in example]

    def __len__(self) -> int:
        return len(self.example)

    def __str__(self) -> str:
        return ", ".join(q.to_str() for q in self.query)

    def __repr__(self) -> str:
        return f"Sample({self}; {len(self.example)} facts)"


class Dataset:
    """Samples built in Python.

    PyNeuraLogic's two ways both work: `dataset.add(query, example)` (one sample each),
    or `dataset.add_example(facts)` + `dataset.add_queries([...])` where one example
    serves every query and N examples pair with N queries in order.
    """

    def __init__(self, samples: Union[Sample, Sequence[Sample], None] = None):
        if samples is None:
            self.samples: List[Sample] = []
        elif isinstance(samples, Sample):
            self.samples = [samples]
        else:
            self.samples = list(samples)
        self._examples: List[List[Atom]] = []
        self._queries: List[Atom] = []

    # ---- building ------------------------------------------------------------------------
    def add(self, query: Any, example: Any) -> "Dataset":
        self.samples.append(Sample(query, example))
        return self

    def add_sample(self, sample: Sample) -> "Dataset":
        self.samples.append(sample)
        return self

    def add_samples(self, samples: Iterable[Sample]) -> "Dataset":
        self.samples.extend(samples)
        return self

    def add_example(self, example: Sequence[Atom]) -> "Dataset":
        self._examples.append([_check_fact(f, "an example") for f in example])
        return self

    def add_examples(self, examples: Iterable[Sequence[Atom]]) -> "Dataset":
        for e in examples:
            self.add_example(e)
        return self

    def add_query(self, query: Atom) -> "Dataset":
        self._queries.append(_check_query(query))
        return self

    def add_queries(self, queries: Iterable[Atom]) -> "Dataset":
        for q in queries:
            self.add_query(q)
        return self

    def set_examples(self, examples: Iterable[Sequence[Atom]]) -> None:
        self._examples = []
        self.add_examples(examples)

    def set_queries(self, queries: Iterable[Atom]) -> None:
        self._queries = []
        self.add_queries(queries)

    # ---- reading ---------------------------------------------------------------------------
    def to_samples(self) -> List[Sample]:
        """Every sample, the paired examples/queries included (paired as the text files
        are: one example serves every query, each query its own sample; N examples pair
        with N queries in order)."""
        samples = list(self.samples)
        ex, qs = self._examples, self._queries
        if ex or qs:
            if len(ex) == 1:
                samples.extend(Sample(q, ex[0]) for q in qs) if qs else samples.append(Sample(None, ex[0]))
            elif len(ex) == len(qs):
                samples.extend(Sample(q, e) for q, e in zip(qs, ex))
            elif not ex:
                raise ValueError(f"{len(qs)} queries but no example: add_example(facts) first")
            else:
                raise ValueError(
                    f"{len(ex)} examples and {len(qs)} queries: give one example for all queries, "
                    "or one query per example"
                )
        return samples

    def __getitem__(self, index: int) -> Sample:
        return self.to_samples()[index]

    def __len__(self) -> int:
        return len(self.to_samples())

    def __iter__(self):
        return iter(self.to_samples())

    # ---- text --------------------------------------------------------------------------------
    def to_text(self) -> tuple:
        """(examples file text, queries file text). Examples and queries added with
        add_example/add_queries are written as the files would hold them (the engine pairs
        them the same way); samples added with add() as a named example `s<i> :- facts.`
        and its query line `s<i> :- targets.`"""
        if not self.samples:
            if not self._examples:
                raise ValueError("the dataset is empty")
            examples = [_facts_line(e, i) for i, e in enumerate(self._examples)]
            queries = [q.to_str() + "." for q in self._queries]
            self.to_samples()  # checks the pairing
            return "\n".join(examples) + "\n", "\n".join(queries) + ("\n" if queries else "")
        examples, queries = [], []
        for i, sample in enumerate(self.to_samples()):
            examples.append(f"s{i} :- " + _facts_line(sample.example, i))
            if sample.query:
                queries.append(f"s{i} :- " + ", ".join(q.to_str() for q in sample.query) + ".")
        return "\n".join(examples) + "\n", "\n".join(queries) + ("\n" if queries else "")

    def dump(self, queries_fp: Any, examples_fp: Any, sep: str = "\n") -> None:
        examples, queries = self.to_text()
        examples_fp.write(examples)
        queries_fp.write(queries)

    def __str__(self) -> str:
        return "\n".join(str(s) for s in self.to_samples())


def _facts_line(facts: Sequence[Atom], index: int) -> str:
    if not facts:
        raise ValueError(f"sample {index} has no facts; an example needs at least one")
    return ", ".join(f.to_str() for f in facts) + "."


class FileDataset:
    """Examples and queries in lrnn's (NeuraLogic's) text files."""

    def __init__(self, examples_file: Optional[str] = None, queries_file: Optional[str] = None):
        if examples_file is None and queries_file is None:
            raise ValueError("FileDataset needs examples_file=, queries_file= or both")
        self.examples_file = None if examples_file is None else os.path.abspath(os.fspath(examples_file))
        self.queries_file = None if queries_file is None else os.path.abspath(os.fspath(queries_file))

    def dump(self, queries_fp: Any, examples_fp: Any, sep: str = "\n") -> None:
        if self.examples_file is not None:
            with open(self.examples_file) as f:
                examples_fp.write(f.read())
        if self.queries_file is not None:
            with open(self.queries_file) as f:
                queries_fp.write(f.read())

    def __repr__(self) -> str:
        return f"FileDataset(examples_file={self.examples_file!r}, queries_file={self.queries_file!r})"


class Data:
    """One graph in tensor form, as PyNeuraLogic's `Data`: node features `x` (n rows),
    `edge_index` ([[sources...], [targets...]]), labels `y` (one per node, or one for the
    graph), optional `edge_attr` (a value per edge) and `y_mask` (the nodes to query; default
    all nodes when y has one label per node)."""

    def __init__(self, x: Any, edge_index: Any, y: Any = 0.0, edge_attr: Any = None, y_mask: Any = None):
        self.x = np.asarray(x, dtype=np.float64)
        if self.x.ndim == 1:
            self.x = self.x.reshape(-1, 1)
        if self.x.ndim != 2:
            raise ValueError(f"x holds one feature row per node, got an array of shape {self.x.shape}")
        self.edge_index = np.asarray(edge_index, dtype=np.int64).reshape(2, -1) if len(edge_index) else np.zeros((2, 0), np.int64)
        self.y = np.asarray(y, dtype=np.float64)
        self.edge_attr = None if edge_attr is None else np.asarray(edge_attr, dtype=np.float64)
        if self.edge_attr is not None and len(self.edge_attr) != self.edge_index.shape[1]:
            raise ValueError(f"{len(self.edge_attr)} edge attributes for {self.edge_index.shape[1]} edges")
        self.y_mask = None if y_mask is None else [int(i) for i in y_mask]

    def to_logic_form(
        self,
        feature_name: str = "node_feature",
        edge_name: str = "edge",
        output_name: str = "predict",
        one_hot_encode_labels: bool = False,
        max_classes: int = 1,
    ) -> tuple:
        """(queries, facts): `edge(u, v)` (valued by edge_attr), `node_feature(i)[x_i]`
        (a scalar when there is one feature), and `predict(i)[y_i]` per masked node or
        `predict[y]` for a graph label."""
        from lrnn.core.atoms import R as _R

        edge, feature, output = _R.get(edge_name), _R.get(feature_name), _R.get(output_name)
        facts: List[Atom] = []
        for k, (u, v) in enumerate(self.edge_index.T.tolist()):
            atom = edge(u, v)
            facts.append(atom if self.edge_attr is None else atom[self.edge_attr[k]])
        for i, row in enumerate(self.x):
            facts.append(feature(i)[row[0] if row.size == 1 else row])

        def label(value: np.ndarray) -> Any:
            if one_hot_encode_labels:
                vector = np.zeros(max_classes)
                vector[int(np.ravel(value)[0])] = 1.0
                return vector
            return float(np.ravel(value)[0]) if value.size == 1 else value

        per_node = self.y.ndim >= 1 and self.y.shape[0] == len(self.x) and (self.y.size > 1 or len(self.x) == 1)
        if self.y_mask is not None or (per_node and self.y.ndim == 1 and not one_hot_encode_labels and self.y.size > 1):
            nodes = self.y_mask if self.y_mask is not None else range(len(self.x))
            queries = [output(i)[label(self.y[i])] for i in nodes]
        else:
            queries = [output[label(self.y)]]
        return queries, facts


class TensorDataset(Dataset):
    """Graphs in tensor form (PyNeuraLogic's TensorDataset): each `Data` becomes one
    sample of facts and queries."""

    def __init__(
        self,
        data: Sequence[Data],
        number_of_classes: int = 1,
        one_hot_encode_labels: bool = False,
        feature_name: str = "node_feature",
        edge_name: str = "edge",
        output_name: str = "predict",
    ):
        super().__init__()
        for d in data:
            queries, facts = d.to_logic_form(feature_name, edge_name, output_name, one_hot_encode_labels, number_of_classes)
            self.add(queries, facts)


__all__ = ["Dataset", "Sample", "FileDataset", "Data", "TensorDataset"]
