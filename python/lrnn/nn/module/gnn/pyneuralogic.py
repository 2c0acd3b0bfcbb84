"""PyNeuraLogic 0.9.2's GNN modules (`neuralogic.nn.module.gnn`): the same constructor
arguments and the same rules, printed in PyNeuraLogic's text form (`rules()` are its lines;
`template += module` adds them). tests/python/test_pnl_zoo.py compares them with the rules
recorded from the real package and the layers with PyG's; the one difference on purpose is
GENConv's softmax aggregation (see GENConv, docs/peers.md "Modules").

Known limits of running these rules in lrnn (the rules are PyNeuraLogic's, unchanged):
the normalised forms of GCNConv, SGConv, TAGConv and APPNPConv write `sqrt(atom)` in a rule
body and a `product` atom combination, which lrnn's parser/neuralizer do not take yet;
GATv2Conv writes `leakyrelu(slope)`; the `*.pyg(...)` / `*.from_torch(...)` forms (pyg.py)
compute PyG's layers in lrnn's own language.
"""

from typing import Any, List, Optional, Sequence

from lrnn.nn.module.module import Module, function as _fn, hidden, number as _num, predicate


def _self_loops(name: str, edge: str) -> List[str]:
    return [f"<1.0> {name}__edge(I, I).", f"{name}__edge(I, J) :- {edge}(I, J)."]


def _edge_count(name: str, edge: str) -> List[str]:
    return [
        f"{name}__edge_count(I, J) :- {edge}(X, J). [aggregation=sum]",
        f"{name}__edge_count(I, J) :- {edge}(X, I). [aggregation=sum]",
        f"{name}__edge_count/2 [transformation=inverse, combination=product]",
    ]


class _GraphModule(Module):
    """A graph layer; names starting with '_' are hidden predicates (`_edge` -> `*edge`), as
    PyNeuraLogic's `R.get` makes them."""

    def __call__(self, *args: Any, **kwargs: Any) -> List[Any]:
        if args or kwargs:
            raise TypeError(self._pyg_call_hint())
        return super().__call__()

    def _pyg_call_hint(self) -> str:
        """Why `module(x, edge_index)` is refused, naming the call that runs a layer on tensors:
        this class writes PyNeuraLogic's rules for a template (other weights, no bias), which is
        not the layer PyG computes, so its arguments are not carried over silently."""
        name = type(self).__name__
        channels = [str(getattr(self, a)) for a in ("in_channels", "out_channels") if hasattr(self, a)]
        return (f"{name}({', '.join(channels + [repr(getattr(self, 'output_name', '...')), '...'])}) is "
                f"PyNeuraLogic's rule generator: add it to a template (template += module) and call it with no "
                f"arguments for its rules. The layer that takes (x, edge_index) is PyG's form: "
                f"{name}.pyg({', '.join(channels) or '...'})(x, edge_index), or "
                f"{name}.from_torch(torch_geometric_layer)(x, edge_index)")


class GCNConv(_GraphModule):
    """Graph convolution (Kipf & Welling) as PyNeuraLogic writes it: degrees are sums of
    edge values, `1/sqrt(d_i d_j)` scales each message. `GCNConv.pyg(...)` /
    `GCNConv.from_torch(torch_geometric.nn.GCNConv)` give PyG's exact layer (bias included)."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str, edge_name: str,
                 activation: Any = "identity", aggregation: Any = "sum", add_self_loops: Optional[bool] = None,
                 normalize: bool = True):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.activation, self.aggregation = activation, aggregation
        self.normalize = normalize
        self.add_self_loops = normalize if add_self_loops is None else add_self_loops

    def rules(self) -> List[str]:
        h, x = self.output_name, predicate(self.feature_name)
        edge = predicate(self.edge_name)
        rules: List[str] = []
        if self.add_self_loops:
            rules += _self_loops(h, edge)
            edge = f"{h}__edge"
        body = f"{x}(J), {edge}(J, I)"
        if self.normalize:
            rules += _edge_count(h, edge)
            body += f", sqrt({h}__edge_count(J, I))"
        rules.append(f"{{{self.out_channels}, {self.in_channels}}} {h}(I) :- {body}. "
                     f"[combination=product, aggregation={_fn(self.aggregation)}]")
        rules.append(f"{h}/1 [transformation={_fn(self.activation)}]")
        return rules


class SAGEConv(_GraphModule):
    """GraphSAGE: `W1 agg_j x_j + W2 x_i` (one weight shape, head weights).
    `SAGEConv.pyg(...)` / `.from_torch(...)`: PyG's SAGEConv (lin_l with bias, lin_r)."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str, edge_name: str,
                 activation: Any = "identity", aggregation: Any = "avg"):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.activation, self.aggregation = activation, aggregation

    def rules(self) -> List[str]:
        h, x, w, agg = self.output_name, predicate(self.feature_name), f"{{{self.out_channels}, {self.in_channels}}}", \
            _fn(self.aggregation)
        return [
            f"{w} {h}(I) :- {x}(J), {hidden(self.edge_name)}(J, I). [aggregation={agg}]",
            f"{w} {h}(I) :- {x}(I). [aggregation={agg}]",
            f"{h}/1 [transformation={_fn(self.activation)}]",
        ]


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


