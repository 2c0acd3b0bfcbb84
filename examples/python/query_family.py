"""Logic answers without learning: `template.query(goal, facts)` (PyNeuraLogic's
`model.query`), the same engine as `lrnn query`.

    python examples/python/query_family.py
"""

from lrnn import C, R, Template, V

template = Template()
template += R.ancestor(V.X, V.Y) <= R.parent(V.X, V.Y)
template += R.ancestor(V.X, V.Z) <= (R.parent(V.X, V.Y), R.ancestor(V.Y, V.Z))

facts = [
    R.parent(C.ann, C.bob),
    R.parent(C.bob, C.carl),
    R.parent(C.carl, C.dora),
]

print("ancestors of dora:", template.query(R.ancestor(V.X, C.dora), facts))
print("is ann an ancestor of dora?", template.query(R.ancestor(C.ann, C.dora), facts))
print("is dora an ancestor of ann?", template.query(R.ancestor(C.dora, C.ann), facts))
