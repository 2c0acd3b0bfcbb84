"""PyNeuraLogic's torch backend (`model.build(settings, torch=True)`): the model's
learnable weights as torch Parameters (`model.tensor_parameters()`, in PyNeuraLogic's
weight order), and `model(built)` as a differentiable torch tensor of every query's output.
A torch optimizer over the Parameters trains the model: each forward pass loads their
current values into the engine, and backward gives each Parameter the exact gradient of the
torch loss (the engine's backward pass from the outputs' gradients, sample by sample).
`load_state_dict` on the model writes the loaded values into the Parameters too. As in
PyNeuraLogic, a forward pass clears the Parameters' gradients: a gradient is that of the
last forward pass's backward, not accumulated over several forward/backward rounds."""

from __future__ import annotations

import weakref
from typing import Any, Optional

import numpy as np
import torch


class _Outputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, backend: "TorchBackend", built: Any, *weights: torch.Tensor) -> torch.Tensor:
        backend.push()
        engine = backend.model._require_built()
        outputs = engine.evaluate(built._prepared, backend.model.settings.error_function.engine_name)["outputs"]
        listed = built._prepared.listed_targets()
        # a one-entry value is a scalar unless its target was written as a list (lrnn.engine.results._plain)
        values = [np.asarray(v, dtype=np.float64) for v in outputs]
        values = [v.reshape(()) if v.size == 1 and not listed[k] else v for k, v in enumerate(values)]
        shapes = {v.shape for v in values}
        if len(shapes) > 1:
            raise ValueError(f"the outputs have different shapes {sorted(shapes)}: they do not stack into one tensor")
        # weak references: the graph must not keep the engine alive (see TorchBackend.forward)
        ctx.backend, ctx.built = weakref.ref(backend), weakref.ref(built)
        return torch.tensor(np.stack(values) if values else np.zeros(0), dtype=backend.dtype)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        backend, built = ctx.backend(), ctx.built()
        if backend is None or built is None:
            raise RuntimeError("the lrnn model or built dataset of this output no longer exists")
        engine = backend.model._require_built()
        seeds = np.ascontiguousarray(grad.detach().cpu().numpy(), dtype=np.float64)
        owner = [o[0] for o in built._prepared.outputs()]
        total = {name: 0.0 for name in backend.names}
        for sample in sorted(set(owner)):
            mine = [seeds[k].reshape(-1).tolist() for k, s in enumerate(owner) if s == sample]
            if not any(np.any(np.asarray(m) != 0) for m in mine):
                continue  # this sample's outputs do not reach the loss
            result = engine.vector_jacobian(built._prepared, sample, mine)
            for name, g in result["parameter_gradients"]:
                if name in total:
                    total[name] = total[name] + np.asarray(g, dtype=np.float64)
        grads = [torch.tensor(np.reshape(total[name], tuple(w.shape)), dtype=w.dtype)
                 for name, w in zip(backend.names, backend.tensors)]
        return (None, None, *grads)


class TorchBackend:
    """The torch view of a built lrnn Model (see the module docstring)."""

    def __init__(self, model: Any, dtype: Optional[torch.dtype] = None):
        # The model holds its backend: a weak reference back leaves no cycle that keeps the
        # engine alive until the interpreter's last garbage collection.
        self._model = weakref.ref(model)
        self.dtype = dtype or torch.get_default_dtype()
        engine = model._require_built()
        normalised = [name[: -len(".norm_scale")] for name, _, _ in engine.parameters()
                      if not name.startswith("$") and name.endswith(".norm_scale")]
        if normalised:
            # Its passes are evaluation passes (running statistics): torch would train a
            # different function than Model.train does, without saying so.
            raise ValueError(f"the torch backend cannot train batch normalisation ({', '.join(normalised)} "
                             "[normalization=batch]): its passes use the running statistics; train with model.train")
        values = {name: value for name, value, learnable in engine.parameters() if learnable}
        # PyNeuraLogic's order: its weight indices (numbered as written), learnable ones only
        self.names = [name for _, name in sorted(model.parameters().numbering) if name in values]
        # float64, the engine's own precision: a torch optimizer steps exactly the engine's
        # weights (the outputs are in torch's default dtype, to meet torch's targets)
        self.tensors = [torch.nn.Parameter(torch.tensor(np.asarray(values[n], dtype=np.float64), dtype=torch.float64))
                        for n in self.names]

    @property
    def model(self) -> Any:
        model = self._model()
        if model is None:
            raise ValueError("the model of these tensor parameters no longer exists")
        return model

    def push(self) -> None:
        """The Parameters' current values into the engine."""
        engine = self.model._require_built()
        for name, tensor in zip(self.names, self.tensors):
            engine.set_parameter(name, np.ascontiguousarray(tensor.detach().cpu().numpy(), dtype=np.float64))

    def pull(self) -> None:
        """The engine's values into the Parameters (after load_state_dict or training)."""
        values = {name: value for name, value, _ in self.model._require_built().parameters()}
        with torch.no_grad():
            for name, tensor in zip(self.names, self.tensors):
                tensor.copy_(torch.as_tensor(np.asarray(values[name]).reshape(tuple(tensor.shape)), dtype=tensor.dtype))

    def forward(self, built: Any) -> torch.Tensor:
        # PyNeuraLogic's backend keeps the updates of the last backward pass only, so its code
        # steps without zero_grad(); each forward pass therefore starts the gradients anew
        # (several forwards before one backward still sum, as torch's do).
        for tensor in self.tensors:
            tensor.grad = None
        out = _Outputs.apply(self, built, *self.tensors)
        out._lrnn_built = built  # the output keeps what its backward needs alive, nothing else does
        return out


__all__ = ["TorchBackend"]
