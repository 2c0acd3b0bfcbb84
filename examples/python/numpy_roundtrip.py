"""NumPy in and out: facts from array rows, outputs as one array, weights as arrays.

    python examples/python/numpy_roundtrip.py
"""

import numpy as np

from lrnn import Dataset, R, Settings, Template, V

features = np.random.default_rng(1).normal(size=(5, 3))
template = Template()
template += R.h(V.X)["w":2, 3] <= R.feat(V.X)

model = template.build(Settings(seed=2))
dataset = Dataset().add([R.h(V.X)], [R.feat(i)[row] for i, row in enumerate(features)])
evaluation = model.test(dataset)
order = [int(q[2:-1]) for q in evaluation.queries]
w = model.parameters()["$w"]
print("outputs", evaluation.outputs.shape, "== features @ w.T:", np.allclose(evaluation.outputs, features[order] @ w.T))

# New weights go in as arrays too.
model.load_state_dict({"weights": {"$w": np.ones((2, 3))}})
print("with w = 1:", model(dataset).round(3)[:2])
