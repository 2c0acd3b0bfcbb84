"""state_dict / load_state_dict, and saving a whole model to a file and loading it back.

    python examples/python/save_load.py
"""

import tempfile
from pathlib import Path

import numpy as np

import lrnn
from lrnn import Adam, Dataset, R, Settings
from lrnn.examples import xor_template

dataset = Dataset()
for (a, b), y in [((0, 0), 0), ((0, 1), 1), ((1, 0), 1), ((1, 1), 0)]:
    dataset.add(R.xor[y], [R.a[a], R.b[b]])

model = xor_template().build(Settings(optimizer=Adam(lr=0.1), seed=3))
model.train(dataset, 300, progress=False)
state = model.state_dict()
print("weights:", {k: np.round(v, 2).tolist() for k, v in state["weights"].items()})

with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "xor.json"
    model.save(path)
    loaded = lrnn.Model.load(path)
    print("reloaded model gives the same outputs:", np.array_equal(loaded(dataset), model(dataset)))
