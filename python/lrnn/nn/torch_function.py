"""An lrnn model as a differentiable step of a PyTorch model (PyNeuraLogic's
`neuralogic.nn.torch_function.NeuraLogic`).

    layer = NeuraLogic(model, [R.xy[8,]], R.xor, lambda x: [R.xy[x]])
    y = layer(torch_tensor)        # the lrnn model's output for facts made from the tensor

`to_logic(*inputs)` turns the module's inputs into the example's facts, each tensor (or a
tensor computed from one) written as a fact's value (`R.xy[tensor]`). The output is the
value of the query `output_relation` on that example. Gradients flow back to the tensors
of the facts (through their value) and to the lrnn model's own weights, which this module
holds as torch Parameters: a torch optimizer over `module.parameters()` trains them with
the rest of the torch model. Differences from PyNeuraLogic, on purpose: PyNeuraLogic
steps the lrnn weights with its own optimizer inside backward(); here torch's optimizer
does, so one optimizer, one learning rate and torch's zero_grad/step govern every weight,
and torch.autograd.gradcheck holds (float64).

`batched=True` (docs/neurosymbolic.md "Batched neural predicates"): the inputs carry a leading batch
dimension, `to_logic` is called once per row (with that row of each input), and the output
is a `[B]` tensor (`[B, ...]` for a vector or matrix output) from one engine call per group
of rows of the same structure: rows whose facts differ only in their values share one
grounding and one execution plan (lrnn::FactRows), their values go in as one array and their
gradients come back as one. Outputs and gradients are those of the unbatched layer.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from lrnn.core.atoms import Atom
from lrnn.nn._exit import EmptiedAtExit
from lrnn.core import values as _values
from lrnn.core.values import Weight
from lrnn.dataset.samples import Dataset, Sample

# A tensor written as a fact's value goes straight to a _TensorWeight (lrnn.core.values).
_values.tensor_types = frozenset((torch.Tensor,))


class _FactTensor(torch.Tensor):
    """A tensor that records itself when turned into a NumPy array, which is how a fact
    takes its value (`R.xy[tensor]`): the recorded tensors are the facts' values with their
    autograd history."""

    _recorder: Optional[List[Tuple[torch.Tensor, np.ndarray]]] = None

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        plain = self.as_subclass(torch.Tensor)
        array = plain.detach().cpu().numpy()
        if dtype is not None:
            array = array.astype(dtype)
        if _FactTensor._recorder is not None:
            _FactTensor._recorder.append((plain, np.asarray(array, dtype=np.float64)))
        return array


class _Saved(EmptiedAtExit):
    """What a backward pass needs from its forward pass (see EmptiedAtExit)."""

    __slots__ = ("layer", "built", "rows")

    def __init__(self, layer: Any, built: Any = None, rows: Any = None):
        super().__init__()
        self.layer, self.built, self.rows = layer, built, rows


class _LrnnFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, layer: "NeuraLogic", example: List[Atom], facts: List[Atom], *tensors: torch.Tensor) -> torch.Tensor:
        # example: every fact; facts: those whose values are the first len(facts) tensors
        fact_count = len(facts)
        layer._load_weights(tensors[fact_count:])
        built = layer.model.build_dataset(Dataset([Sample(layer.output_relation, example)]))
        outputs = layer.model.test(built).outputs
        value = np.asarray(outputs[0] if isinstance(outputs, list) else outputs[0], dtype=np.float64)
        ctx.saved = _Saved(layer, built=built)
        ctx.facts, ctx.fact_count = facts, fact_count
        ctx.shape = value.shape
        ctx.fact_shapes = [t.shape for t in tensors[:fact_count]]
        ctx.dtypes = [t.dtype for t in tensors]
        return torch.tensor(value, dtype=layer.dtype)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Any:
        layer = ctx.saved.layer
        seed = [np.ascontiguousarray(grad_output.detach().cpu().numpy(), dtype=np.float64).reshape(-1).tolist()]
        result = layer.model._require_built().vector_jacobian(ctx.saved.built._prepared, 0, seed)
        atom_gradient = dict(zip(result["atoms"], result["gradients"]))
        grads: List[Optional[torch.Tensor]] = []
        for fact, shape, dtype in zip(ctx.facts, ctx.fact_shapes, ctx.dtypes):
            g = atom_gradient.get(fact.atom_str())
            g = np.zeros(tuple(shape)) if g is None else np.asarray(g).reshape(tuple(shape))
            grads.append(torch.tensor(g, dtype=dtype))
        parameter_gradient = dict(result["parameter_gradients"])
        for name, parameter in zip(layer._weight_names, layer.weights):
            g = np.asarray(parameter_gradient[name]).reshape(tuple(parameter.shape))
            grads.append(torch.tensor(g, dtype=parameter.dtype))
        return (None, None, None, *grads)


class NeuraLogic(torch.nn.Module):
    """`template` (a Model or Template) built with `settings`; `input_facts` show the
    example's facts (their shapes; PyNeuraLogic builds its sample from them), `to_logic`
    makes the facts of each call from its inputs, `output_relation` is the query."""

    def __init__(self, template: Any, input_facts: Sequence[Atom], output_relation: Atom, to_logic: Callable,
                 settings: Any = None, dtype: torch.dtype = torch.float32, batched: bool = False):
        super().__init__()
        if not callable(to_logic):
            raise TypeError(f"to_logic must be a function of the inputs returning facts, got {to_logic!r}")
        self.model = template.build(settings)
        self.input_facts = list(input_facts)
        self.output_relation = output_relation
        self.to_logic = to_logic
        self.dtype = dtype
        self.batched = batched
        # structure key -> (FactRows, the position in to_logic's facts of each of its columns)
        self._structures: Dict[Tuple[Any, ...], Tuple[Any, List[int]]] = {}
        learnable = [(name, value) for name, value, is_learnable in self.model._require_built().parameters() if is_learnable]
        self._weight_names = [name for name, _ in learnable]
        self.weights = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.tensor(np.asarray(value), dtype=dtype)) for _, value in learnable]
        )

    def _load_weights(self, values: Sequence[torch.Tensor]) -> None:
        engine = self.model._require_built()
        for name, value in zip(self._weight_names, values):
            engine.set_parameter(name, np.ascontiguousarray(value.detach().cpu().numpy(), dtype=np.float64))

    def _structure(self, facts: List[Atom], key: Tuple[Any, ...]) -> Tuple[Any, List[int]]:
        """The FactRows of rows with these facts' structure (grounded and planned on first
        use), with the position among `facts` of each of its columns."""
        known = self._structures.get(key)
        if known is not None:
            return known
        built = self.model.build_dataset(Dataset([Sample(self.output_relation, facts)]))
        rows = self.model._require_built().fact_rows(built._prepared)
        position = {}
        for k, fact in enumerate(facts):
            position.setdefault(fact.atom_str(), k)
        columns = []
        for literal in rows.facts():
            if literal not in position:
                raise ValueError(f"the engine reads the fact {literal}, which to_logic's facts do not name as written")
            columns.append(position[literal])
        self._structures[key] = (rows, columns)
        return rows, columns

    def _forward_batched(self, inputs: Sequence[Any], kwargs: Dict[str, Any]) -> torch.Tensor:
        batch = _batch_size(inputs)
        sources = [x.contiguous() for x in inputs if isinstance(x, torch.Tensor)]
        row_sources = _RowSources(sources)
        # Each input's rows; a tensor's from one unbind (indexing it row by row cost more).
        rows_of: List[Any] = []
        t = 0
        for x in inputs:
            rows_of.append(sources[t].unbind(0) if isinstance(x, torch.Tensor) else x)
            t += isinstance(x, torch.Tensor)
        groups: Dict[Tuple[Any, ...], List[Any]] = {}
        for i in range(batch):
            recorded: List[Tuple[Weight, torch.Tensor]] = []
            _values.tensor_values = recorded
            try:
                facts = list(self.to_logic(*[x[i] for x in rows_of], **kwargs))
            finally:
                _values.tensor_values = None
            tensor_of = {id(w): tensor for w, tensor in recorded}
            key = tuple([_structure_key(fact) for fact in facts])
            groups.setdefault(key, []).append((i, facts, tensor_of))
        self._load_weights(self.weights)
        outputs, order = [], []
        for key, rows_of_group in groups.items():
            if key not in self._structures:  # its first row is written out to ground the structure
                _check_row_finite(*rows_of_group[0])
            rows, columns = self._structure(rows_of_group[0][1], key)
            for i, facts, tensor_of in rows_of_group:
                for k in columns:
                    weight = facts[k].weight
                    tensor = tensor_of.get(id(weight))
                    if tensor is not None:
                        row_sources.add(tensor)
                    else:
                        row_sources.add_constant(weight.data)
                order.append(i)
            index, array = row_sources.gather((len(rows_of_group), rows.row_size))
            _check_finite(array, rows_of_group)
            outputs.append(_RowsFunction.apply(self, rows, index, array, *self.weights, *row_sources.tensors()))
        if len(outputs) == 1:
            return outputs[0]
        stacked = torch.cat(outputs)
        return stacked[torch.argsort(torch.tensor(order))]

    def forward(self, *inputs: Any, **kwargs: Any) -> torch.Tensor:
        if self.batched:
            return self._forward_batched(inputs, kwargs)
        tracked = [x.as_subclass(_FactTensor) if isinstance(x, torch.Tensor) else x for x in inputs]
        recorded: List[Tuple[torch.Tensor, np.ndarray]] = []
        _FactTensor._recorder = recorded
        try:
            facts = list(self.to_logic(*tracked, **kwargs))
        finally:
            _FactTensor._recorder = None
        fact_tensors = _match_facts(facts, recorded)
        values = [t for _, t in fact_tensors]
        return _LrnnFunction.apply(self, facts, [f for f, _ in fact_tensors], *values, *self.weights)


class _RowsFunction(torch.autograd.Function):
    """One group of rows of one structure: `array` [n, row_size] (float64), entry k of it
    entry index[k] of the sources (the inputs, the pieces and the constants, flattened and
    concatenated: _RowSources) -> outputs [n, ...]. The backward pass scatters the engine's
    gradients of the rows' values back onto the sources with one bincount: gathering through
    torch ops (a cat, dtype copies, an index_select and their backward nodes) cost more than
    the engine's work on the batch."""

    @staticmethod
    def forward(ctx: Any, layer: "NeuraLogic", rows: Any, index: np.ndarray, array: np.ndarray,
                *tensors: torch.Tensor) -> torch.Tensor:
        count = len(layer._weight_names)
        weights, sources = tensors[:count], tensors[count:]
        layer._load_weights(weights)
        outputs = rows.forward(array)
        ctx.saved, ctx.array, ctx.index = _Saved(layer, rows=rows), array, index
        ctx.weight_values = [w.detach() for w in weights]
        ctx.sources = [(s.shape, s.dtype, s.numel()) for s in sources]
        return torch.from_numpy(outputs.reshape((array.shape[0], *rows.output_shape))).to(layer.dtype)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Any:
        layer, rows = ctx.saved.layer, ctx.saved.rows
        layer._load_weights(ctx.weight_values)  # the weights of the forward pass
        seed = np.ascontiguousarray(grad_output.detach().cpu().numpy(), dtype=np.float64).reshape(ctx.array.shape[0], -1)
        fact_grads, parameter_grads = rows.backward(ctx.array, seed)
        by_name = dict(parameter_grads)
        grads: List[Optional[torch.Tensor]] = [
            torch.from_numpy(np.asarray(by_name[name]).reshape(tuple(w.shape))).to(w.dtype)
            for name, w in zip(layer._weight_names, ctx.weight_values)]
        wanted = ctx.needs_input_grad[4 + len(grads):]
        total = sum(n for _, _, n in ctx.sources)
        # a value read twice (two facts of one entry) gets both gradients
        scattered = np.bincount(ctx.index, weights=fact_grads.reshape(-1), minlength=total) if any(wanted) else None
        begin = 0
        for (shape, dtype, n), want in zip(ctx.sources, wanted):
            # each gradient its own memory (a float64 one would otherwise share the scatter's)
            grads.append(torch.from_numpy(scattered[begin:begin + n]).view(shape).to(dtype, copy=True) if want else None)
            begin += n
        return (None, None, None, None, *grads)


