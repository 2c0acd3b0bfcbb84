"""The torch form of lrnn's PyG-exact GNN layers (docs/torch_layers.md).

With torch installed, `GCNConv.pyg(...)`, `GCNConv.from_torch(...)` and the other PyG forms
make an instance of `torch_class(cls)`: the layer's class and torch.nn.Module at once. It
holds its weights as torch Parameters in the submodule `weights`, laid out as PyG lays
them out (`layer.weights.lin.weight` is PyG's `lin.weight`; `torch_parameters()` maps PyG's
keys to them), so a torch model that holds the layer trains it with its own optimizer.

Called with a torch tensor x, the layer runs `_LayerPass`, a torch.autograd.Function:
forward copies the Parameters into the engine (`set_parameter`), runs the engine's forward in
x's dtype (float32 or float64) and returns a tensor of that dtype; backward seeds the engine's
backward with the output's gradient and returns dL/dx and dL/d(each Parameter). Everything
else about the graph (edge_index, edge_weight, edge_attr, edge_type) becomes facts, as for
NumPy inputs; such inputs that ask for a gradient are refused. A PyG `Batch` is one big graph
(its edge_index already offsets each graph's nodes), which is what the facts say.

The Parameters are the truth: every engine pass (NumPy calls too) starts by copying them
in, and `load_torch` copies the loaded weights out to them.
"""

from __future__ import annotations

import functools
from typing import Any, Dict, List, Tuple

import numpy as np
import torch

from lrnn.nn._exit import EmptiedAtExit

_FORMS: Dict[type, type] = {}


