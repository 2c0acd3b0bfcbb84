"""A built model: the template compiled by the C++ engine, trained and evaluated there.

    model = template.build(Settings(optimizer=Adam(lr=0.01), epochs=300, seed=1))
    model.train(dataset)                 # tqdm bar per epoch; returns the history
    outputs = model(dataset)             # forward: one NumPy row per query
    model.test(dataset).accuracy
    model.save("m.json"); lrnn.Model.load("m.json")
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from lrnn.core.settings import ENGINE_OPTIONS, Settings
from lrnn.core.template import Template
from lrnn.dataset import Dataset, FileDataset, Sample
from lrnn.nn.init import Glorot, Initializer
from lrnn.nn.loss import MSE, CrossEntropy, ErrorFunction
from lrnn.optim import Adam, AdamW, Optimizer

def _core():
    from lrnn import _core

    return _core


def _defaults() -> Dict[str, Any]:
    """lrnn::Settings' defaults (include/lrnn/training.hpp), the same for the CLI, the C++
    API and here: a model with default Settings trains exactly as `lrnn train` does."""
    return _core().default_settings()


_manual_seed: Optional[int] = None


def manual_seed(seed: int) -> None:
    """The seed of every later build whose Settings give none (PyNeuraLogic's manual_seed)."""
    global _manual_seed
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"manual_seed takes an integer >= 0, got {seed!r}")
    _manual_seed = seed


def _seed_of(settings: Settings) -> int:
    if settings.seed is not None:
        return settings.seed
    return _manual_seed if _manual_seed is not None else _defaults()["seed"]


def _error_of(loss: ErrorFunction, output: np.ndarray, target: np.ndarray) -> float:
    """One output's error summed over its entries (PyNeuraLogic's per-sample error)."""
    y = np.ravel(np.asarray(output, dtype=np.float64))
    t = np.ravel(np.asarray(target, dtype=np.float64))
    if isinstance(loss, CrossEntropy):
        if y.size == 1:
            z, label = float(y[0]), float(t[0])
            return float(max(z, 0.0) + np.log1p(np.exp(-abs(z))) - label * z)
        lse = float(np.max(y) + np.log(np.sum(np.exp(y - np.max(y)))))
        if t.size == 1:
            return lse - float(y[int(t[0])])
        return float(-np.sum(t * (y - lse)))
    return float(np.sum((y - t) ** 2))


def _results(targets: List[Any], outputs: List[Any], loss: ErrorFunction,
             listed: Optional[List[bool]] = None) -> List[Tuple[Any, Any, float]]:
    """(target, output, error) per output; `listed[i]`: output i's target was written as a
    list, so a one-entry value comes back as a one-entry array, as PyNeuraLogic's vector."""
    results = []
    for i, (target, output) in enumerate(zip(targets, outputs)):
        as_list = bool(listed[i]) if listed is not None else False
        value = _plain(output, as_list)
        if target is None:
            results.append((None, value, float("nan")))
        else:
            results.append((_plain(target, as_list), value, _error_of(loss, output, target)))
    return results


def _plain(value: Any, listed: bool = False) -> Any:
    """A float for a one-entry value, else a NumPy array; a one-entry array when `listed`
    (its query's target was written as a list: PyNeuraLogic's value is a vector there)."""
    array = np.asarray(value, dtype=np.float64)
    if array.size == 1:
        return array.reshape(1) if listed else float(array.reshape(-1)[0])
    return array


class Parameters(dict):
    """A model's weights by lrnn name (iteration, `items()`, `len` see only these), that also
    answers PyNeuraLogic's `parameters()` form: `["weights"]` is {index: value} of the
    learnable weights numbered as PyNeuraLogic numbers them, `["weight_names"]` {index: name}
    (`w<index>` for unnamed weights, as PyNeuraLogic prints them). A value replaced in either
    form is what `Model.load_state_dict` loads."""

    _PNL_KEYS = ("weights", "weight_names")

    def __init__(self, by_name: Dict[str, np.ndarray], numbering: List[Tuple[int, str]]):
        super().__init__(by_name)
        self.numbering = list(numbering)
        self._pnl_weights = {index: by_name[name] for index, name in numbering}
        self._pnl_originals = dict(self._pnl_weights)
        self._pnl_names = {
            index: (name[1:] if name.startswith("$") else f"w{index}") for index, name in numbering
        }

    def __getitem__(self, key: Any) -> Any:
        if key == "weights" and not dict.__contains__(self, key):
            return self._pnl_weights
        if key == "weight_names" and not dict.__contains__(self, key):
            return self._pnl_names
        return super().__getitem__(key)

    def __contains__(self, key: Any) -> bool:
        return key in self._PNL_KEYS or super().__contains__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def by_name(self) -> Dict[str, Any]:
        """The weights to load: by name, with any value replaced under a PyNeuraLogic index
        taking the place of its named value."""
        out = dict(self)
        for index, name in self.numbering:
            value = self._pnl_weights.get(index)
            if value is not self._pnl_originals[index]:
                out[name] = value
        unknown = sorted(set(self._pnl_weights) - set(self._pnl_originals), key=str)
        if unknown:
            raise KeyError(f"the model has no learnable weight with PyNeuraLogic index {unknown[0]}")
        return out


