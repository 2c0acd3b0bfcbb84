"""GINConv: the graph isomorphism network's layer: its PyNeuraLogic form (rules for a template)
and its PyG form (the layer PyG computes, on arrays or torch tensors), reached as
`GINConv.pyg(...)` / `.from_torch(...)`."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np

from lrnn.nn.module.gnn._graph_module import _GraphModule
from lrnn.nn.module.gnn.pyg import PygLayer, _torch_array, mlp_layers, mlp_lines, mlp_param_map
from lrnn.nn.module.module import function as _fn, hidden, predicate


class GINConv(_GraphModule):
    """GIN as PyNeuraLogic writes it (one linear layer on the neighbours' aggregate plus one
    on a linear embedding of the node itself). `GINConv.from_torch(torch_geometric GINConv)`
    gives PyG's exact form `nn((1 + eps) x_i + sum_j x_j)` with its MLP."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str, edge_name: str,
                 activation: Any = "identity", aggregation: Any = "sum"):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.activation, self.aggregation = activation, aggregation

    def rules(self) -> List[str]:
        h, x, agg = self.output_name, predicate(self.feature_name), _fn(self.aggregation)
        w = f"{{{self.out_channels}, {self.in_channels}}}"
        act = _fn(self.activation)
        return [
            f"{w} {h}(I) :- {x}(J), {hidden(self.edge_name)}(J, I). [aggregation={agg}]",
            f"embed__{h}(I) :- {x}(I). [aggregation={agg}]",
            f"{w} {h}(I) :- {{{self.in_channels}, {self.in_channels}}} embed__{h}(I). [transformation={act}]",
            f"{h}/1 [transformation={act}]",
        ]


class PygGINConv(PygLayer):
    """torch_geometric.nn.GINConv: nn((1 + eps) x_i + sum_{j -> i} x_j), nn a torch Linear or a
    Sequential of Linear layers, ReLU/Tanh/Sigmoid/Identity activations and Dropout(p=0)
    (`layers` lists them as ("linear", in, out, bias, index) / ("act", name, index))."""

    kind = "GINConv"
    prefix = "gin"
    _not_compared = ("eps",)

    def __init__(self, layers: List[Tuple], eps: float = 0.0, train_eps: bool = False, seed: int = 1):
        super().__init__(seed)
        self.layers = [tuple(l) for l in layers]
        linears = [l for l in self.layers if l[0] == "linear"]
        if not linears:
            raise ValueError("GINConv's nn needs at least one Linear layer")
        self.in_channels, self.out_channels = linears[0][1], linears[-1][2]
        self.eps, self.train_eps = float(eps), train_eps

    def config(self) -> Dict[str, Any]:
        return dict(layers=self.layers, train_eps=self.train_eps)

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        import torch

        modules = list(layer.nn) if isinstance(layer.nn, torch.nn.Sequential) else [layer.nn]
        eps = float(_torch_array(layer.eps).reshape(-1)[0])
        return dict(layers=mlp_layers(modules, f"{cls.kind} nn"), eps=eps, train_eps=bool(layer.eps.requires_grad))

    def _param_map(self):
        return dict({"eps": ("gin__eps1", (1,))}, **mlp_param_map(self.layers, "gin", "nn", self._sequential))

    _sequential = True  # nn is a torch Sequential (keys nn.K.weight) rather than one Linear (nn.weight)

    def load_torch(self, layer: Any):
        import torch

        self._sequential = isinstance(layer.nn, torch.nn.Sequential)
        super().load_torch(layer)
        # PyG keeps eps; the template holds 1 + eps
        self._model.set_parameter("gin__eps1", np.array([[1.0 + float(_torch_array(layer.eps).reshape(-1)[0])]]))
        return self

    _engine_offset = {"eps": 1.0}  # the template holds 1 + eps

    def frozen_keys(self) -> Tuple[str, ...]:
        return () if self.train_eps else ("eps",)

    def torch_grads(self) -> Dict[str, np.ndarray]:
        g = super().torch_grads()
        if not self.train_eps:
            del g["eps"]
        return g

    def _aggregate_lines(self) -> List[str]:
        return ["gin__agg(I) :- edge(J, I), x(J). [combination=product, aggregation=sum]"]

    def _lines(self) -> List[str]:
        return ["gin__one."] + self._aggregate_lines() + [
            f"gin__h(I) :- $gin__eps1={1.0 + self.eps!r} x(I).",
            "gin__h(I) :- gin__agg(I)."] + mlp_lines(self.layers, "gin", "gin__h", self.in_channels)


GINConv.pyg_form = PygGINConv

__all__ = ['GINConv', 'PygGINConv']