def _batch_size(inputs: Sequence[Any]) -> int:
    sizes = {len(x) for x in inputs if isinstance(x, (torch.Tensor, list, tuple, np.ndarray))}
    if len(sizes) != 1:
        raise ValueError("NeuraLogic(batched=True) takes inputs with one leading batch dimension (tensors, or "
                         f"lists with an entry per row); got leading sizes {sorted(sizes)}")
    return sizes.pop()


def _check_row_finite(i: int, facts: List[Atom], tensor_of: Dict[int, torch.Tensor]) -> None:
    """Row i's tensor values are finite numbers, as every value written is
    (lrnn.core.values): else the error names the row of the batch and its fact."""
    for fact in facts:
        tensor = tensor_of.get(id(fact.weight))
        if tensor is not None and not bool(torch.isfinite(tensor.detach()).all()):
            raise ValueError(f"weights and values must be finite numbers: row {i} of the batch gives {fact.atom_str()} "
                             "a value that is not (NaN or infinity)")


def _check_finite(values: np.ndarray, rows_of_group: List[Any]) -> None:
    """A batch's gathered fact values are finite numbers (each row's tensors are not checked
    one by one as they are written: lrnn.core.values._TensorWeight)."""
    finite = np.isfinite(values)
    if finite.all():
        return
    r = int(np.flatnonzero(~finite.all(axis=1))[0])
    _check_row_finite(*rows_of_group[r])
    raise ValueError(f"weights and values must be finite numbers: row {rows_of_group[r][0]} of the batch has a fact "
                     "value that is not")


