"""Datasets: examples (lists of valued facts) and queries (valued atoms: the value is the
target), built in Python (`Dataset`) or read from the text files (`FileDataset`), and the
tabular sources that convert to them (`TensorDataset`, `CSVDataset`). lrnn.dataset
re-exports these under PyNeuraLogic's `neuralogic.dataset` names."""

from __future__ import annotations

import enum
import io
import os
from pathlib import Path
from typing import Any, Callable, Iterable, List, Optional, Sequence, TextIO, Union

import numpy as np

from lrnn.core.atoms import Atom
from lrnn.core.rules import Rule
from lrnn.core.terms import to_term
from lrnn.core.values import Weight
from lrnn.dataset.base import BaseDataset, ConvertibleDataset


def _check_fact(fact: Any, where: str) -> Atom:
    if isinstance(fact, Rule):
        raise TypeError(f"{where} holds facts, not rules ({fact}); put rules in the template")
    if not isinstance(fact, Atom):
        raise TypeError(f"{where} holds facts such as R.edge(1, 2) or R.x(1)[0.5], got {type(fact).__name__}: {fact!r}")
    if fact.special or fact.hidden or fact.negated or fact.soft_negated or fact.transposed:
        raise ValueError(f"{where} holds plain facts, got {fact.to_str()}")
    return fact


def _check_example_item(item: Any) -> Any:
    """A fact, or a rule as PyNeuraLogic's examples may hold (PDDLDataset's action rules):
    kept as given; building refuses the rules (see Dataset.to_text)."""
    from lrnn.utils.pddl.domain import DeleteEffect

    return item if isinstance(item, (Rule, DeleteEffect)) else _check_fact(item, "an example")


def _weighted_query(query: Rule) -> tuple:
    """PyNeuraLogic's weighted query `R.name[0.25] <= R.out(x)[1.0]`: (importance, name,
    query atoms). The importance scales the loss and gradient of those queries."""
    head = query.head
    if query.offset is not None or (query.metadata is not None and len(query.metadata)) or head.terms:
        raise ValueError(f"a weighted query is `R.name[importance] <= R.q(...)[target]`, got {query.to_str()}")
    importance = 1.0
    if head.weight is not None:
        w = head.weight
        if w.kind != Weight.SCALAR or w.name is not None:
            raise ValueError(f"a query's importance is one number, got {head.to_str()} in {query.to_str()}")
        importance = float(w.data[0])
        if not np.isfinite(importance) or importance < 0:
            raise ValueError(f"a query's importance must be a finite number >= 0, got {importance} in {query.to_str()}")
    atoms = []
    for literal in query.body:
        if not isinstance(literal, Atom):
            raise ValueError(f"a weighted query's body holds query atoms, got {literal} in {query.to_str()}")
        atoms.append(_check_query(literal))
    return importance, head.name, atoms


def _check_query(query: Any) -> Atom:
    fact = _check_fact(query, "a query")
    if fact.weight is not None and fact.weight.kind in (Weight.DIMS, Weight.REFERENCE):
        raise ValueError(f"a query's target is a number, a list or an array, got {fact.to_str()}")
    return fact


class Sample:
    """One learning sample: its queries (atoms whose values are the targets) and its
    example (facts)."""

    __slots__ = ("query", "queries", "example", "importance", "query_rules")

    def __init__(self, query: Union[Atom, Rule, Sequence[Any], None], example: Union[Sequence[Atom], Atom, None]):
        if query is None:
            queries: List[Any] = []
        elif isinstance(query, (Atom, Rule)):
            queries = [query]
        else:
            queries = list(query)
        # `query` is kept as given (an atom, a weighted query, a list), as PyNeuraLogic's;
        # `queries` is every query atom, `importance[i]` the factor on queries[i]'s loss: 1,
        # or a weighted query's (R.name[w] <= R.q[t])
        self.query = query
        self.queries: List[Atom] = []
        self.importance: List[float] = []
        self.query_rules: List[Rule] = []  # the weighted queries as written (for printing)
        for q in queries:
            if isinstance(q, Rule):
                importance, _, atoms = _weighted_query(q)
                self.query_rules.append(q)
            else:
                importance, atoms = 1.0, [_check_query(q)]
            self.queries.extend(atoms)
            self.importance.extend([importance] * len(atoms))
        if example is None:
            example = []
        elif isinstance(example, Atom):
            example = [example]
        # facts; rules too, as PyNeuraLogic's (its PDDLDataset puts action rules here)
        self.example = [_check_example_item(f) for f in example]

    def __len__(self) -> int:
        return len(self.example)

    def __str__(self) -> str:
        if self.query_rules:
            return " ".join(r.to_str() for r in self.query_rules)
        return ", ".join(q.to_str() for q in self.queries) + ("." if self.queries else "")

    def query_lines(self, sample_id: str) -> List[str]:
        """The queries file's lines of this sample, named `sample_id`: one line per run of
        queries with one importance, written `0.25 id :- 1.0 out(x).` when it is not 1."""
        lines: List[str] = []
        start = 0
        for i in range(1, len(self.queries) + 1):
            if i == len(self.queries) or self.importance[i] != self.importance[start]:
                weight = self.importance[start]
                lead = "" if weight == 1.0 else f"{_number(weight)} "
                lines.append(f"{lead}{sample_id} :- " + ", ".join(q.to_str() for q in self.queries[start:i]) + ".")
                start = i
        return lines

    def __repr__(self) -> str:
        return f"Sample({self}; {len(self.example)} facts)"


