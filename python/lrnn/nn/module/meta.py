"""PyNeuraLogic 0.9.2's meta-path modules (`neuralogic.nn.module.meta`): the same constructor
arguments and the same rules, as PyNeuraLogic prints them."""

from typing import Any, List, Optional

from lrnn.nn.module.module import Module, function, hidden, names, number, predicate, weight


class MetaConv(Module):
    """Role-aware convolution: per role r, `roles(I, r) = W x_J` over `role_name(J, r, I)` (or
    `r(J, I)` without a role predicate); `h(I) = act(agg(roles(I, R)) + W x_I)`.

    The role atoms are hidden (`*role(J, a, I)`): they only say who plays which role.
    PyNeuraLogic 0.9.2 writes them as plain atoms, whose value (1) is then added to every
    message: W x_J + 1, not its documented formula (docs/peers.md, Modules)."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str,
                 role_name: Optional[str], roles: List[str], activation: Any = "sigmoid", aggregation: Any = "avg"):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.role_name = output_name, feature_name, role_name
        self.roles, self.activation, self.aggregation = list(roles), activation, aggregation

    def rules(self) -> List[str]:
        h, x, w = predicate(self.output_name), predicate(self.feature_name), weight(self.out_channels,
                                                                                  self.in_channels)
        roles = f"{self.output_name}__roles"
        meta = f"[aggregation={function(self.aggregation, 'aggregation')}]"
        edge = (lambda r: f"{hidden(self.role_name)}(J, {r}, I)") if self.role_name is not None else \
            (lambda r: f"{hidden(r)}(J, I)")
        return [
            f"{h}(I) :- {roles}(I, R). {meta}",
            f"{h}(I) :- {w} {x}(I). {meta}",
            *(f"{roles}(I, {r}) :- {w} {x}(J), {edge(r)}." for r in names(self.roles, "roles")),
            f"{h}/1 [transformation={function(self.activation)}]",
        ]


class MAGNNMean(Module):
    """MAGNN's intra-metapath aggregation with the mean encoder: for each instance V0..Vn of the
    metapath (consecutive `relation_name` atoms, typed by `type_name(Vi, t)` or `t(Vi)`),
    `h(V0) = act(sum over instances of mean_i x(Vi))`.

    The relation and type atoms are hidden (`*e(V0, V1)`, `*type(V0, a)`): they only select the
    instances. PyNeuraLogic 0.9.2 writes them as plain atoms, whose values (1 each) are then
    added to the mean: one per relation and type atom of the path, not its documented formula.
    It also keeps `aggregation` (default sum) without writing it on the rule, so the instances
    are averaged (the rule default); here the rule says `aggregation=...` (docs/peers.md,
    Modules)."""

    def __init__(self, output_name: str, feature_name: str, relation_name: str, type_name: Optional[str],
                 meta_paths: List[str], activation: Any = "sigmoid", aggregation: Any = "sum"):
        self.output_name, self.feature_name, self.relation_name = output_name, feature_name, relation_name
        self.type_name, self.meta_paths = type_name, list(meta_paths)
        self.activation, self.aggregation = activation, aggregation

    def _head_weight(self) -> str:
        return ""

    def rules(self) -> List[str]:
        path = names(self.meta_paths, "meta_paths")
        relation, x = hidden(self.relation_name), predicate(self.feature_name)
        body = [f"{relation}(V{i}, V{i + 1})" for i in range(len(path) - 1)]
        if self.type_name is None:
            body += [f"{hidden(t)}(V{i})" for i, t in enumerate(path)]
        else:
            body += [f"{hidden(self.type_name)}(V{i}, {t})" for i, t in enumerate(path)]
        share = number(1 / len(path))
        body += [f"<{share}> {x}(V{i})" for i in range(len(path))]
        h = predicate(self.output_name)
        meta = f"[aggregation={function(self.aggregation, 'aggregation')}, duplicate_grounding=True]"
        return [f"{self._head_weight()}{h}(V0) :- {', '.join(body)}. {meta}",
                f"{h}/1 [transformation={function(self.activation)}]"]


class MAGNNLinear(MAGNNMean):
    """MAGNNMean with a linear encoder: `W mean_i x(Vi)` (W of shape (out_channels, in_channels))."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str, relation_name: str,
                 type_name: Optional[str], meta_paths: List[str], activation: Any = "sigmoid",
                 aggregation: Any = "sum"):
        super().__init__(output_name, feature_name, relation_name, type_name, meta_paths, activation, aggregation)
        self.in_channels, self.out_channels = in_channels, out_channels

    def _head_weight(self) -> str:
        return weight(self.out_channels, self.in_channels) + " "