class GINEConv(_GraphModule):
    """GINE (edge features added to the neighbours' features before ReLU); output `nn_name`."""

    def __init__(self, in_channels: int, feature_name: str, edge_name: str, nn_name: str, eps: float = 0.0,
                 train_eps: bool = False, edge_dim: Optional[int] = None):
        self.in_channels, self.feature_name, self.edge_name, self.nn_name = in_channels, feature_name, edge_name, nn_name
        self.eps, self.train_eps, self.edge_dim = eps, train_eps, edge_dim

    def rules(self) -> List[str]:
        n, x, e = self.nn_name, predicate(self.feature_name), predicate(self.edge_name)
        rules = []
        if self.edge_dim is not None:
            rules.append(f"{{{self.in_channels}, {self.edge_dim}}} {n}__gine_edge_proj(I, J) :- {e}(I, J).")
            e = f"{n}__gine_edge_proj"
        x_eps = _num(self.eps + 1) if self.train_eps else f"<{_num(self.eps + 1)}>"
        return rules + [
            f"{n}__gine_feat_sum(I, J) :- {x}(J), {e}(J, I). [transformation=relu, combination=sum]",
            f"{n}__gine_feat_agg(I) :- {n}__gine_feat_sum(I, J). [aggregation=sum]",
            f"{n}__gine_out(I) :- {x_eps} {x}(I), {n}__gine_feat_agg(I). [combination=sum]",
            f"{n}(I) :- {n}__gine_out(I).",
        ]


class GATv2Conv(_GraphModule):
    """GATv2 with one head as PyNeuraLogic 0.9.2 writes it (softmax over J per target I,
    LeakyReLU slope written as `leakyrelu(slope)`). `GATv2Conv.from_torch(...)` gives PyG's
    exact layer (biases of both projections, output bias, self-loops, multi-edges)."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str, edge_name: str,
                 share_weights: bool = False, activation: Any = "identity", add_self_loops: bool = True,
                 negative_slope: float = 0.2):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.share_weights, self.activation = share_weights, activation
        self.add_self_loops, self.negative_slope = add_self_loops, negative_slope

    def rules(self) -> List[str]:
        h, x = self.output_name, predicate(self.feature_name)
        w = f"{{{self.out_channels}, {self.in_channels}}}"
        right = f"${h}__right={w}"
        left = right if self.share_weights else f"${h}__left={w}"
        rules = []
        edge = self.edge_name
        if self.add_self_loops:
            rules += _self_loops(h, predicate(edge))
            edge = f"{h}__edge"
        edge = hidden(edge)
        return rules + [
            f"{h}__score(I, J) :- {left} {x}(I), {right} {x}(J), {edge}(J, I). "
            f"[transformation=leakyrelu({_num(self.negative_slope)}), combination=sum]",
            f"{h}__attention(I, J) :- ${h}__att={{1, {self.out_channels}}} {h}__score(I, J). "
            f"[transformation=identity, aggregation=softmax(agg_terms=[J])]",
            f"{h}(I) :- {h}__attention(I, J), {right} {x}(J), {edge}(J, I). [combination=product, aggregation=sum]",
            f"{h}/1 [transformation={_fn(self.activation)}]",
        ]


def _mlp(units: Sequence[int], output_name: str, input_name: str) -> List[str]:
    """PyNeuraLogic's MLP(units, output, input, identity) rules, the last layer renamed to output."""
    layers: List[List[str]] = []
    prev = input_name
    for index in range(0, len(units) - 1, 2):
        cin, cout = units[index], units[index + 1]
        head = f"{output_name}__mlp{index // 2}"
        head_w = f"{{{units[index + 2]}, {units[index + 1]}}} " if index + 2 < len(units) else ""
        layers.append([f"{head_w}{{head}}(X0) :- {{{cout}, {cin}}} {prev}(X0). [transformation=identity]",
                       "{head}/1 [transformation=identity]", head])
        prev = head
    out = []
    for i, (rule, decl, head) in enumerate(layers):
        name = output_name if i == len(layers) - 1 else head
        out += [rule.replace("{head}", name), decl.replace("{head}", name)]
    return out