class Dataset(BaseDataset):
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

    def add_example(self, example: Union[Sequence[Atom], Rule]) -> "Dataset":
        """Facts; or a labelled example `R.xor[0] <= R.xy[[0, 0]]` (PyNeuraLogic's: the head
        is its query with the target, the body its facts), which is a sample of its own."""
        if isinstance(example, Rule):
            if example.offset is not None or (example.metadata is not None and len(example.metadata)):
                raise ValueError(f"a labelled example is `R.q[target] <= facts`, got {example.to_str()}")
            self.samples.append(Sample(example.head, example.body))
            return self
        self._examples.append([_check_fact(f, "an example") for f in example])
        return self

    def add_examples(self, examples: Iterable[Sequence[Atom]]) -> "Dataset":
        for e in examples:
            self.add_example(e)
        return self

    def add_query(self, query: Union[Atom, Rule]) -> "Dataset":
        """A query atom, or a weighted query `R.name[importance] <= R.q(...)[target]`."""
        if isinstance(query, Rule):
            _weighted_query(query)  # checked now, kept as written
            self._queries.append(query)
        else:
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
        weighted = any(isinstance(q, Rule) for q in self._queries)  # needs named lines
        if not self.samples and not weighted:
            if not self._examples:
                raise ValueError("the dataset is empty")
            examples = [_facts_line(e, i) for i, e in enumerate(self._examples)]
            queries = [q.to_str() + "." for q in self._queries]
            self.to_samples()  # checks the pairing
            return "\n".join(examples) + "\n", "\n".join(queries) + ("\n" if queries else "")
        examples, queries = [], []
        for i, sample in enumerate(self.to_samples()):
            examples.append(f"s{i} :- " + _facts_line(sample.example, i))
            queries.extend(sample.query_lines(f"s{i}"))
        return "\n".join(examples) + "\n", "\n".join(queries) + ("\n" if queries else "")

    def dump(self, queries_fp: Any, examples_fp: Any, sep: str = "\n") -> None:
        examples, queries = self.to_text()
        examples_fp.write(examples)
        queries_fp.write(queries)

    def __str__(self) -> str:
        return "\n".join(str(s) for s in self.to_samples())


def _number(x: float) -> str:
    """The shortest text that reads back as x (`0.25`, `2`)."""
    return repr(int(x)) if float(x).is_integer() else repr(float(x))


def _facts_line(facts: Sequence[Atom], index: int) -> str:
    if not facts:
        raise ValueError(f"sample {index} has no facts; an example needs at least one")
    for item in facts:
        if not isinstance(item, Atom):
            # PyNeuraLogic grounds example rules with the sample; lrnn grounds the template's
            raise ValueError(
                f"sample {index}'s example holds the rule {item}: lrnn's examples hold facts, its rules "
                "go in the template (for PDDLDataset: include_actions=False and "
                "template.add_rules(pddl_dataset.action_rules(delete_effects=False)))"
            )
    return ", ".join(f.to_str() for f in facts) + "."


