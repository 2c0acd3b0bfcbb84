"""What a built model returns (lrnn.Model): the training history, an evaluation, the folds
of a cross-validation and one sample's ground network, with the per-output results
PyNeuraLogic's train() and test() give."""

from __future__ import annotations

import os
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import numpy as np

from lrnn.nn.loss import CrossEntropy, ErrorFunction


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