def torch_class(cls: type) -> type:
    """The torch form of a PygLayer class (made once per class)."""
    if issubclass(cls, torch.nn.Module):
        return cls
    form = _FORMS.get(cls)
    if form is None:
        init = cls.__init__

        @functools.wraps(init)  # the same signature (repr reads it)
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            self._register_weights()

        form = type(cls.__name__, (TorchLayer, cls, torch.nn.Module),
                    {"__init__": __init__, "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                     "__doc__": cls.__doc__, "_plain_class": cls})
        _FORMS[cls] = form
    return form


def _remake(cls: type) -> Any:
    return cls.__new__(cls)


def _container(root: torch.nn.Module, key: str) -> Tuple[torch.nn.Module, str]:
    """The submodule of `root` holding PyG key `key` ("lin.weight" -> (root.lin, "weight")),
    made on the way."""
    *path, name = key.split(".")
    module = root
    for part in path:
        if part not in module._modules:
            module.add_module(part, torch.nn.Module())
        module = module._modules[part]
    return module, name


class TorchLayer:
    """What the torch form adds to a PygLayer (mixed in before the layer's class)."""

    # -- the Parameters -----------------------------------------------------------------
    def _register_weights(self) -> None:
        weights = torch.nn.Module()
        frozen = set(self.frozen_keys())
        dtype = torch.get_default_dtype()
        for key, value in self._engine_weights().items():
            module, name = _container(weights, key)
            tensor = torch.tensor(value, dtype=dtype)
            if key in frozen:
                module.register_buffer(name, tensor)
            else:
                module.register_parameter(name, torch.nn.Parameter(tensor))
        self.weights = weights

    def torch_parameters(self) -> Dict[str, torch.Tensor]:
        """PyG state_dict key -> this layer's Parameter (or buffer, for a value not trained)."""
        return dict(self.weights.state_dict(keep_vars=True))

    def trained_keys(self) -> List[str]:
        frozen = set(self.frozen_keys())
        return [key for key in self._param_map() if key not in frozen]

    def _push(self, values: Dict[str, torch.Tensor]) -> None:
        """These values (PyG key -> tensor) into the engine."""
        maps = self._param_map()
        for key, tensor in values.items():
            value = tensor.detach().cpu().to(torch.float64).numpy() + self._engine_offset.get(key, 0.0)
            self._set(maps[key], value)

    def _sync_weights(self) -> None:
        if "weights" in self._modules:  # not while __init__ runs
            self._push(self.torch_parameters())

    def load_torch(self, layer: Any):
        super().load_torch(layer)
        current = self.torch_parameters()
        if set(current) != set(self._param_map()):  # GIN's keys follow its nn (one Linear or a Sequential)
            self._register_weights()
            return self
        with torch.no_grad():
            for key, value in self._engine_weights().items():
                current[key].copy_(torch.as_tensor(value, dtype=current[key].dtype))
        return self

    # -- torch.nn.Module's names --------------------------------------------------------
    # torch's parameters() (an optimizer's argument), not PygLayer's dict: that is weight_arrays()
    parameters = torch.nn.Module.parameters

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self(*args, **kwargs)

    def float(self):
        """float32 passes for NumPy inputs, and float32 Parameters (torch's module.float())."""
        super().float()
        return torch.nn.Module.float(self)

    def double(self):
        super().double()
        return torch.nn.Module.double(self)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """The engine's accumulated gradients (NumPy backward) and the Parameters' grads."""
        super().zero_grad()
        torch.nn.Module.zero_grad(self, set_to_none)

    def __getstate__(self) -> Dict[str, Any]:
        """copy.deepcopy and pickle (a best model kept during training, torch.save): the engine
        model is not copied but made again from the rules on first use, and the Parameters,
        which are copied, are pushed into it before its first pass."""
        state = dict(self.__dict__)
        state["_model_obj"] = None
        state.pop("_engine_holds", None)
        return state

    def __reduce_ex__(self, protocol: int) -> Any:
        # pickle finds a class by its name, which names the plain class: remake from it
        # (PygLayer.__new__ gives the torch form again)
        return _remake, (self._plain_class,), self.__getstate__()

    # -- a pass on tensors ----------------------------------------------------------------
    def _torch_forward(self, x: torch.Tensor, facts: List[str]) -> torch.Tensor:
        if x.dtype not in (torch.float32, torch.float64):
            raise TypeError(f"x is {x.dtype}: lrnn's layers run float32 or float64 tensors")
        keys = self.trained_keys()
        parameters = self.torch_parameters()
        return _LayerPass.apply(_Saved(self, facts, keys), x, *[parameters[k] for k in keys])

    def _engine_pass(self, saved: "_Saved", x: torch.Tensor, trained: Tuple[torch.Tensor, ...]) -> np.ndarray:
        """The engine's forward on x with these trained weights (and the current others)."""
        values = {key: t for key, t in self.torch_parameters().items() if key not in saved.keys}
        values.update(zip(saved.keys, trained))
        self._push(values)
        dtype = "float32" if x.dtype == torch.float32 else "float64"
        if self._model.dtype != dtype:
            self._model.dtype = dtype
        array = np.ascontiguousarray(x.detach().cpu().numpy(), dtype=np.float64)
        self._last_shape = array.shape
        out = np.asarray(self._model.forward([("x", array)], array.shape[0], saved.facts))
        self._engine_holds = saved
        return out


class _Saved(EmptiedAtExit):
    """What the backward of one call needs: the layer, the call's facts and trained keys. The
    engine's state is that of the layer's last pass; a backward of an earlier call (the layer
    used twice in a model) runs its forward again first. Held by the autograd graph: emptied at
    exit, so that an output kept alive then does not keep the engine past the extension's end
    (lrnn.nn._exit.EmptiedAtExit)."""

    __slots__ = ("layer", "facts", "keys")

    def __init__(self, layer: Any, facts: List[str], keys: List[str]):
        super().__init__()
        self.layer, self.facts, self.keys = layer, facts, keys


class _LayerPass(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, saved: _Saved, x: torch.Tensor, *trained: torch.Tensor) -> torch.Tensor:
        out = saved.layer._engine_pass(saved, x, trained)
        ctx.saved = saved
        ctx.save_for_backward(x, *trained)  # torch refuses a backward after they change in place
        return torch.from_numpy(out).to(device=x.device, dtype=x.dtype)  # the engine runs on the CPU

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad_output: torch.Tensor) -> Any:
        saved = ctx.saved
        layer = saved.layer
        if layer is None:
            raise RuntimeError("the lrnn layer of this output no longer exists")
        x, *trained = ctx.saved_tensors
        if layer.__dict__.get("_engine_holds") is not saved:
            layer._engine_pass(saved, x, tuple(trained))
        layer._model.zero_grad()
        seed = np.ascontiguousarray(grad_output.detach().cpu().numpy(), dtype=np.float64)
        grad_x = np.asarray(layer._model.backward(seed)[0]).reshape(tuple(x.shape))
        maps = layer._param_map()
        grads = [torch.from_numpy(layer._get(layer._model.parameter_grad, maps[key])).to(device=t.device, dtype=t.dtype)
                 .reshape(t.shape)
                 for key, t in zip(saved.keys, trained)]
        layer._model.zero_grad()  # NumPy backward()'s accumulation starts clean after a torch pass
        return (None, torch.from_numpy(grad_x).to(device=x.device, dtype=x.dtype), *grads)


__all__ = ["TorchLayer", "torch_class"]