class FileDataset(BaseDataset):
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
    """One graph in tensor form, as PyNeuraLogic's `Data`: node features `x` (a row per
    node), `edge_index` ([[sources...], [targets...]]), `y` (a label per node, or one for
    the graph), optional `edge_attr` (a value or vector per edge) and `y_mask` (the nodes
    to query). Lists, NumPy arrays and torch tensors are accepted."""

    def __init__(self, x: Any, edge_index: Any, y: Any = 0.0, edge_attr: Any = None, y_mask: Any = None):
        self.x = _array(x, "x")
        if self.x.ndim == 1:
            self.x = self.x.reshape(-1, 1)
        if self.x.ndim != 2:
            raise ValueError(f"x holds one feature row per node, got an array of shape {self.x.shape}")
        edges = _array(edge_index, "edge_index")
        if edges.size and (edges.ndim != 2 or edges.shape[0] != 2):
            raise ValueError(f"edge_index is [[sources...], [targets...]], got an array of shape {edges.shape}")
        self.edge_index = edges.astype(np.int64).reshape(2, -1) if edges.size else np.zeros((2, 0), np.int64)
        self.y = _array(y, "y")
        self.edge_attr = None if edge_attr is None else _array(edge_attr, "edge_attr")
        if self.edge_attr is not None and len(self.edge_attr) != self.edge_index.shape[1]:
            raise ValueError(f"{len(self.edge_attr)} edge attributes for {self.edge_index.shape[1]} edges")
        self.y_mask = None if y_mask is None else [int(i) for i in np.ravel(_array(y_mask, "y_mask"))]
        # whether each was given as floats: the logic form prints values as written
        # (PyNeuraLogic: [0, 1] stays `[0, 1]`, a float tensor prints `[0.0, 1.0]`)
        self._floats = {"x": _written_as_floats(x), "y": _written_as_floats(y),
                        "edge_attr": edge_attr is not None and _written_as_floats(edge_attr)}

    def to_logic_form(
        self,
        feature_name: str = "node_feature",
        edge_name: str = "edge",
        output_name: str = "predict",
        one_hot_encode_labels: bool = False,
        one_hot_decode_features: bool = False,
        one_hot_decode_edge_features: bool = False,
        max_classes: int = 1,
    ) -> tuple:
        """(queries, facts) in PyNeuraLogic's logic form. Facts are fixed values: `<1>
        edge(u, v)` (valued by edge_attr), `<x_i> node_feature(i)` (a scalar for one
        feature). `one_hot_decode_features` writes a one-hot row as `<1> node_feature_k(i)`
        (k its argmax), `one_hot_decode_edge_features` likewise `<1> edge_k(u, v)`. The query
        is `predict[y]` for a graph label, or `predict(i)[y_i]` for each node of y_mask;
        `one_hot_encode_labels` turns a class index into a one-hot vector of max_classes."""
        from lrnn.core.atoms import R as _R

        facts: List[Atom] = []
        for k, (u, v) in enumerate(self.edge_index.T.tolist()):
            if self.edge_attr is None:
                facts.append(_R.get(edge_name)(u, v)[1].fixed())
            elif one_hot_decode_edge_features:
                facts.append(_R.get(f"{edge_name}_{int(np.argmax(self.edge_attr[k]))}")(u, v)[1].fixed())
            else:
                facts.append(_R.get(edge_name)(u, v)[_value(self.edge_attr[k], self._floats["edge_attr"])].fixed())
        for i, row in enumerate(self.x):
            if one_hot_decode_features:
                facts.append(_R.get(f"{feature_name}_{int(np.argmax(row))}")(i)[1].fixed())
            else:
                facts.append(_R.get(feature_name)(i)[_value(row, self._floats["x"])].fixed())

        def query(label: Any, node: Optional[int]) -> Atom:
            relation = _R.get(output_name) if node is None else _R.get(output_name)(node)
            label = np.asarray(label, dtype=np.float64)
            if one_hot_encode_labels:
                if label.size != max_classes:
                    index = int(np.ravel(label)[0])
                    if not 0 <= index < max_classes:
                        raise ValueError(f"label {index} is not a class index below max_classes={max_classes}")
                    label = np.zeros(max_classes)
                    label[index] = 1.0
                    return relation[label]
                return relation[_value(label, self._floats["y"])]
            # a one-entry label is a float (PyNeuraLogic's float(y)), a vector as given
            return relation[float(np.ravel(label)[0]) if label.size == 1 else _value(label, self._floats["y"])]

        if self.y_mask is not None:
            return [query(self.y[i], i) for i in self.y_mask], facts
        return query(self.y, None), facts

    @staticmethod
    def from_pyg(data: Any) -> List["Data"]:
        """One Data per mask of a PyTorch Geometric Data (train, test, val; all nodes
        without masks)."""
        masks = [getattr(data, m) for m in ("train_mask", "test_mask", "val_mask") if getattr(data, m, None) is not None]
        edge_attr = getattr(data, "edge_attr", None)
        if not masks:
            return [Data(data.x, data.edge_index, data.y, edge_attr)]
        return [Data(data.x, data.edge_index, data.y, edge_attr, np.nonzero(_array(m, "mask"))[0]) for m in masks]


