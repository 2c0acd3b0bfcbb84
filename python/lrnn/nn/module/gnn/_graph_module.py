"""The base of the PyNeuraLogic form of every GNN layer (one file per layer in this folder):
PyNeuraLogic 0.9.2's constructor arguments and rules, printed in its text form (`rules()` are
its lines; `template += module` adds them), and the rule helpers several layers share.
tests/python/test_pnl_zoo.py compares them with the rules recorded from the real package.

Known limits of running these rules in lrnn (the rules are PyNeuraLogic's, unchanged):
the normalised forms of GCNConv, SGConv, TAGConv and APPNPConv write `sqrt(atom)` in a rule
body and a `product` atom combination, which lrnn's parser/neuralizer do not take yet;
GATv2Conv writes `leakyrelu(slope)`; the layer's PyG form (`<Name>.pyg(...)` /
`<Name>.from_torch(...)`, the `Pyg<Name>` class of the same file) computes PyG's layer in
lrnn's own language.
"""

from typing import Any, List, Optional, Sequence, Tuple

from lrnn.nn.module.module import Module, function as _fn, hidden, number as _num, predicate



def _self_loops(name: str, edge: str) -> List[str]:
    return [f"<1.0> {name}__edge(I, I).", f"{name}__edge(I, J) :- {edge}(I, J)."]


def _normalised_edges(name: str, edge: str, self_loops: bool, normalize: bool) -> Tuple[List[str], str]:
    """The rules a layer's edges need: with self-loops, `name__edge` (the edges and one loop
    per node); with normalize, the degree counts `name__edge_count` of those edges. Returns
    the rules and the edge predicate the layer reads."""
    rules: List[str] = []
    if self_loops:
        rules += _self_loops(name, edge)
        edge = f"{name}__edge"
    if normalize:
        rules += _edge_count(name, edge)
    return rules, edge


def _edge_count(name: str, edge: str) -> List[str]:
    return [
        f"{name}__edge_count(I, J) :- {edge}(X, J). [aggregation=sum]",
        f"{name}__edge_count(I, J) :- {edge}(X, I). [aggregation=sum]",
        f"{name}__edge_count/2 [transformation=inverse, combination=product]",
    ]


class _GraphModule(Module):
    """A graph layer; names starting with '_' are hidden predicates (`_edge` -> `*edge`), as
    PyNeuraLogic's `R.get` makes them."""

    #: the layer's PyG form (a PygLayer class), set by the file that defines both
    pyg_form: Optional[type] = None

    @classmethod
    def pyg(cls, *args: Any, **kwargs: Any) -> Any:
        """PyG's exact form of this layer, built with torch_geometric's constructor arguments."""
        return cls._pyg_form_class()(*args, **kwargs)

    @classmethod
    def from_torch(cls, layer: Any, seed: int = 1) -> Any:
        """PyG's exact form of this layer with `layer`'s configuration and weights."""
        return cls._pyg_form_class().from_torch(layer, seed=seed)

    @classmethod
    def _pyg_form_class(cls) -> type:
        if cls.pyg_form is None:
            raise TypeError(f"{cls.__name__} has no PyG form")
        return cls.pyg_form

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


def _hops(k: int, edge: str, count: Optional[str]) -> List[str]:
    body = []
    for near, far in zip(range(k), range(1, k + 1)):
        body.append(f"{edge}(I{far}, I{near})")
        if count is not None:
            body.append(f"sqrt({count}(I{far}, I{near}))")
    return body
