"""A dataset built against one model (lrnn.Model.build_dataset) and its samples: what
train/test/forward take to skip rebuilding, with the learnable example facts of the data."""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import numpy as np


class IncompatibleKeys(NamedTuple):
    """What BuiltDataset.load_state_dict could not match up, in torch's shape."""

    missing_keys: List[str]
    unexpected_keys: List[str]


class ExampleParameter:
    """One learnable example fact of a built dataset: its `value` (a float, list or list of
    lists), `index` (the engine's running weight index: it changes from one build to the
    next, so the ground literal is the key) and `name` (`$name` when the example named the
    weight, shared by every fact that writes it; else the literal)."""

    __slots__ = ("literal", "index", "name", "value")

    def __init__(self, literal: str, index: int, name: str, value: Any):
        self.literal, self.index, self.name, self.value = literal, index, name, value

    def __repr__(self) -> str:
        return f"ExampleParameter({self.literal}, index={self.index}, value={self.value})"


def _count(n: int, singular: str, plural: Optional[str] = None) -> str:
    """`1 sample`, `3 samples`."""
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


def _as_python(value: np.ndarray) -> Any:
    """A weight value as PyNeuraLogic gives it: a float, a list, or a list of rows."""
    array = np.asarray(value, dtype=np.float64)
    return float(array) if array.ndim == 0 else array.tolist()


class BuiltDataset:
    """A dataset grounded and neuralized against one model (PyNeuraLogic's
    `model.build_dataset(dataset)`): pass it to train/test/forward to skip rebuilding.
    Built with `learnable_facts=True`, its valued example facts are parameters of the data:
    they train with the model, and `state_dict()` / `load_state_dict()` save and restore
    them keyed by ground literal (the model's own state_dict does not hold them)."""

    def __init__(self, model: Any, prepared: Any, source: Optional[Tuple[str, str, str, str]] = ("", "", "", ""),
                 batch_size: Optional[int] = None):
        self._model = model
        self._prepared = prepared
        # PyNeuraLogic's build_dataset(batch_size=): trained in this many samples per step,
        # in the dataset's order; None: the settings' batch size.
        self.batch_size = batch_size
        # (examples text, queries text, examples file, queries file): what the pictures
        # (lrnn.draw) ground again through the public API.
        self._source = source

    def __len__(self) -> int:
        return len(self._prepared)

    def __repr__(self) -> str:
        queries = len(self._prepared.outputs())
        batch = "" if self.batch_size is None else f", batch_size={self.batch_size}"
        return f"<lrnn.BuiltDataset ({_count(len(self), 'sample')}, {_count(queries, 'query', 'queries')}{batch})>"

    def __getitem__(self, index: int) -> "BuiltSample":
        n = len(self)
        if isinstance(index, bool) or not isinstance(index, int) or not -n <= index < n:
            raise IndexError(f"sample {index!r} of a built dataset of {n} samples")
        return BuiltSample(self, index % n)

    def _example_parameters(self) -> Dict[str, ExampleParameter]:
        """Ground literal to its learnable fact (empty without learnable_facts)."""
        engine = self._model._require_built()
        return {literal: ExampleParameter(literal, index, name, _as_python(value))
                for literal, index, name, value in engine.example_parameters(self._prepared)}

    def state_dict(self) -> Dict[str, Any]:
        """{"weights": {ground literal: value}} of the learnable example facts (values as
        floats or lists); {"weights": {}} for a dataset built without learnable_facts."""
        return {"weights": {literal: p.value for literal, p in self._example_parameters().items()}}

    def load_state_dict(self, state_dict: Dict[str, Any], strict: bool = True) -> IncompatibleKeys:
        """Sets the learnable example facts from a state_dict()-shaped dict (or a bare
        {literal: value}). `strict` (default) refuses literals this dataset lacks or leaves
        out; strict=False carries over the ones in common (trained embeddings onto another
        dataset) and reports the rest as missing/unexpected keys. Two literals sharing one
        named weight given different values are always refused."""
        parameters = self._example_parameters()
        weights = state_dict["weights"] if "weights" in state_dict else state_dict
        unexpected = [literal for literal in weights if literal not in parameters]
        missing = [literal for literal in parameters if literal not in weights]
        if strict and (unexpected or missing):
            raise ValueError(
                f"parameters do not match this dataset: {len(missing)} missing {missing[:3]}, {len(unexpected)} "
                f"unexpected {unexpected[:3]}; strict=False carries over only the literals the two have in common"
            )
        shared: Dict[str, Tuple[str, np.ndarray]] = {}
        for literal, value in weights.items():
            if literal in unexpected:
                continue
            array = np.ascontiguousarray(value, dtype=np.float64)
            seen = shared.get(parameters[literal].name)
            if seen is not None and (seen[1].shape != array.shape or not np.array_equal(seen[1], array)):
                raise ValueError(f"{seen[0]} and {literal} share one weight, so they cannot be given different values")
            shared[parameters[literal].name] = (literal, array)
        engine = self._model._require_built()
        for literal, array in shared.values():
            current = np.asarray(parameters[literal].value, dtype=np.float64)
            if np.squeeze(array).shape != np.squeeze(current).shape:
                raise ValueError(f"learnable fact {literal} has shape {current.shape}, the state dict gives {array.shape}")
            engine.set_example_parameter(self._prepared, literal, np.ascontiguousarray(array.reshape(-1)))
        return IncompatibleKeys(missing, unexpected)

    def neuralize(self) -> "BuiltDataset":
        """PyNeuraLogic's second step after `model.ground(dataset)`: lrnn grounds and
        neuralizes in one step, so the grounded dataset is already this built one."""
        return self

    @property
    def queries(self) -> List[str]:
        """The ground query atom of every output, in output order."""
        return [o[1] for o in self._prepared.outputs()]

    @property
    def targets(self) -> List[Optional[np.ndarray]]:
        return [None if not o[2] else np.array(o[2]) for o in self._prepared.outputs()]