def _array(value: Any, what: str) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{what} must be numbers (a list, NumPy array or tensor): {e}") from None


def _value(row: np.ndarray, floats: bool = True) -> Any:
    """A row as the Python numbers it was given as: floats, or ints where it held ints."""
    row = np.asarray(row, dtype=np.float64)
    if not floats:
        row = row.astype(np.int64)
    return row.reshape(-1)[0].item() if row.size == 1 else row.tolist()


def _written_as_floats(value: Any) -> bool:
    """Whether numbers were given as floats: a float dtype, or any float in a (nested) list."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None:
        is_floating = getattr(dtype, "is_floating_point", None)  # a torch dtype
        return bool(is_floating) if is_floating is not None else np.dtype(dtype).kind == "f"
    if isinstance(value, (list, tuple)):
        return any(_written_as_floats(v) for v in value)
    return isinstance(value, float)


class TensorDataset(ConvertibleDataset):
    """Graphs in tensor form (PyNeuraLogic's TensorDataset): `to_dataset()` turns each
    Data into samples (one per masked node, or one per graph); models take it directly."""

    def __init__(
        self,
        data: Sequence[Data],
        one_hot_encode_labels: bool = False,
        one_hot_decode_features: bool = False,
        one_hot_decode_edge_features: bool = False,
        number_of_classes: int = 1,
        feature_name: str = "node_feature",
        edge_name: str = "edge",
        output_name: str = "predict",
    ):
        self.data = list(data)
        self.one_hot_encode_labels = one_hot_encode_labels
        self.one_hot_decode_features = one_hot_decode_features
        self.one_hot_decode_edge_features = one_hot_decode_edge_features
        self.number_of_classes = number_of_classes
        self.feature_name, self.edge_name, self.output_name = feature_name, edge_name, output_name

    def add_data(self, data: Data) -> None:
        self.data.append(data)

    def to_dataset(self) -> Dataset:
        dataset = Dataset()
        for d in self.data:
            queries, facts = d.to_logic_form(
                self.feature_name, self.edge_name, self.output_name, self.one_hot_encode_labels,
                self.one_hot_decode_features, self.one_hot_decode_edge_features, self.number_of_classes,
            )
            for q in queries if isinstance(queries, list) else [queries]:
                dataset.add(q, facts)
        return dataset

    def to_text(self) -> tuple:
        return self.to_dataset().to_text()

    def __len__(self) -> int:
        return len(self.to_dataset())

    def __getitem__(self, index: int) -> Sample:
        return self.to_dataset()[index]

    def __iter__(self):
        return iter(self.to_dataset())


class Mode(enum.Enum):
    """How CSVDataset makes samples of its files: ONE_EXAMPLE (every file's facts in one
    example), EXAMPLE_PER_SOURCE (an example per file), ZIP (an example per row number,
    with that row of every file)."""

    ONE_EXAMPLE = "one"
    EXAMPLE_PER_SOURCE = "example_per_source"
    ZIP = "zip"


class CSVFile:
    """Facts from a CSV file (a path or an open text stream): one `relation_name(terms)`
    per row, terms the row's cells (or `term_columns`, by index or header name) stripped
    and lower-cased, an empty cell written as `replace_empty_column`. The fact's value is
    its `value_column` cell (through `value_mapper` if given) or `default_value`; neither:
    a plain fact. `header` reads the first row as column names; `skip_rows` rows are then
    skipped and at most `n_rows` read."""

    def __init__(
        self,
        relation_name: str,
        csv_source: Union[TextIO, str, os.PathLike],
        sep: str = ",",
        value_column: Union[str, int, None] = None,
        default_value: Union[float, int, None] = None,
        value_mapper: Optional[Callable[[str], Any]] = None,
        term_columns: Optional[Sequence[Union[str, int]]] = None,
        header: bool = False,
        skip_rows: int = 0,
        n_rows: Optional[int] = None,
        replace_empty_column: Union[str, float, int] = 0,
    ):
        self.relation_name = relation_name
        self.csv_source = csv_source
        self.sep = sep
        self.value_column = value_column
        self.default_value = default_value
        self.value_mapper = value_mapper
        self.term_columns = None if term_columns is None else list(term_columns)
        self.header = header
        self.skip_rows = skip_rows
        self.n_rows = n_rows
        self.replace_empty_column = replace_empty_column

    @staticmethod
    def _find_index_in_header(header: Sequence[str], column: Union[str, int]) -> int:
        for index, name in enumerate(header):
            if name == column:
                return index
        raise ValueError(f"column {column!r} is not in the CSV header {list(header)}")

    def _lines(self) -> List[str]:
        if isinstance(self.csv_source, (str, os.PathLike)):
            with open(self.csv_source) as f:
                return f.read().splitlines()
        return self.csv_source.read().splitlines()

    def to_logic_form(self) -> List[Atom]:
        from lrnn.core.atoms import R as _R

        lines = self._lines()
        value_column, term_columns = self.value_column, self.term_columns
        if self.header:
            if not lines:
                return []
            names = [c.strip() for c in lines.pop(0).strip().split(self.sep)]
            if value_column is not None:
                value_column = self._find_index_in_header(names, value_column)
            if term_columns is not None:
                term_columns = [self._find_index_in_header(names, c) for c in term_columns]
        relation = _R.get(self.relation_name)
        facts: List[Atom] = []
        for number, line in enumerate(lines[self.skip_rows:], start=self.skip_rows + 1):
            if not line.strip():
                break  # the data ends at the first empty line
            cells = [c.strip() for c in line.strip().split(self.sep)]
            columns = term_columns if term_columns is not None else range(len(cells))
            try:
                terms = [cells[i].lower() if cells[i] else self.replace_empty_column for i in columns]
            except (IndexError, TypeError):
                raise ValueError(f"CSV row {number} ({line.strip()!r}) has no column {list(columns)}") from None
            fact = relation(*terms)
            value = self._value(cells, value_column, number)
            facts.append(fact if value is None else fact[value])
            if self.n_rows is not None and len(facts) == self.n_rows:
                break
        return facts

    def _value(self, cells: List[str], value_column: Any, number: int) -> Any:
        if value_column is None:
            return None if self.default_value is None else float(self.default_value)
        if not isinstance(value_column, int) or not 0 <= value_column < len(cells):
            raise ValueError(f"CSV row {number} has no value column {value_column!r}")
        cell = cells[value_column]
        if not cell:
            cell = self.default_value if self.default_value is not None else self.replace_empty_column
        if self.value_mapper is not None:
            return self.value_mapper(cell)
        try:
            return float(cell)
        except ValueError:
            raise ValueError(f"CSV row {number}: value {cell!r} is not a number (give value_mapper=)") from None


class CSVDataset(ConvertibleDataset):
    """Samples from CSV files (`csv_files`, the examples' facts) and optionally a CSV of
    queries (`csv_queries`: one sample per query), made as `mode` says."""

    def __init__(self, csv_files: Union[CSVFile, Sequence[CSVFile]], csv_queries: Optional[CSVFile] = None,
                 mode: Mode = Mode.ONE_EXAMPLE):
        self.csv_files = [csv_files] if isinstance(csv_files, CSVFile) else list(csv_files)
        self.csv_queries = csv_queries
        self.mode = Mode(mode)

    def add_csv_file(self, file: CSVFile) -> None:
        self.csv_files.append(file)

    def set_query_csv_file(self, file: CSVFile) -> None:
        self.csv_queries = file

    def to_dataset(self) -> Dataset:
        queries = self.csv_queries.to_logic_form() if self.csv_queries is not None else []
        if self.mode is Mode.ONE_EXAMPLE:
            examples = [[fact for source in self.csv_files for fact in source.to_logic_form()]]
        elif self.mode is Mode.EXAMPLE_PER_SOURCE:
            examples = [source.to_logic_form() for source in self.csv_files]
        else:
            per_source = [source.to_logic_form() for source in self.csv_files]
            if len({len(facts) for facts in per_source}) > 1:
                raise ValueError(f"Mode.ZIP needs files of as many rows, got {[len(f) for f in per_source]}")
            examples = [list(row) for row in zip(*per_source)]
        if not queries:
            return Dataset([Sample(None, example) for example in examples])
        if len(examples) == 1:
            return Dataset([Sample(q, examples[0]) for q in queries])
        if len(examples) != len(queries):
            raise ValueError(f"{len(examples)} examples and {len(queries)} queries: give one query per example")
        return Dataset([Sample(q, example) for q, example in zip(queries, examples)])