_ROW_VALUE_KINDS = frozenset((Weight.SCALAR, Weight.VECTOR, Weight.MATRIX))


def _structure_key(fact: Any) -> Any:
    """What a fact contributes to its row's structure: its atom and shape when a row gives
    its value (a learnable value as the engine sees it), else the whole fact (a fact without
    value, or a fixed one, is part of the structure)."""
    if not isinstance(fact, Atom):
        raise TypeError(f"to_logic must return facts such as R.xy[tensor], got {fact!r}")
    w = fact.weight
    if w is not None and not w.is_fixed and w.name is None and w.kind in _ROW_VALUE_KINDS:
        return (fact.atom_str(), w.rows, w.cols)
    return str(fact)


class _RowSources:
    """Where each fact value of the rows comes from, as positions in one flat float64 source:
    the inputs themselves (a value that is a view of an input row is read from the input by
    index, so a batch's values are one gather with one backward), tensors computed by
    to_logic (kept with their autograd history), and constants (written in the facts).
    A group's values are added in row-major order as runs of consecutive positions (a
    value that is a row of an input is one run), and gather() expands the runs with NumPy:
    a Python list of every position cost more than the engine's work on the batch."""

    def __init__(self, inputs: Sequence[torch.Tensor]):
        self.inputs = list(inputs)
        # per input: (its data's first byte, one past its last, its first position in the
        # source, dtype, requires_grad, bytes per entry, entries, the input)
        self.spans: List[Tuple[int, int, int, torch.dtype, bool, int, int, torch.Tensor]] = []
        self.length = 0
        for x in self.inputs:
            begin = x.data_ptr()
            self.spans.append((begin, begin + x.numel() * x.element_size(), self.length, x.dtype, x.requires_grad,
                               x.element_size(), x.numel(), x))
            self.length += x.numel()
        self.pieces: List[torch.Tensor] = []
        self.constants: List[float] = []
        # the current group's runs: first position (constant k: -(k + 1)) and length
        self.starts: List[int] = []
        self.lengths: List[int] = []

    def add(self, tensor: torch.Tensor) -> None:
        """The next value: a tensor, read from the input it is a view of, else a piece."""
        pointer = tensor.data_ptr()
        for begin, end, first, dtype, grad, size, count, x in self.spans:
            # a view of x carrying x's gradient (not detached), at a whole entry of x
            if not (begin <= pointer < end) or tensor.dtype != dtype or tensor.requires_grad != grad \
                    or (grad and tensor.grad_fn is None) or (pointer - begin) % size:
                continue
            base = (pointer - begin) // size
            if tensor.is_contiguous():  # a row of x, or a run in one: its entries are consecutive
                n = tensor.numel()
                if base + n <= count:
                    self.starts.append(first + base)
                    self.lengths.append(n)
                    return
                continue
            index = _view_index(tensor, x, base)
            if index is not None:
                self.starts.extend(first + i for i in index)
                self.lengths.extend([1] * len(index))
                return
        flat = tensor.reshape(-1)
        self.pieces.append(flat)
        self.starts.append(self.length)
        self.lengths.append(flat.numel())
        self.length += flat.numel()

    def add_constant(self, values: np.ndarray) -> None:
        """The next value, fixed: placed after every input and piece by gather()."""
        flat = np.asarray(values, dtype=np.float64).reshape(-1).tolist()
        self.starts.append(-(len(self.constants) + 1))
        self.lengths.append(len(flat))
        self.constants.extend(flat)

    def gather(self, shape: Tuple[int, int]) -> Tuple[np.ndarray, np.ndarray]:
        """The current group's values: their positions in the sources (tensors()) and the
        values as a [rows, row_size] float64 array; starts the next group."""
        starts, lengths = np.asarray(self.starts, dtype=np.int64), np.asarray(self.lengths, dtype=np.int64)
        self.starts, self.lengths = [], []
        if not lengths.sum():  # rows without valued facts
            return np.zeros(0, dtype=np.int64), np.zeros(shape)
        starts = np.where(starts < 0, self.length - 1 - starts, starts)  # constants after the pieces
        # run j covers starts[j] .. starts[j] + lengths[j] - 1 at offsets o_j .. o_j + lengths[j] - 1
        offsets = np.cumsum(lengths) - lengths
        index = np.repeat(starts - offsets, lengths) + np.arange(int(lengths.sum()))
        # through torch's casts: an input may be an integer, bool or bfloat16 tensor (NumPy has no bfloat16)
        parts = [t.detach().reshape(-1).to(torch.float64).cpu().numpy() for t in self.tensors()]
        source = np.concatenate(parts) if len(parts) > 1 else parts[0]
        return index, source[index].reshape(shape)

    def tensors(self) -> List[torch.Tensor]:
        """The sources in the order of their positions: the inputs, the pieces, the constants."""
        constants = [torch.tensor(self.constants, dtype=torch.float64)] if self.constants else []
        return self.inputs + self.pieces + constants