class WeightsByNameOrIndex(dict):
    """Weights by lrnn name (what iteration and `items()` see), also read and written by
    PyNeuraLogic's weight index: `weights[0]` is the weight PyNeuraLogic numbers 0."""

    def __init__(self, by_name: Dict[str, Any], index_to_name: Dict[int, str]):
        super().__init__(by_name)
        self._index_to_name = index_to_name

    def _name(self, key: Any) -> Any:
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if int(key) not in self._index_to_name:
                raise KeyError(f"the model has no learnable weight with PyNeuraLogic index {key} "
                               f"(it has {sorted(self._index_to_name)})")
            return self._index_to_name[int(key)]
        return key

    def __getitem__(self, key: Any) -> Any:
        return super().__getitem__(self._name(key))

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(self._name(key), value)

    def __contains__(self, key: Any) -> bool:
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            return int(key) in self._index_to_name
        return super().__contains__(key)


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


def _core_split_args(spec: Any) -> Any:
    """A QuerySplitSpec (or None) as the engine's SplitArgs."""
    from lrnn import _core

    args = _core.SplitArgs()
    if spec is not None:
        args.parts, args.fractions, args.seed = spec.parts(), list(spec.fractions or ()), spec.seed
    return args


class BuiltDataset:
    """A dataset grounded and neuralized against one model (PyNeuraLogic's
    `model.build_dataset(dataset)`): pass it to train/test/forward to skip rebuilding.
    Built with `learnable_facts=True`, its valued example facts are parameters of the data:
    they train with the model, and `state_dict()` / `load_state_dict()` save and restore
    them keyed by ground literal (the model's own state_dict does not hold them)."""

    def __init__(self, model: "Model", prepared: Any, source: Optional[Tuple[str, str, str, str]] = ("", "", "", ""),
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


_RANKING = ("mrr", "hits@1", "hits@3", "hits@10")


class TrainHistory:
    """Per-epoch training (and test) metrics, as PyNeuraLogic's TrainerHistory."""

    def __init__(self, reports: List[Dict[str, Any]], stopped_early: bool, seconds: float,
                 results: Optional[List[Tuple[Any, Any, float]]] = None, count_results: bool = False,
                 best: Optional[Dict[str, Any]] = None):
        # PyNeuraLogic's train() result: (target, output, error) of every output in the last
        # epoch, the output as computed in that epoch's forward pass; history[i] is the i-th.
        self.results = list(results or [])
        self.epochs = [r["epoch"] for r in reports]
        self.train_losses = [r["train"]["loss"] for r in reports]
        self.train_accuracies = [r["train"]["accuracy"] for r in reports]
        # Validation: a query split's validation queries, else the test set of train(test_dataset=)
        # (PyNeuraLogic's fit(val_dataset) spelling).
        val_key = "val" if any("val" in r for r in reports) else "test"
        self.val_losses = [r[val_key]["loss"] for r in reports if val_key in r]
        self.val_accuracies = [r[val_key]["accuracy"] for r in reports if val_key in r]
        self.val_epochs = [r["epoch"] for r in reports if val_key in r]
        # A query split's test queries (or the test set), every epoch.
        self.test_losses = [r["test"]["loss"] for r in reports if "test" in r]
        self.test_accuracies = [r["test"]["accuracy"] for r in reports if "test" in r]
        # AUC (binary targets; link prediction's held-out links against fixed negatives) and
        # link prediction's filtered ranking ({"mrr", "hits@1", "hits@3", "hits@10"}), per epoch.
        self.val_aucs = [r[val_key].get("auc") for r in reports if val_key in r]
        self.test_aucs = [r["test"].get("auc") for r in reports if "test" in r]
        self.val_rankings = [{k: r[val_key][k] for k in _RANKING if k in r[val_key]} for r in reports
                             if val_key in r and "mrr" in r[val_key]]
        self.test_rankings = [{k: r["test"][k] for k in _RANKING if k in r["test"]} for r in reports
                              if "test" in r and "mrr" in r["test"]]
        self.learning_rates = [r["lr"] for r in reports]
        self.stopped_early = stopped_early
        self.seconds = seconds
        # With validation queries: the epoch of the lowest validation loss and its report
        # ({"epoch", "train", "val", "test", ...}); None otherwise.
        self.best = best
        self.best_epoch = best["epoch"] if best else None
        # A static graph dataset's training returns PyNeuraLogic's list of every epoch's
        # results (count_results), any other training the last epoch's.
        self._count_results = count_results

    def __len__(self) -> int:
        """The number of (target, output, error) results, as PyNeuraLogic's list of them
        (`len(history.epochs)` counts the epochs)."""
        return len(self.results)

    def __getitem__(self, index: int) -> Tuple[Any, Any, float]:
        return self.results[index]

    def __iter__(self) -> Iterator[Tuple[Any, Any, float]]:
        return iter(self.results)

    def __repr__(self) -> str:
        last = f", last loss {self.train_losses[-1]:.6g}" if self.train_losses else ""
        return f"TrainHistory({len(self.epochs)} epochs{last})"

    def plot(self, filename: Optional[Union[str, os.PathLike]] = None) -> Any:
        """Loss and accuracy per epoch, train and (when evaluated) validation, side by side
        with matplotlib; saved to `filename` when given. Returns the matplotlib Figure."""
        try:
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise ImportError(
                "TrainHistory.plot() needs matplotlib (pip install matplotlib); "
                "`lrnn train ... --report report.html` draws the same curves without it"
            ) from e
        fig, (loss_ax, acc_ax) = plt.subplots(1, 2, figsize=(10, 3.6))
        for ax, train, val, name in ((loss_ax, self.train_losses, self.val_losses, "loss"),
                                     (acc_ax, self.train_accuracies, self.val_accuracies, "accuracy")):
            ax.plot(self.epochs, train, label=f"train {name}")
            if val:
                ax.plot(self.val_epochs, val, label=f"validation {name}")
            ax.set_xlabel("epoch")
            ax.set_title(f"{name} per epoch")
            ax.legend()
        acc_ax.set_ylim(0, 1.02)
        fig.tight_layout()
        if filename is not None:
            fig.savefig(os.fspath(filename))
        return fig


class Evaluation:
    """Outputs and metrics of a model on a dataset."""

    def __init__(self, result: Dict[str, Any], queries: List[str], targets: List[Any]):
        self.loss = result["loss"]
        self.accuracy = result["accuracy"]
        self.auc = result["auc"]
        self.count = result["count"]
        self.outputs = _stack(result["outputs"])
        self.predictions = _stack(result["predictions"])
        self.queries = queries
        self.targets = targets
        self.listed_targets = list(result.get("listed_targets", [False] * len(queries)))
        # With a query split: {"train": {...}, "val": {...}, "test": {...}} of each part's
        # queries (loss, accuracy, auc, count); None without one.
        self.splits = result.get("splits")

    # PyNeuraLogic's test() returns the outputs: iterating an Evaluation gives them.
    def __iter__(self) -> Iterator[Any]:
        return iter(self.outputs)

    def __len__(self) -> int:
        return len(self.queries)

    def __getitem__(self, index: int) -> Any:
        return self.outputs[index]

    def __repr__(self) -> str:
        return f"Evaluation(loss={self.loss:.6g}, accuracy={self.accuracy:.4g}, {len(self.queries)} outputs)"


def _stack(rows: List[np.ndarray]) -> Union[np.ndarray, List[np.ndarray]]:
    """Outputs as one array when they share a shape: (n,) for scalars, (n, k) for vectors."""
    if not rows:
        return np.zeros(0)
    first = rows[0].shape
    if all(r.shape == first for r in rows):
        stacked = np.stack(rows)
        return stacked.reshape(len(rows)) if stacked[0].size == 1 else stacked
    return list(rows)


class CrossValidation:
    """Per-fold results of Model.cross_validate: `accuracies` (test accuracy per fold),
    `mean` and `std` (population std, as np.std), `folds` (dicts with train/test metrics
    and sizes), `fold_of_sample` (the test fold of every sample), `epoch_seconds`.
    With `test_curve=True`: `accuracies_by_epoch` ([fold, epoch] test accuracy after each
    epoch), `mean_by_epoch` / `std_by_epoch` over the folds, and `best_epoch` (1-based) with
    `best_mean` / `best_std`: the epoch whose mean is highest, the GIN paper's selection
    (chosen on the test folds, so optimistic; `mean` is the final epoch's). None without."""

    def __init__(self, result: Dict[str, Any]):
        self.k: int = result["k"]
        self.seed: int = result["seed"]
        self.folds: List[Dict[str, Any]] = result["folds"]
        self.fold_of_sample = np.asarray(result["fold_of_sample"], dtype=np.int64)
        self.accuracies = np.array([f["test"]["accuracy"] for f in self.folds])
        self.mean: float = result["mean_accuracy"]
        self.std: float = result["std_accuracy"]
        self.epoch_seconds: float = result["epoch_seconds"]
        self.accuracies_by_epoch = self.mean_by_epoch = self.std_by_epoch = None
        self.best_epoch: Optional[int] = None
        self.best_mean: Optional[float] = None
        self.best_std: Optional[float] = None
        if "best_epoch" in result:
            self.accuracies_by_epoch = np.array([[m["accuracy"] for m in f["test_by_epoch"]] for f in self.folds])
            self.mean_by_epoch = np.asarray(result["mean_accuracy_by_epoch"])
            self.std_by_epoch = np.asarray(result["std_accuracy_by_epoch"])
            self.best_epoch = result["best_epoch"]
            self.best_mean = result["best_epoch_mean_accuracy"]
            self.best_std = result["best_epoch_std_accuracy"]

    def __len__(self) -> int:
        return len(self.folds)

    def __repr__(self) -> str:
        best = "" if self.best_epoch is None else f"; best epoch {self.best_epoch}: {self.best_mean:.4f} ± {self.best_std:.4f}"
        return f"CrossValidation({self.k} folds: test accuracy {self.mean:.4f} ± {self.std:.4f}{best})"


def _sample_set(dataset: Any) -> Any:
    """The samples of any dataset Model accepts, held by the engine (for cross-validation)."""
    core = _core()
    if hasattr(dataset, "_lrnn_samples"):
        return dataset._lrnn_samples()
    if isinstance(dataset, FileDataset):
        if dataset.examples_file is None:
            raise ValueError("a FileDataset for cross-validation needs examples_file=")
        return core.SampleSet.from_files(dataset.examples_file, dataset.queries_file or "")
    if isinstance(dataset, (list, tuple)) and all(isinstance(s, Sample) for s in dataset):
        dataset = Dataset(list(dataset))
    if not isinstance(dataset, Dataset) and hasattr(dataset, "to_dataset"):  # TensorDataset, CSVDataset
        dataset = dataset.to_dataset()
    if isinstance(dataset, Dataset):
        return core.SampleSet.from_text(*dataset.to_text())
    raise TypeError(f"cross_validate takes a Dataset, FileDataset or lrnn.datasets dataset, got {type(dataset).__name__}")


class GroundNetwork:
    """The ground network of one sample after a forward and a backward pass: every atom
    neuron's value and the loss gradient with respect to it."""

    def __init__(self, data: Dict[str, Any]):
        self.atoms: List[str] = data["atoms"]
        self.values: List[np.ndarray] = data["values"]
        self.gradients: List[np.ndarray] = data["gradients"]
        self.is_fact = np.asarray(data["is_fact"], dtype=bool)
        self.num_ground_rules: int = data["num_ground_rules"]
        self.loss: float = data["loss"]
        self._index = {a: i for i, a in enumerate(self.atoms)}

    def __len__(self) -> int:
        return len(self.atoms)

    def value(self, atom: Any) -> np.ndarray:
        return self.values[self._index[_atom_key(atom)]]

    def gradient(self, atom: Any) -> np.ndarray:
        return self.gradients[self._index[_atom_key(atom)]]

    def __repr__(self) -> str:
        return f"GroundNetwork({len(self.atoms)} atoms, {self.num_ground_rules} ground rules)"


def _atom_key(atom: Any) -> str:
    from lrnn.core.atoms import Atom

    return atom.atom_str() if isinstance(atom, Atom) else str(atom)


class _HybridMethod:
    """`Model.load(path)` builds a model from a saved file; `model.load(path)` loads the
    saved weights into an already built model (PyNeuraLogic's instance method)."""

    def __init__(self, on_class: Any, on_instance: Any):
        self.on_class, self.on_instance = on_class, on_instance

    def __get__(self, obj: Any, cls: Any) -> Any:
        if obj is None:
            return self.on_class.__get__(cls, cls)
        return self.on_instance.__get__(obj, cls)


class Model(Template):
    """A template that can be built: `Model()` collects rules like a Template (PyNeuraLogic's
    newer name), `model.build(settings)` compiles it in place; `template.build(settings)`
    returns a new built Model.

    Threads: a built model may be trained, evaluated and read from several threads; its calls
    run one at a time (each as it would alone, training releases the GIL meanwhile), and two
    models train in parallel independently. Do not change one `Settings` object or rebuild a
    model while another thread uses it (docs/semantics.md "Threads")."""

    def __init__(self, *, template_file: Optional[str] = None, model_file: Optional[str] = None):
        super().__init__(template_file=template_file, model_file=model_file)
        self._engine: Any = None
        self._torch: Any = None  # lrnn.nn.torch_backend.TorchBackend when built with torch=True
        self.settings = Settings()

    # ---- building ----------------------------------------------------------------------------
    def build(self, settings: Optional[Settings] = None, torch: bool = False) -> "Model":
        """Compiles the model in place. `torch=True` (PyNeuraLogic's torch backend): the
        learnable weights are also torch Parameters (`tensor_parameters()`) and `model(built)`
        is a differentiable torch tensor of the outputs (lrnn.nn.torch_backend)."""
        settings = settings if settings is not None else Settings()
        seed = _seed_of(settings)
        # The memory budget before the engine allocates the weights (docs/cli.md "Memory budget").
        self._engine = _core().Model(str(self), settings.initializer.engine_spec(), seed,
                                     settings.options.get("max_memory"))
        self.settings = settings
        self._settings_proxy = settings.create_proxy()
        self._torch = None
        if torch:
            from lrnn.nn.torch_backend import TorchBackend

            self._torch = TorchBackend(self)
        return self

    def tensor_parameters(self) -> List[Any]:
        """The learnable weights as torch Parameters, in PyNeuraLogic's weight order (a model
        built with torch=True)."""
        if self._torch is None:
            raise NotImplementedError(
                "tensor_parameters() needs the torch backend: build the model with model.build(settings, torch=True)")
        return list(self._torch.tensors)

    def reset_parameters(self) -> None:
        """Every weight back to its initial value (the settings' initializer and seed draw
        the same numbers again)."""
        self._require_built()
        self.build(self.settings, torch=self._torch is not None)

    def _check_mutable(self) -> None:
        if getattr(self, "_engine", None) is not None:
            raise ValueError("cannot change a built model; change its template and build again")

    @property
    def built(self) -> bool:
        return self._engine is not None

    def _require_built(self) -> Any:
        if self._engine is None:
            raise ValueError("the model is not built: call model.build(settings) first")
        return self._engine

    # ---- data --------------------------------------------------------------------------------
    def build_dataset(self, dataset: Any, *, batch_size: Optional[int] = None, learnable_facts: bool = False,
                      progress: bool = False, train_mask: Any = None, val_mask: Any = None, test_mask: Any = None,
                      split: Optional[Tuple[float, float, float]] = None,
                      seed: Optional[int] = None) -> BuiltDataset:
        """Grounds and neuralizes `dataset` (PyNeuraLogic's keywords): `batch_size` samples
        per training step, taken in the dataset's order (default: the settings').
        `learnable_facts=True`: every valued example fact that is a neuron input becomes a
        parameter of this built dataset, trained with the model and saved with
        BuiltDataset.state_dict() (a fact written with a weight name, `R.emb(k)["e": 2,]`,
        shares that name's parameter). `progress` has no effect (building shows no bar).

        A query split (docs/big_graphs.md "Query splits"), as PyG's node masks split one graph:
        `train_mask`, `val_mask`, `test_mask` (boolean arrays, one entry per query of the
        dataset in order; numpy or torch), or `split=(train, val, test)` fractions drawn with
        `seed` (default: the settings' seed; the same split as `lrnn train --query-split`).
        Only training queries give gradient; validation and test queries are reported every
        epoch (TrainHistory.val_accuracies, .test_accuracies, .best) and by test() (.splits).
        Without train_mask, every query in neither other mask trains."""
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"build_dataset's batch_size must be an integer >= 1, got {batch_size!r}")
        if learnable_facts and isinstance(dataset, BuiltDataset):
            raise ValueError("build_dataset(learnable_facts=True) takes a dataset, not one already built")
        masks = (train_mask, val_mask, test_mask)
        if split is not None or any(m is not None for m in masks):
            if isinstance(dataset, BuiltDataset):
                raise ValueError("a query split is given when building: pass the dataset, not one already built")
            from lrnn.splits import QuerySplitSpec

            self._query_split = QuerySplitSpec(masks, split, _seed_of(self.settings) if seed is None else int(seed))
        try:
            built = self._build_dataset(dataset, learnable_facts)
        finally:
            self._query_split = None
        if batch_size is not None:
            built = BuiltDataset(self, built._prepared, built._source, batch_size)
        return built

    def build_static_dataset(self, dataset: Any, *, batch_size: int = 1, learnable_facts: bool = False,
                             progress: bool = False) -> Any:
        """PyNeuraLogic's static graph dataset (lrnn.core.builder.static_graph): samples of
        one structure, trained one at a time in order; train() on it returns every epoch's
        (target, output, error) of every sample."""
        from lrnn.core.builder.static_graph import build_static_graph_dataset

        return build_static_graph_dataset(self, dataset, batch_size=batch_size, learnable_facts=learnable_facts,
                                          progress=progress)

    def ground(self, dataset: Any, *, batch_size: Optional[int] = None, learnable_facts: bool = False,
               progress: bool = False) -> BuiltDataset:
        """PyNeuraLogic's ground(): lrnn grounds and neuralizes in one step, so this is
        build_dataset (the result is accepted wherever a grounded dataset is)."""
        return self.build_dataset(dataset, batch_size=batch_size, learnable_facts=learnable_facts, progress=progress)

    def _build_dataset(self, dataset: Any, learnable_facts: bool = False) -> BuiltDataset:
        engine = self._require_built()
        if isinstance(dataset, BuiltDataset):
            if dataset._model is not self:
                raise ValueError("this dataset was built for another model")
            return dataset
        engine.configure(self._config(None, None))  # grounding limits apply while building
        # build_dataset's query split, or one the dataset carries (lrnn.datasets.from_arrays' masks)
        spec = getattr(self, "_query_split", None)
        if spec is None and hasattr(dataset, "_lrnn_query_split"):
            spec = dataset._lrnn_query_split()
        split = _core_split_args(spec)
        if isinstance(dataset, FileDataset):
            if dataset.examples_file is None:
                raise ValueError("a FileDataset for training needs examples_file=")
            prepared = engine.prepare_files(dataset.examples_file, dataset.queries_file or "", learnable_facts, split)
            source = ("", "", os.fspath(dataset.examples_file), os.fspath(dataset.queries_file or ""))
        elif isinstance(dataset, Dataset):
            examples, queries = dataset.to_text()
            prepared = engine.prepare_text(examples, queries, learnable_facts, split)
            source = (examples, queries, "", "")
        elif hasattr(dataset, "_lrnn_samples"):  # lrnn.datasets: samples already held by the engine
            prepared = engine.prepare_samples(dataset._lrnn_samples(), learnable_facts, split)
            source = None  # held in C++, no text to draw a sample from
        elif isinstance(dataset, Sample):
            return self._build_dataset(Dataset([dataset]), learnable_facts)
        elif isinstance(dataset, (list, tuple)) and all(isinstance(s, Sample) for s in dataset):
            return self._build_dataset(Dataset(list(dataset)), learnable_facts)
        elif hasattr(dataset, "to_dataset"):  # TensorDataset, CSVDataset, ...: logic form first
            return self._build_dataset(dataset.to_dataset(), learnable_facts)
        else:
            raise TypeError(f"expected a Dataset, FileDataset or BuiltDataset, got {type(dataset).__name__}")
        return BuiltDataset(self, prepared, source)

    # ---- training ----------------------------------------------------------------------------
    def _config(self, epochs: Optional[int], batch_size: Optional[int]) -> Dict[str, Any]:
        s = self.settings
        defaults = _defaults()
        optimizer = s.optimizer
        config: Dict[str, Any] = {
            "epochs": int(epochs if epochs is not None else (s.epochs if s.epochs is not None else defaults["epochs"])),
            "optimizer": optimizer.kind,
            "lr": optimizer.initial_lr,
            "weight_decay": optimizer.weight_decay,
            "momentum": getattr(optimizer, "momentum", 0.0),
            "beta1": getattr(optimizer, "betas", (0.9, 0.999))[0],
            "beta2": getattr(optimizer, "betas", (0.9, 0.999))[1],
            "eps": getattr(optimizer, "eps", 1e-8),
            "loss": s.error_function.engine_name,
            "batch_size": int(batch_size if batch_size is not None else (s.batch_size or 0)),
            "seed": _seed_of(s),
        }
        config.update(optimizer.schedule_options())
        for key in ENGINE_OPTIONS + ("clip_grad_norm", "clip_grad_value"):
            if key in s.options:
                config[key] = s.options[key]
        if "dtype" in config and config["dtype"] is not None:
            from lrnn.core.settings import check_dtype

            config["dtype"] = check_dtype(config["dtype"])
        return config

    def train(
        self,
        dataset: Any = None,
        epochs: Optional[int] = None,
        *,
        batch_size: Optional[int] = None,
        test_dataset: Any = None,
        progress: bool = True,
        callback: Any = None,
    ) -> TrainHistory:
        """Trains for `epochs` (default: the settings' epochs, else one epoch as PyNeuraLogic's
        Model.train) and returns the history.
        A tqdm bar shows each epoch's loss unless progress=False. `callback(epoch_report)`
        may return False to stop early."""
        engine = self._require_built()
        if dataset is None:
            raise ValueError("model.train needs a dataset")
        from lrnn.core.builder.static_graph import StaticGraphDataset

        if isinstance(dataset, StaticGraphDataset):
            return self._train_static(dataset, epochs, test_dataset=test_dataset, progress=progress, callback=callback)
        train_set = self.build_dataset(dataset)
        test_set = None if test_dataset is None else self.build_dataset(test_dataset)
        # PyNeuraLogic's default: online training in the dataset's order, build_dataset's
        # batch_size (1 unless given) samples a step; Settings(batch_size=) or
        # train(batch_size=) ask for lrnn's shuffled minibatches instead.
        in_order = batch_size is None and self.settings.batch_size is None
        if in_order and self.settings.options.get("link_prediction"):
            in_order, batch_size = False, 0  # link prediction trains full batch: every link each epoch
        if in_order:
            batch_size = train_set.batch_size if train_set.batch_size is not None else 1
        if epochs is None and self.settings.epochs is None:
            epochs = 1  # PyNeuraLogic's Model.train: one epoch unless told (Settings(epochs=) or epochs=)
        config = self._config(epochs, batch_size)
        if in_order:
            config.setdefault("shuffle", False)
        bar = None
        if progress and config["epochs"] > 0:
            from tqdm.auto import tqdm

            bar = tqdm(total=config["epochs"], desc="training", unit="epoch", leave=True)

        def on_epoch(report: Dict[str, Any]) -> bool:
            if bar is not None:
                postfix = {"loss": f"{report['train']['loss']:.4g}", "acc": f"{report['train']['accuracy']:.3g}"}
                if "val" in report:
                    postfix["val_acc"] = f"{report['val']['accuracy']:.3g}"
                if "test" in report:
                    postfix["test_loss"] = f"{report['test']['loss']:.4g}"
                bar.set_postfix(postfix, refresh=False)
                bar.update(1)
            if callback is not None:
                return callback(report) is not False
            return True

        try:
            result = engine.train(train_set._prepared, None if test_set is None else test_set._prepared, config, on_epoch)
        finally:
            if bar is not None:
                bar.close()
        results = _results(train_set.targets, result["last_epoch_outputs"], self.settings.error_function,
                           train_set._prepared.listed_targets())
        if self._torch is not None:
            self._torch.pull()  # the Parameters follow the trained weights
        return TrainHistory(result["history"], result["stopped_early"], result["train_seconds"], results,
                            best=result.get("best"))

    def _train_static(self, dataset: Any, epochs: Optional[int], **kwargs: Any) -> TrainHistory:
        """A static graph dataset trains sample by sample, and PyNeuraLogic returns the
        results of every epoch (samples x epochs of them), not only the last."""
        if epochs is None:
            epochs = self.settings.epochs if self.settings.epochs is not None else 1
        reports, results, seconds, stopped = [], [], 0.0, False
        for _ in range(int(epochs)):
            history = self.train(dataset.built_dataset, 1, **kwargs)
            reports.extend({"epoch": e, "train": {"loss": l, "accuracy": a}, "lr": r}
                           for e, l, a, r in zip(history.epochs, history.train_losses, history.train_accuracies,
                                                 history.learning_rates))
            results.extend(history.results)
            seconds += history.seconds
            if history.stopped_early:
                stopped = True
                break
        return TrainHistory(reports, stopped, seconds, results, count_results=True)

    def loss(self, dataset: Any) -> float:
        """The dataset's loss reduced as the error function says (mean or sum): the number
        training descends, without training."""
        return float(self.test(dataset).loss)

    def validate(self, dataset: Any) -> List[Tuple[Any, Any, float]]:
        """(target, output, error) of every output, without training (PyNeuraLogic's
        validate): the error is the output's own, summed over its entries, not reduced
        over the dataset (torch's reduction="none")."""
        evaluation = self.test(dataset)
        outputs = evaluation.outputs if isinstance(evaluation.outputs, list) else list(evaluation.outputs)
        return _results(evaluation.targets, outputs, self.settings.error_function, evaluation.listed_targets)

    def fit(self, train_dataset: Any, val_dataset: Any = None, *, epochs: Optional[int] = None,
            batch_size: Optional[int] = None, silent: bool = False, **kwargs: Any) -> TrainHistory:
        """PyNeuraLogic's Trainer.fit spelling of train()."""
        return self.train(train_dataset, epochs, batch_size=batch_size, test_dataset=val_dataset,
                          progress=not silent, **kwargs)

    def cross_validate(
        self,
        dataset: Any,
        k: int = 10,
        *,
        seed: Optional[int] = None,
        epochs: Optional[int] = None,
        batch_size: Optional[int] = None,
        progress: bool = True,
        callback: Any = None,
        test_curve: bool = False,
    ) -> "CrossValidation":
        """Stratified k-fold cross-validation (`lrnn train --folds K`): samples are classed
        by their targets and dealt into k folds (seeded by `seed`, default the settings'
        seed); k fresh models, built from this template with these settings, each train on
        k-1 folds and are tested on the remaining one. This model's own weights are not
        used or changed. `callback(fold, epoch_report)` may return False to stop.
        `test_curve=True` also tests every fold after every epoch (the reports then carry
        `test`) and reports the mean test accuracy per epoch and its best epoch
        (CrossValidation); training is the same. Refused with early stopping (patience)."""
        engine = self._require_built()
        samples = _sample_set(dataset)
        config = self._config(epochs, batch_size)
        fold_seed = config["seed"] if seed is None else int(seed)
        bar = None
        if progress and config["epochs"] > 0:
            from tqdm.auto import tqdm

            bar = tqdm(total=config["epochs"] * k, desc=f"{k}-fold CV", unit="epoch", leave=True)

        def on_epoch(fold: int, report: Dict[str, Any]) -> bool:
            if bar is not None:
                bar.set_postfix({"fold": fold + 1, "loss": f"{report['train']['loss']:.4g}"}, refresh=False)
                bar.update(1)
            return True if callback is None else callback(fold, report) is not False

        try:
            result = engine.cross_validate(samples, config, int(k), fold_seed, on_epoch, bool(test_curve))
        finally:
            if bar is not None:
                bar.close()
        return CrossValidation(result)

    # ---- inference ---------------------------------------------------------------------------
    def test(self, dataset: Any) -> Evaluation:
        """Outputs, predictions and metrics (loss, accuracy, AUC) on a dataset. For one
        sample of a built dataset (`model.test(built[i])`, PyNeuraLogic's form) the output of
        its query (a list of them for several queries)."""
        engine = self._require_built()
        if isinstance(dataset, BuiltSample):
            return self._test_sample(dataset)
        if hasattr(dataset, "built_dataset"):  # a static graph dataset
            dataset = dataset.built_dataset
        built = self.build_dataset(dataset)
        result = engine.evaluate(built._prepared, self.settings.error_function.engine_name)
        return Evaluation(result, built.queries, built.targets)

    evaluate = test

    def _test_sample(self, sample: BuiltSample) -> Any:
        built = self._build_dataset(sample._dataset)
        # the engine evaluates a built set whole; the sample's outputs are picked from it
        mine = [k for k, o in enumerate(built._prepared.outputs()) if o[0] == sample.index]
        if not mine:
            raise ValueError(f"sample {sample.index} of the built dataset has no query")
        result = self._require_built().evaluate(built._prepared, self.settings.error_function.engine_name)
        values = [_plain(result["outputs"][k], result["listed_targets"][k]) for k in mine]
        return values[0] if len(values) == 1 else values

    def __call__(self, dataset: Any, train: bool = False) -> Union[np.ndarray, List[np.ndarray]]:
        """Forward pass: the raw output of every query, as one array ((n,) for scalar
        outputs, (n, k) for vectors) when the outputs share a shape. Training is
        `model.train(dataset)`: PyNeuraLogic's `model(dataset, train=True)` is refused
        with that pointer rather than run as a forward pass that updates nothing."""
        if train:
            raise TypeError(
                "model(dataset, train=True) is PyNeuraLogic's training call; in lrnn a call is a forward "
                "pass only: train with model.train(dataset) (or model.train(dataset, epochs=N)), "
                "then model(dataset) for the outputs"
            )
        if self._torch is not None:
            return self._torch.forward(dataset if isinstance(dataset, BuiltDataset) else self.build_dataset(dataset))
        return self.test(dataset).outputs

    forward = __call__

    def ground_network(self, dataset: Any, sample: int = 0) -> GroundNetwork:
        """The ground network of one sample of `dataset` with every atom neuron's value and
        gradient (after a forward and a backward pass of the loss)."""
        engine = self._require_built()
        built = self.build_dataset(dataset)
        if not 0 <= sample < len(built):
            raise IndexError(f"sample {sample} of a dataset of {len(built)}")
        return GroundNetwork(engine.ground_network(built._prepared, sample, self.settings.error_function.engine_name))

    # ---- parameters --------------------------------------------------------------------------
    def parameters(self) -> "Parameters":
        """Every weight by name (a copy): `$name` for named weights, else e.g. `rule2.body0`.
        The result also answers PyNeuraLogic's form: `["weights"]` (learnable weights by
        PyNeuraLogic's index) and `["weight_names"]`; `load_state_dict` takes either."""
        engine = self._require_built()
        triples = engine.parameters()
        by_name = {name: value for name, value, _learnable in triples}
        learnable = {name for name, _, is_learnable in triples if is_learnable}
        from lrnn.core.pnl_weights import pnl_numbering

        from lrnn.core.pnl_weights import declared_offsets

        numbering = [(i, n) for i, n in pnl_numbering(self._pnl_statements(), list(by_name),
                                                      declared_offsets(self._entries)) if n in learnable]
        return Parameters(by_name, numbering)

    def state_dict(self) -> Dict[str, Any]:
        """{"weights": by name, "learnable": by name, "weight_names": PyNeuraLogic's
        {index: name}}; "weights" also takes PyNeuraLogic's weight indices
        (`state["weights"][0] = ...` sets the weight numbered 0)."""
        engine = self._require_built()
        parameters = self.parameters()
        return {
            "weights": WeightsByNameOrIndex(parameters, dict(parameters.numbering)),
            "learnable": {name: learnable for name, _, learnable in engine.parameters()},
            "weight_names": parameters["weight_names"],
        }

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        engine = self._require_built()
        if isinstance(state_dict, Parameters):
            weights = state_dict.by_name()
        else:
            weights = state_dict.get("weights", state_dict)
            if any(isinstance(key, (int, np.integer)) and not isinstance(key, bool) for key in weights):
                weights = self._names_of_pnl_indices(weights)
        known = {name for name, _, _ in engine.parameters()}
        unknown = sorted(set(weights) - known)
        if unknown:
            raise KeyError(f"the model has no weights named {unknown}")
        current = {name: value for name, value, _ in engine.parameters()}
        for name, value in weights.items():
            value = np.ascontiguousarray(value, dtype=np.float64)
            # Same numbers of elements are not enough: a 3x2 array in a 2x3 weight would load
            # transposed-and-scrambled. Shapes must agree up to unit dimensions ((1, 3) ~ (3,)).
            if np.squeeze(value).shape != np.squeeze(current[name]).shape:
                from lrnn.errors import LrnnError

                raise LrnnError(
                    f"weight {name!r} has shape {np.shape(current[name])}, the state dict gives {value.shape}",
                    kind="shape",
                )
            engine.set_parameter(name, value)
        if self._torch is not None:
            self._torch.pull()

    def _pnl_statements(self) -> List[Tuple[Any, List[str], List[str]]]:
        """Each entry as (PyNeuraLogic's text of it or the DSL rule, its fact lines, its rule lines in the
        engine's text) - what `Template.__str__` writes, entry by entry."""
        from lrnn.core.atoms import Atom
        from lrnn.core.rules import Rule
        from lrnn.core.template import PredicateDecl, _helper_names
        from lrnn.nn.module.module import ModuleRule

        new_name = _helper_names(self._entries)
        out = []
        for e in self._entries:
            if isinstance(e, PredicateDecl):
                continue
            if isinstance(e, Atom):
                out.append(([str(e)], [str(e)], []))
            elif isinstance(e, Rule):
                out.append((e, [], e.lowered(new_name) if e.has_body_functions() else [str(e)]))
            elif isinstance(e, ModuleRule):
                out.append(([e.text], list(e.facts), list(e.rules)))
            else:
                out.append((list(e.facts) + list(e.rules), list(e.facts), list(e.rules)))
        return out

    def _names_of_pnl_indices(self, weights: Dict[Any, Any]) -> Dict[str, Any]:
        """A PyNeuraLogic state dict's weights (keyed by its weight index) keyed by lrnn name."""
        index_to_name = dict(self.parameters().numbering)
        out = {}
        for key, value in weights.items():
            if not isinstance(key, (int, np.integer)) or isinstance(key, bool):
                raise KeyError(f"a state dict mixes PyNeuraLogic indices and names: {key!r}")
            if int(key) not in index_to_name:
                raise KeyError(
                    f"the model has no learnable weight with PyNeuraLogic index {key} "
                    f"(it has {sorted(index_to_name)})"
                )
            out[index_to_name[int(key)]] = value
        return out

    def clone(self) -> "Model":
        """A new model with the same rules; a built model's clone is built with the same
        settings and holds a copy of its current weights."""
        copy = Model()
        copy._entries = list(self._entries)
        if self.built:
            copy.build(self.settings)
            copy.load_state_dict(self.state_dict())
        return copy

    __copy__ = clone

    # ---- files -------------------------------------------------------------------------------
    def save(self, path: Union[str, os.PathLike]) -> None:
        """Writes template, weights and training settings (JSON, through a temporary file)."""
        engine = self._require_built()
        engine.save(os.fspath(path), self._config(None, None))

    def _load_weights(self, path: Union[str, os.PathLike]) -> None:
        other = Model._load_model(path)
        self.load_state_dict(other.state_dict())

    @classmethod
    def _load_model(cls, path: Union[str, os.PathLike]) -> "Model":
        engine, template_text = _core().Model.load(os.fspath(path))
        model = cls()
        model._entries = list(Template.from_string(template_text, os.fspath(path))._entries)
        model._engine = engine
        return model

    load = _HybridMethod(_load_model, _load_weights)

    def __repr__(self) -> str:
        state = "built" if self.built else "not built"
        return f"<lrnn.Model ({state}, {self._statement_summary()})>\n{self}"


