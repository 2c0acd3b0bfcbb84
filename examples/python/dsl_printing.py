"""The builder DSL: PyNeuraLogic's way of writing rules, printed in lrnn's text format.

    python examples/python/dsl_printing.py
"""

import numpy as np

from lrnn import C, Aggregation, F, R, Template, Transformation, V

template = Template()

# A GCN-like layer: a learnable 3x3 matrix on the neighbours' features, summed, then ReLU.
template += (R.h(V.X)[3, 3] <= (R.feature(V.Y)[3, 3], R.edge(V.X, V.Y))) | [F.relu, Aggregation.SUM]

# Rules with several body literals: a tuple, or `&`.
template += R.grandparent(V.X, V.Z) <= R.parent(V.X, V.Y) & R.parent(V.Y, V.Z)

# Builtins (@), hidden literals (*), soft negation (-R.a, printed ~a) and transposition (^T).
template += (R.score(V.I, V.J) <= (R.k(V.J).T, R.q(V.I), R.special.leq(V.J, V.I))) | [F.product]
template += R.lonely(V.X) <= (R.person(V.X), -R.friend(V.X), R.hidden.active(V.X))

# Learnable embeddings from NumPy arrays, a fixed value, and a named (shared) weight.
template += R.emb(C.a)[np.array([0.5, -1.0, 2.0])]
template += R.scale[0.125].fixed()
template += R.out(V.X)["w_out":1, 3] <= R.h(V.X)["w_in":3, 3]

# Predicate metadata: the activation of every out/1 atom.
template += (R.out / 1) | [Transformation.SIGMOID]

print(template)