def _view_index(tensor: torch.Tensor, x: torch.Tensor, base: int) -> Optional[List[int]]:
    """The positions in x (contiguous) of the entries of tensor, a strided view of x whose
    first entry is x's entry `base`, row-major; None when they fall outside x."""
    if base + _extent(tensor) > x.numel() or any(st < 0 for st in tensor.stride()):
        return None
    if tensor.numel() == 1:
        return [base]
    if tensor.dim() == 1:
        step = tensor.stride(0)
        return list(range(base, base + step * tensor.shape[0], step))
    return torch.arange(x.numel()).as_strided(tensor.shape, tensor.stride(), base).reshape(-1).tolist()


def _extent(tensor: torch.Tensor) -> int:
    """One past the last storage element a view reads, from its first."""
    return 1 + sum((n - 1) * s for n, s in zip(tensor.shape, tensor.stride()) if n > 0)


def _match_facts(facts: List[Any], recorded: List[Tuple[torch.Tensor, np.ndarray]]) -> List[Tuple[Atom, torch.Tensor]]:
    """Each fact whose value came from a tensor, with that tensor (in order); facts with
    constant values stay constant."""
    pairs, k = [], 0
    for fact in facts:
        if not isinstance(fact, Atom):
            raise TypeError(f"to_logic must return facts such as R.xy[tensor], got {fact!r}")
        weight = fact.weight
        if weight is None or weight.kind not in (Weight.SCALAR, Weight.VECTOR, Weight.MATRIX) or k >= len(recorded):
            continue
        tensor, array = recorded[k]
        if np.array_equal(array.reshape(-1), weight.data.reshape(-1)):
            pairs.append((fact, tensor))
            k += 1
    if k != len(recorded):
        raise ValueError("to_logic turned a tensor into something other than one fact's value; "
                         "write each tensor as a value: R.xy[tensor]")
    return pairs


__all__ = ["NeuraLogic"]