class Evaluator:
    """PyNeuraLogic's `get_evaluator(template, settings)`: builds the model and wraps the
    training loop. `train(dataset)` yields (total loss, samples) per epoch, or with
    generator=False returns the last epoch's pair."""

    def __init__(self, template: Template, settings: Optional[Settings] = None):
        self.settings = settings if settings is not None else Settings()
        self.model = template.build(self.settings)

    def build_dataset(self, dataset: Any) -> BuiltDataset:
        return self.model.build_dataset(dataset)

    def train(self, dataset: Any, *, generator: bool = True, epochs: Optional[int] = None) -> Any:
        built = self.build_dataset(dataset)
        epochs = epochs if epochs is not None else (self.settings.epochs or _defaults()["epochs"])

        def run() -> Iterator[Tuple[float, int]]:
            for _ in range(epochs):
                h = self.model.train(built, 1, progress=False)
                count = len(built.queries)
                yield h.train_losses[-1] * count, count

        if generator:
            return run()
        last = (0.0, 0)
        for last in run():
            pass
        return last

    def test(self, dataset: Any, *, generator: bool = True) -> Any:
        evaluation = self.model.test(dataset)
        outputs = evaluation.outputs
        return iter(outputs) if generator else outputs

    def state_dict(self) -> Dict[str, Any]:
        return self.model.state_dict()

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.model.load_state_dict(state)
