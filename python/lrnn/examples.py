"""The models of PyNeuraLogic's examples written in the DSL: XOR, family, trains, and the
transformer encoder of "Beyond Transformers with PyNeuraLogic" (with causal, windowed and
strided attention variants). Used by the examples and the tests."""

from __future__ import annotations

import math
from typing import List, Optional

from lrnn.core import C, F, R, Template, V, W


def xor_template() -> Template:
    """A 2-3-1 perceptron on the scalar facts a and b (simple/xor/naive)."""
    t = Template()
    hidden = R.get("hidden")  # R.hidden is the namespace of hidden literals
    t += (hidden <= (R.a[3,], R.b[3,], W[3,])) | [F.sigmoid]
    t += R.xor[1, 3] <= hidden
    t += ((R.xor / 0)[1,]) | [F.sigmoid]
    return t


def xor_vectorized_template() -> Template:
    """The same perceptron on the vector fact xy = [x, y] (simple/xor/vectorized)."""
    t = Template()
    hidden = R.get("hidden")
    t += (hidden <= (R.xy[3, 2], W[3,])) | [F.sigmoid]
    t += (R.xor <= (hidden[1, 3], W[1,])) | [F.sigmoid]
    return t


def family_template() -> Template:
    """foal(X): X is the offspring of horses (simple/family)."""
    t = Template()
    t += (R.foal(V.X)[1,] <= (R.parent(V.X, V.Y)[1,], R.horse(V.Y)[1,], W[1,])) | [F.sigmoid]
    t += (R.foal(V.X)[1,] <= (R.sibling(V.X, V.Y)[1,], R.horse(V.Y)[1,], W[1,])) | [F.sigmoid]
    t += (R.negFoal(V.X)[1,] <= (R.foal(V.X)[1,], W[1,])) | [F.sigmoid]
    t += (R.foal / 1) | [F.sigmoid]
    t += (R.negFoal / 1) | [F.sigmoid]
    return t


TRAIN_ATTRIBUTES = {
    "len": ["short", "long"],
    "rf": ["none", "flat", "peaked", "jagged", "arc"],
    "shp": ["rectangle", "bucket", "u_shaped", "hexagon", "ellipse"],
    "load": ["circle", "hexagon", "triangle", "rectangle", "diamond"],
    "whl": [2, 3],
    "sds": ["double", "not_double"],
    "num": [0, 1, 2, 3],
}


def trains_template(dim: int = 4) -> Template:
    """Michalski's trains (simple/trains): learned embeddings of every attribute value, a
    car is the sigmoid of their sum, a train looks at its cars through max and avg."""
    t = Template()
    for predicate, values in TRAIN_ATTRIBUTES.items():
        for value in values:
            t += R.get(predicate)(C.get(value) if isinstance(value, str) else value)[dim,]
    T, Car = V.T, V.C
    body = []
    for relation, attribute, var in [
        ("length", "len", V.L), ("roof", "rf", V.R), ("shape", "shp", V.S), ("loadshape", "load", V.O),
        ("wheels", "whl", V.W), ("sides", "sds", V.D), ("loadnum", "num", V.N),
    ]:
        body += [R.hidden.get(relation)(T, Car, var), R.get(attribute)(var)]
    t += (R.car(T, Car) <= (*body, W[dim,])) | [F.sigmoid]
    t += (R.direction(T) <= R.car(T, Car)[1, dim]) | [F.max_agg]
    t += (R.direction(T) <= R.car(T, Car)[1, dim]) | [F.avg_agg]
    t += ((R.direction / 1)[1,]) | [F.tanh]
    return t


def transformer_encoder(dim: int, mask: Optional[str] = None, window: int = 5, stride: int = 5) -> Template:
    """One encoder layer as in "Beyond Transformers with PyNeuraLogic": projections q, k, v
    of the input tokens, scaled dot-product attention with a softmax over J, two
    normalised skip connections around the attention and a ReLU MLP.

    mask: None (every pair), "causal" (J <= I), "window" (I - J <= window, including
    J > I) or "strided" (I - J a multiple of stride)."""
    t = Template()
    t += R.q(V.I) <= R.input(V.I)["W_q":dim, dim]
    t += R.k(V.I) <= R.input(V.I)["W_k":dim, dim]
    t += R.v(V.I) <= R.input(V.I)["W_v":dim, dim]
    t += R.d_k[1 / math.sqrt(dim)].fixed()
    masks = {
        None: [],
        "causal": [R.special.leq(V.J, V.I)],
        "window": [R.special.sub(V.I, V.J, V.D), R.special.leq(V.D, window)],
        "strided": [R.special.sub(V.I, V.J, V.D), R.special.mod(V.D, stride, 0)],
    }
    t += (R.attention_weights(V.I, V.J) <= (R.d_k, R.k(V.J).T, R.q(V.I), *masks[mask])) | [
        F.product,
        F.softmax_agg(agg_terms=[V.J]),
    ]
    t += (R.attention(V.I) <= (R.attention_weights(V.I, V.J), R.v(V.J))) | [F.product, F.sum_agg]
    t += (R.norm1(V.I) <= (R.attention(V.I), R.input(V.I))) | [F.norm]
    t += (R.mlp(V.I)["W_2":dim, dim] <= R.norm1(V.I)["W_1":dim, dim]) | [F.relu]
    t += (R.norm2(V.I) <= (R.mlp(V.I), R.norm1(V.I))) | [F.norm]
    return t


__all__ = ["xor_template", "xor_vectorized_template", "family_template", "trains_template", "transformer_encoder"]
