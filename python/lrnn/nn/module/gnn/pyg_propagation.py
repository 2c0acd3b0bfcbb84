"""PyG-exact propagation layers: SGConv, TAGConv, APPNP (see pyg.py for how graphs become
facts). Each hop k is its own predicate p__hk, so a K-hop layer grounds K times the edges,
not the number of K-step walks."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from lrnn.nn.module.gnn.pyg import PygLayer, _bias_rule, _w, gcn_norm_lines


def _hop_lines(p: str, k: int, source: str, normalize: bool, scale: str = "") -> str:
    """p__h{k}(I) = sum over j -> i of (norm_i norm_j) edge value * source(j), times `scale`."""
    norm = f"{p}__norm(I), {p}__edge(J, I), {p}__norm(J)" if normalize else f"{p}__edge(J, I)"
    return f"{p}__h{k}(I) :- {norm}, {scale}{source}(J). [combination=product, aggregation=sum]"


def _hops(p: str, k_max: int, normalize: bool, self_loops: bool, scale: str = "", teleport: str = "") -> List[str]:
    lines = gcn_norm_lines(p, self_loops) if normalize else [f"{p}__edge(J, I) :- edge(J, I)."]
    for k in range(1, k_max + 1):
        lines.append(_hop_lines(p, k, "x" if k == 1 else f"{p}__h{k - 1}", normalize, scale))
        if teleport:
            lines.append(f"{p}__h{k}(I) :- {teleport}x(I).")
    return lines


class PygSGConv(PygLayer):
    """torch_geometric.nn.SGConv: lin((D^-1/2 (A + I) D^-1/2)^K x)."""

    kind = "SGConv"
    prefix = "sg"

    def __init__(self, in_channels: int, out_channels: int, K: int = 1, add_self_loops: bool = True,
                 bias: bool = True, seed: int = 1):
        super().__init__(seed)
        if K < 1:
            raise ValueError(f"K={K}: SGConv needs K >= 1")
        self.in_channels, self.out_channels, self.K = in_channels, out_channels, K
        self.add_self_loops, self.bias = add_self_loops, bias
        self.self_loops = add_self_loops

    def config(self) -> Dict[str, Any]:
        return dict(in_channels=self.in_channels, out_channels=self.out_channels, K=self.K,
                    add_self_loops=self.add_self_loops, bias=self.bias)

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        return dict(in_channels=layer.in_channels, out_channels=layer.out_channels, K=layer.K,
                    add_self_loops=bool(layer.add_self_loops), bias=layer.lin.bias is not None)

    def _param_map(self):
        m = {"lin.weight": ("sg__lin", (self.out_channels, self.in_channels))}
        if self.bias:
            m["lin.bias"] = ("sg__lin_bias", (self.out_channels,))
        return m

    def _lines(self) -> List[str]:
        o, i = self.out_channels, self.in_channels
        lines = ["sg__one."] + _hops("sg", self.K, True, self.self_loops)
        lines.append(f"out(I) :- $sg__lin={_w(o, i)} sg__h{self.K}(I).")
        bias = _bias_rule("out", "sg__lin_bias", "sg", o) if self.bias else \
            f"out(I) :- <[{', '.join(['0.0'] * o)}]> sg__one, *x(I)."
        return lines + [bias]


class PygTAGConv(PygLayer):
    """torch_geometric.nn.TAGConv: sum_{k=0..K} lins[k](A_norm^k x) + bias, A_norm from gcn_norm
    without self-loops (normalize=True) or the plain adjacency."""

    kind = "TAGConv"
    prefix = "tag"

    def __init__(self, in_channels: int, out_channels: int, K: int = 3, bias: bool = True, normalize: bool = True,
                 seed: int = 1):
        super().__init__(seed)
        self.in_channels, self.out_channels, self.K = in_channels, out_channels, K
        self.bias, self.normalize = bias, normalize

    def config(self) -> Dict[str, Any]:
        return dict(in_channels=self.in_channels, out_channels=self.out_channels, K=self.K, bias=self.bias,
                    normalize=self.normalize)

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        if any(lin.bias is not None for lin in layer.lins):
            raise ValueError("TAGConv with biases in lins is not PyG's layout (one shared bias)")
        return dict(in_channels=layer.in_channels, out_channels=layer.out_channels, K=layer.K,
                    bias=layer.bias is not None, normalize=bool(layer.normalize))

    def _param_map(self):
        m = {f"lins.{k}.weight": (f"tag__lin{k}", (self.out_channels, self.in_channels)) for k in range(self.K + 1)}
        if self.bias:
            m["bias"] = ("tag__bias", (self.out_channels,))
        return m

    def _lines(self) -> List[str]:
        o, i = self.out_channels, self.in_channels
        lines = ["tag__one."] + _hops("tag", self.K, self.normalize, False)
        lines.append(f"out(I) :- $tag__lin0={_w(o, i)} x(I).")
        lines += [f"out(I) :- $tag__lin{k}={_w(o, i)} tag__h{k}(I)." for k in range(1, self.K + 1)]
        if self.bias:
            lines.append(_bias_rule("out", "tag__bias", "tag", o))
        return lines


class PygAPPNP(PygLayer):
    """torch_geometric.nn.APPNP: h_0 = x, h_k = (1 - alpha) A_norm h_{k-1} + alpha x, out = h_K
    (dropout 0). No weights: torch_grads() is empty, backward() gives dL/dx."""

    kind = "APPNP"
    prefix = "appnp"

    def __init__(self, K: int, alpha: float, add_self_loops: bool = True, normalize: bool = True, seed: int = 1):
        super().__init__(seed)
        if K < 1:
            raise ValueError(f"K={K}: APPNP needs K >= 1")
        self.in_channels: Optional[int] = None  # any feature width
        self.K, self.alpha, self.add_self_loops, self.normalize = K, float(alpha), add_self_loops, normalize
        self.self_loops = normalize and add_self_loops

    def config(self) -> Dict[str, Any]:
        return dict(K=self.K, alpha=self.alpha, add_self_loops=self.add_self_loops, normalize=self.normalize)

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        if layer.dropout != 0:
            raise ValueError(f"APPNP dropout={layer.dropout}: lrnn's form is deterministic (dropout 0)")
        return dict(K=layer.K, alpha=float(layer.alpha), add_self_loops=bool(layer.add_self_loops),
                    normalize=bool(layer.normalize))

    def _param_map(self):
        return {}

    def _lines(self) -> List[str]:
        p, a = "appnp", self.alpha
        lines = _hops(p, self.K, self.normalize, self.self_loops, scale=f"<{1.0 - a!r}> ", teleport=f"<{a!r}> ")
        return lines + [f"out(I) :- {p}__h{self.K}(I)."]