class GENConv(_GraphModule):
    """GENConv (DeeperGCN): aggregated ReLU messages `m_ij = relu(x_j + e_ji) + eps` plus the
    node, then an MLP; with PyNeuraLogic's rules except for the default `softmax` aggregation.

    PyNeuraLogic 0.9.2 writes `aggregation=softmax` on the message rule: a plain softmax over
    the neighbours' vectors, which its own backend refuses (a ClassCastException) and which is
    not DeeperGCN's SoftMax aggregation. Here `softmax` is that aggregation (PyG's
    `aggr="softmax"`, t = 1): per channel, `sum_j exp(m_ij) m_ij / sum_j exp(m_ij)`, written as
    rules (docs/peers.md, Modules). Other aggregations are PyNeuraLogic's rules unchanged.
    lrnn's max aggregation is element-wise, which the softmax's shift relies on."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str, edge_name: str,
                 aggregation: Any = "softmax", num_layers: int = 2, expansion: int = 2, eps: float = 1e-7,
                 train_eps: bool = False, edge_dim: Optional[int] = None):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.aggregation, self.num_layers, self.expansion = aggregation, num_layers, expansion
        self.eps, self.train_eps, self.edge_dim = eps, train_eps, edge_dim

    def rules(self) -> List[str]:
        h, x, e = self.output_name, predicate(self.feature_name), predicate(self.edge_name)
        eps = f"{_num(self.eps)} {h}__eps." if self.train_eps else f"<{_num(self.eps)}> {h}__eps."
        rules = [eps]
        if self.edge_dim is not None and self.out_channels != self.edge_dim:
            rules.append(f"{{{self.out_channels}, {self.edge_dim}}} {h}__gen_edge_proj(I, J) :- {e}(I, J).")
            e = f"{h}__gen_edge_proj"
        w = f"{{{self.out_channels}, {self.in_channels}}} " if self.in_channels != self.out_channels else ""
        channels = [self.out_channels] + [self.out_channels * self.expansion] * (self.num_layers - 1) + \
            [self.out_channels]
        aggregation = _fn(self.aggregation, "aggregation")
        if aggregation == "softmax":
            aggregate = _softmax_aggregation(h)
        else:
            aggregate = [f"{h}__gen_feat_agg(I) :- {h}__gen_feat_sum(I, J), {h}__eps. "
                         f"[combination=sum, aggregation={aggregation}]"]
        return rules + [
            f"{h}__gen_feat_sum(I, J) :- {w}{x}(J), {e}(J, I). [transformation=relu, combination=sum]",
            *aggregate,
            f"{h}__gen_out(I) :- {w}{x}(I), {h}__gen_feat_agg(I). [combination=sum]",
            *_mlp(channels, h, f"{h}__gen_out"),
        ]


def _softmax_aggregation(h: str) -> List[str]:
    """DeeperGCN's SoftMax aggregation of the messages `m_ij` (`h__gen_feat_sum(I, J)` plus
    eps), channel by channel: exp(m - max_j m) as weights (the shift leaves the softmax as it is
    and keeps exp from overflowing), their weighted sum times the inverse of their sum."""
    m, top, w = f"{h}__gen_message", f"{h}__gen_softmax_max", f"{h}__gen_softmax_weight"
    return [
        f"{m}(I, J) :- {h}__gen_feat_sum(I, J), {h}__eps. [combination=sum]",
        f"{top}(I) :- {m}(I, J). [aggregation=max]",
        f"{w}(I, J) :- {m}(I, J), <-1.0> {top}(I). [combination=sum, transformation=exp]",
        f"{h}__gen_softmax_sum(I) :- {w}(I, J), {m}(I, J). [combination=elproduct, aggregation=sum]",
        f"{h}__gen_softmax_norm(I) :- {w}(I, J). [aggregation=sum]",
        f"{h}__gen_softmax_norm/1 [transformation=inverse]",
        f"{h}__gen_feat_agg(I) :- {h}__gen_softmax_sum(I), {h}__gen_softmax_norm(I). [combination=elproduct]",
    ]


class ResGatedGraphConv(_GraphModule):
    """Residual gated graph convolution: `W x_i + sum_j gate(i, j) * W x_j`."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str, edge_name: str,
                 gating_activation: Any = "sigmoid", activation: Any = "identity", aggregation: Any = "sum"):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.gating_activation, self.activation, self.aggregation = gating_activation, activation, aggregation

    def rules(self) -> List[str]:
        h, x, w = self.output_name, predicate(self.feature_name), f"{{{self.out_channels}, {self.in_channels}}}"
        return [
            f"{h}__gate(I, J) :- {w} {x}(I), {w} {x}(J).",
            f"{h}__gate/2 [transformation={_fn(self.gating_activation)}]",
            f"{h}(I) :- {w} {x}(I).",
            f"{h}(I) :- {h}__gate(I, J), {w} {x}(J), {predicate(self.edge_name)}(J, I). "
            f"[combination=elproduct, aggregation={_fn(self.aggregation)}]",
            f"{h}/1 [transformation={_fn(self.activation)}]",
        ]


