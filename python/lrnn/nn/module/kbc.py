"""Knowledge-base completion scores as rules: TransE, DistMult, SimplE. A query
`output_name(S, R, O)` gets the score of the triple (subject S, relation R, object O).

Embeddings are the values of `entity_name(E)` and `relation_name(R)` atoms: example facts, or
learnable template facts `{dim} entity(e).` that the module writes when given the `entities`
and `relations` it should embed. PyNeuraLogic 0.9.2 has no such modules, so these follow the
papers (and PyG's `torch_geometric.nn.kge` scores, which tests/python/test_pnl_zoo.py compares
with): no rule here has a PyNeuraLogic recording.
"""

from typing import List, Optional, Sequence

from lrnn.nn.module.module import Module, names, predicate


def _dim(dim: int) -> int:
    if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
        raise ValueError(f"dim must be a positive int, got {dim!r}")
    return dim


def _embeddings(dim: int, name: str, constants: Optional[Sequence[str]], argument: str) -> List[str]:
    """Learnable template facts `{dim} name(c).`, one per constant."""
    if constants is None:
        return []
    return [f"{{{dim}}} {predicate(name)}({c})." for c in names(constants, argument)]


def _trilinear(head: str, helper: str, first: str, relation: str, last: str,
               first_var: str, last_var: str) -> List[str]:
    """`head(S, R, O) = sum_k first(first_var)_k relation(R)_k last(last_var)_k`: an element-wise
    product, then a row-times-column product (a dot product)."""
    return [
        f"{helper}({first_var}, R) :- {first}({first_var}), {relation}(R). [combination=elproduct]",
        f"{head}(S, R, O) :- {helper}({first_var}, R)^T, {last}({last_var}). [combination=product]",
    ]


class DistMult(Module):
    """DistMult (Yang et al. 2015): `score(s, r, o) = sum_k e_s[k] w_r[k] e_o[k]`."""

    def __init__(self, dim: int, output_name: str, entity_name: str, relation_name: str,
                 entities: Optional[Sequence[str]] = None, relations: Optional[Sequence[str]] = None):
        self.dim, self.output_name, self.entity_name, self.relation_name = dim, output_name, entity_name, relation_name
        self.entities, self.relations = entities, relations

    def rules(self) -> List[str]:
        dim = _dim(self.dim)
        e, r = predicate(self.entity_name), predicate(self.relation_name)
        return [*_embeddings(dim, self.entity_name, self.entities, "entities"),
                *_embeddings(dim, self.relation_name, self.relations, "relations"),
                *_trilinear(predicate(self.output_name), f"{self.output_name}__sr", e, r, e, "S", "O")]


class TransE(Module):
    """TransE (Bordes et al. 2013): `score(s, r, o) = -||e_s + w_r - e_o||_p`, p = 1 or 2.
    PyG's TransE also rescales e_s and e_o to unit p-norm inside its forward; here the
    embeddings are used as they are. The norm's gradient is undefined where a difference is
    exactly zero (as the norm's is)."""

    def __init__(self, dim: int, output_name: str, entity_name: str, relation_name: str, p_norm: int = 1,
                 entities: Optional[Sequence[str]] = None, relations: Optional[Sequence[str]] = None):
        self.dim, self.output_name, self.entity_name, self.relation_name = dim, output_name, entity_name, relation_name
        self.p_norm, self.entities, self.relations = p_norm, entities, relations

    def rules(self) -> List[str]:
        dim = _dim(self.dim)
        if self.p_norm not in (1, 2) or isinstance(self.p_norm, bool):
            raise ValueError(f"TransE p_norm must be 1 or 2, got {self.p_norm!r}")
        out, e, r = self.output_name, predicate(self.entity_name), predicate(self.relation_name)
        diff, size = f"{out}__diff", f"{out}__size"
        minus_ones = "<[[" + ", ".join(["-1.0"] * dim) + "]]>"
        if self.p_norm == 1:  # |d_k| = sqrt(d_k * d_k), then minus their sum
            norm = [f"{size}(S, R, O) :- {diff}(S, R, O), {diff}(S, R, O). [combination=elproduct, "
                    "transformation=sqrt]",
                    f"{predicate(out)}(S, R, O) :- {minus_ones} {size}(S, R, O)."]
        else:  # minus sqrt(d . d)
            norm = [f"{size}(S, R, O) :- {diff}(S, R, O)^T, {diff}(S, R, O). [combination=product, "
                    "transformation=sqrt]",
                    f"{predicate(out)}(S, R, O) :- <-1.0> {size}(S, R, O)."]
        return [*_embeddings(dim, self.entity_name, self.entities, "entities"),
                *_embeddings(dim, self.relation_name, self.relations, "relations"),
                f"{diff}(S, R, O) :- {e}(S), {r}(R), <-1.0> {e}(O).", *norm]


class SimplE(Module):
    """SimplE (Kazemi & Poole 2018): each entity has a head and a tail embedding, each relation
    a forward and an inverse one; `score(s, r, o) = (<h_s, v_r, t_o> + <h_o, v_r^-1, t_s>) / 2`."""

    def __init__(self, dim: int, output_name: str, head_name: str, tail_name: str, relation_name: str,
                 inverse_name: str, entities: Optional[Sequence[str]] = None,
                 relations: Optional[Sequence[str]] = None):
        self.dim, self.output_name = dim, output_name
        self.head_name, self.tail_name, self.relation_name, self.inverse_name = head_name, tail_name, \
            relation_name, inverse_name
        self.entities, self.relations = entities, relations

    def rules(self) -> List[str]:
        dim = _dim(self.dim)
        out = self.output_name
        h, t, r, inv = (predicate(n) for n in (self.head_name, self.tail_name, self.relation_name, self.inverse_name))
        return [*_embeddings(dim, self.head_name, self.entities, "entities"),
                *_embeddings(dim, self.tail_name, self.entities, "entities"),
                *_embeddings(dim, self.relation_name, self.relations, "relations"),
                *_embeddings(dim, self.inverse_name, self.relations, "relations"),
                *_trilinear(f"{out}__forward", f"{out}__sr", h, r, t, "S", "O"),
                *_trilinear(f"{out}__backward", f"{out}__or", h, inv, t, "O", "S"),
                f"{predicate(out)}(S, R, O) :- <0.5> {out}__forward(S, R, O), <0.5> {out}__backward(S, R, O)."]
