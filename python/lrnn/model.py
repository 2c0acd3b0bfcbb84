"""A built model: the template compiled by the C++ engine, trained and evaluated there.

    model = template.build(Settings(optimizer=Adam(lr=0.01), epochs=300, seed=1))
    model.train(dataset)                 # tqdm bar per epoch; returns the history
    outputs = model(dataset)             # forward: one NumPy row per query
    model.test(dataset).accuracy
    model.save("m.json"); lrnn.Model.load("m.json")
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from lrnn.core.settings import ENGINE_OPTIONS, Settings
from lrnn.core.template import Template
from lrnn.errors import UnderivableQueryWarning
from lrnn.engine.built import BuiltDataset, BuiltSample, ExampleParameter, IncompatibleKeys  # noqa: F401 (lrnn.model's names)
from lrnn.engine.parameters import Parameters, WeightsByNameOrIndex
from lrnn.engine.results import (  # noqa: F401 (lrnn.model's names)
    CrossValidation,
    Evaluation,
    GroundNetwork,
    TrainHistory,
    _plain,
    _results,
)
from lrnn.dataset.samples import Dataset, FileDataset, Sample
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


def _warn_underivable(prepared: Any) -> None:
    """Queries that no rule or fact derives in their sample output 0 whatever the weights
    (docs/semantics.md "Underivable queries"), as `lrnn train` warns too."""
    missing = prepared.underivable()
    if missing:
        listed = ", ".join(f"{query} (sample {sample})" for sample, query in missing[:3])
        warnings.warn(f"{len(missing)} of {len(prepared.outputs())} queries are derived by no rule or fact of their "
                      f"sample, so they output 0: {listed}{', ...' if len(missing) > 3 else ''}",
                      UnderivableQueryWarning, stacklevel=4)


def _seed_of(settings: Settings) -> int:
    if settings.seed is not None:
        return settings.seed
    return _manual_seed if _manual_seed is not None else _defaults()["seed"]


def _core_split_args(spec: Any) -> Any:
    """A QuerySplitSpec (or None) as the engine's SplitArgs."""
    from lrnn import _core

    args = _core.SplitArgs()
    if spec is not None:
        args.parts, args.fractions, args.seed = spec.parts(), list(spec.fractions or ()), spec.seed
    return args


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
        _warn_underivable(prepared)
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