class RGCNConv(_GraphModule):
    """Relational GCN: one weight per relation (edge_name(J, relation, I), or one predicate
    per relation when edge_name is None) plus a root weight."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str,
                 edge_name: Optional[str], relations: List[str], activation: Any = "identity",
                 aggregation: Any = "avg"):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.relations, self.activation, self.aggregation = list(relations), activation, aggregation

    def rules(self) -> List[str]:
        h, x, w, agg = self.output_name, predicate(self.feature_name), f"{{{self.out_channels}, {self.in_channels}}}", \
            _fn(self.aggregation)
        rules = [f"{h}(I) :- {w} {x}(I). [aggregation={agg}]"]
        for r in self.relations:
            edge = f"{hidden(self.edge_name)}(J, {r}, I)" if self.edge_name is not None else f"{predicate(r)}(J, I)"
            rules.append(f"{h}(I) :- {w} {x}(J), {edge}. [aggregation={agg}]")
        return rules + [f"{h}/1 [transformation={_fn(self.activation)}]"]


def _hops(k: int, edge: str, count: Optional[str]) -> List[str]:
    body = []
    for near, far in zip(range(k), range(1, k + 1)):
        body.append(f"{edge}(I{far}, I{near})")
        if count is not None:
            body.append(f"sqrt({count}(I{far}, I{near}))")
    return body


class SGConv(_GraphModule):
    """Simple graph convolution: k normalised propagation steps, one weight."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str, edge_name: str,
                 k: int = 1, activation: Any = "identity", aggregation: Any = "sum",
                 add_self_loops: Optional[bool] = None, normalize: bool = True):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.k, self.activation, self.aggregation, self.normalize = k, activation, aggregation, normalize
        self.add_self_loops = normalize if add_self_loops is None else add_self_loops

    def rules(self) -> List[str]:
        h, edge = self.output_name, predicate(self.edge_name)
        rules: List[str] = []
        if self.add_self_loops:
            rules += _self_loops(h, edge)
            edge = f"{h}__edge"
        if self.normalize:
            rules += _edge_count(h, edge)
        body = ", ".join([f"{predicate(self.feature_name)}(I{self.k})"] +
                         _hops(self.k, edge, f"{h}__edge_count" if self.normalize else None))
        rules.append(f"{{{self.out_channels}, {self.in_channels}}} {h}(I0) :- {body}. "
                     f"[combination=product, aggregation={_fn(self.aggregation)}, duplicate_grounding=True]")
        return rules + [f"{h}/1 [transformation={_fn(self.activation)}]"]