class BuiltSample:
    """One sample of a BuiltDataset, to look at: `draw()` (PyNeuraLogic's sample.draw) and
    Jupyter's inline picture of its neural network."""

    _draws_as = "built_sample"  # how lrnn.draw recognises it without importing this module

    def __init__(self, dataset: BuiltDataset, index: int):
        self._dataset = dataset
        self.index = index

    def draw(self, filename: Optional[str] = None, draw_ipython: bool = True, img_type: Optional[str] = None,
             value_detail: int = 0, graphviz_path: Optional[str] = None, *, show: Optional[bool] = None,
             **kwargs: Any) -> Any:
        """The sample's neural network as a picture (lrnn.draw.draw_sample): SVG by default;
        PyNeuraLogic's spelling `draw(show=False)` gives its default, PNG bytes."""
        from lrnn.draw import draw_sample

        if show is not None:
            draw_ipython = show
        if img_type is None:
            img_type = "svg" if show is None else "png"
        return draw_sample(self, filename, draw_ipython, img_type, value_detail, graphviz_path, **kwargs)

    def _repr_svg_(self) -> Optional[str]:
        from lrnn.draw import repr_svg

        return repr_svg(self)

    @property
    def importance(self) -> float:
        """The importance of this sample's queries (a weighted query's `R.name[0.25] <= ...`,
        the factor on their loss), as the engine built it; 1 for plain queries. A sample whose
        queries have different importances has no single one: ValueError."""
        prepared = self._dataset._prepared
        found = {imp for (sample, _, _), imp in zip(prepared.outputs(), prepared.importances()) if sample == self.index}
        if len(found) > 1:
            raise ValueError(f"sample {self.index} holds queries of importances {sorted(found)}, not one")
        return found.pop() if found else 1.0

    @property
    def _java_sample(self) -> "_SampleView":
        """PyNeuraLogic's tests read `sample._java_sample.getImportance()`: the same number
        as `importance`, read from this lrnn sample (there is no Java sample)."""
        return _SampleView(self)

    def __repr__(self) -> str:
        return f"BuiltSample({self.index} of {len(self._dataset)})"


class _SampleView:
    """The accessor PyNeuraLogic's code reads on a built sample (`getImportance()`)."""

    __slots__ = ("_sample",)

    def __init__(self, sample: BuiltSample):
        self._sample = sample

    def getImportance(self) -> float:  # noqa: N802 (PyNeuraLogic's Java name)
        return self._sample.importance
