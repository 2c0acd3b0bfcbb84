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
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np
import torch

from lrnn.core.atoms import Atom
from lrnn.core.values import Weight
from lrnn.dataset import Dataset, Sample


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


class _LrnnFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, layer: "NeuraLogic", example: List[Atom], facts: List[Atom], *tensors: torch.Tensor) -> torch.Tensor:
        # example: every fact; facts: those whose values are the first len(facts) tensors
        fact_count = len(facts)
        layer._load_weights(tensors[fact_count:])
        built = layer.model.build_dataset(Dataset([Sample(layer.output_relation, example)]))
        outputs = layer.model.test(built).outputs
        value = np.asarray(outputs[0] if isinstance(outputs, list) else outputs[0], dtype=np.float64)
        ctx.layer, ctx.built, ctx.facts, ctx.fact_count = layer, built, facts, fact_count
        ctx.shape = value.shape
        ctx.fact_shapes = [t.shape for t in tensors[:fact_count]]
        ctx.dtypes = [t.dtype for t in tensors]
        return torch.tensor(value, dtype=layer.dtype)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Any:
        layer = ctx.layer
        seed = [np.ascontiguousarray(grad_output.detach().cpu().numpy(), dtype=np.float64).reshape(-1).tolist()]
        result = layer.model._require_built().vector_jacobian(ctx.built._prepared, 0, seed)
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
                 settings: Any = None, dtype: torch.dtype = torch.float32):
        super().__init__()
        if not callable(to_logic):
            raise TypeError(f"to_logic must be a function of the inputs returning facts, got {to_logic!r}")
        self.model = template.build(settings)
        self.input_facts = list(input_facts)
        self.output_relation = output_relation
        self.to_logic = to_logic
        self.dtype = dtype
        learnable = [(name, value) for name, value, is_learnable in self.model._require_built().parameters() if is_learnable]
        self._weight_names = [name for name, _ in learnable]
        self.weights = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.tensor(np.asarray(value), dtype=dtype)) for _, value in learnable]
        )

    def _load_weights(self, values: Sequence[torch.Tensor]) -> None:
        engine = self.model._require_built()
        for name, value in zip(self._weight_names, values):
            engine.set_parameter(name, np.ascontiguousarray(value.detach().cpu().numpy(), dtype=np.float64))

    def forward(self, *inputs: Any, **kwargs: Any) -> torch.Tensor:
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