class TAGConv(_GraphModule):
    """Topology adaptive graph convolution: one weight per hop 0..k (shared shape)."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str, edge_name: str,
                 k: int = 2, activation: Any = "identity", aggregation: Any = "sum", normalize: bool = True):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.k, self.activation, self.aggregation, self.normalize = k, activation, aggregation, normalize

    def rules(self) -> List[str]:
        h = self.output_name
        edge = predicate(self.edge_name)
        rules = _edge_count(h, edge) if self.normalize else []
        for i in range(self.k + 1):
            body = ", ".join([f"{predicate(self.feature_name)}(I{i})"] +
                             _hops(i, edge, f"{h}__edge_count" if self.normalize else None))
            rules.append(f"{{{self.out_channels}, {self.in_channels}}} {h}(I0) :- {body}. "
                         f"[combination=product, aggregation={_fn(self.aggregation)}]")
        return rules + [f"{h}/1 [transformation={_fn(self.activation)}]"]


class APPNPConv(_GraphModule):
    """APPNP: k steps of personalised-PageRank propagation with teleport alpha (no weights)."""

    def __init__(self, output_name: str, feature_name: str, edge_name: str, k: int, alpha: float,
                 activation: Any = "identity", aggregation: Any = "sum", add_self_loops: Optional[bool] = None,
                 normalize: bool = True):
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.k, self.alpha, self.activation, self.aggregation = k, alpha, activation, aggregation
        self.normalize = normalize
        self.add_self_loops = normalize if add_self_loops is None else add_self_loops

    def rules(self) -> List[str]:
        h, x, edge = self.output_name, predicate(self.feature_name), predicate(self.edge_name)
        rules: List[str] = []
        if self.add_self_loops:
            rules += _self_loops(h, edge)
            edge = f"{h}__edge"
        if self.normalize:
            rules += _edge_count(h, edge)
        meta = f"[combination=product, aggregation={_fn(self.aggregation)}]"
        norm = f", sqrt({h}__edge_count(J, I))" if self.normalize else ""
        teleport, keep = _num(self.alpha), _num(1 - self.alpha)
        previous = x
        for k in range(1, self.k + 1):
            head = h if k == self.k else f"{h}__{k}"
            rules.append(f"{head}(I) :- <{teleport}> {x}(I). {meta}")
            rules.append(f"{head}(I) :- <{keep}> {previous}(J), {edge}(J, I){norm}. {meta}")
            previous = head
        return rules + [f"{h}/1 [transformation={_fn(self.activation)}]"]


# PyG's exact form of each module: `<Name>.pyg(...)` builds one with PyG's constructor
# arguments, `<Name>.from_torch(pyg_layer)` copies a torch_geometric layer (pyg*.py).
_PYG_FORMS = {
    GCNConv: ("pyg", "PygGCNConv"), SAGEConv: ("pyg", "PygSAGEConv"), GINConv: ("pyg", "PygGINConv"),
    GATv2Conv: ("pyg", "PygGATv2Conv"), GINEConv: ("pyg_edges", "PygGINEConv"),
    ResGatedGraphConv: ("pyg_edges", "PygResGatedGraphConv"), RGCNConv: ("pyg_edges", "PygRGCNConv"),
    SGConv: ("pyg_propagation", "PygSGConv"), TAGConv: ("pyg_propagation", "PygTAGConv"),
    APPNPConv: ("pyg_propagation", "PygAPPNP"), GENConv: ("pyg_edges", "PygGENConv"),
}


def _pyg_class(module_cls: type) -> type:
    import importlib

    file, name = _PYG_FORMS[module_cls]
    return getattr(importlib.import_module(f"lrnn.nn.module.gnn.{file}"), name)


def _pyg(cls: type, *args: Any, **kwargs: Any) -> Any:
    """PyG's exact form of this layer, built with torch_geometric's constructor arguments."""
    return _pyg_class(cls)(*args, **kwargs)


def _from_torch(cls: type, layer: Any, seed: int = 1) -> Any:
    """PyG's exact form of this layer with `layer`'s configuration and weights."""
    return _pyg_class(cls).from_torch(layer, seed=seed)


for _cls in _PYG_FORMS:
    _cls.pyg = classmethod(_pyg)
    _cls.from_torch = classmethod(_from_torch)
