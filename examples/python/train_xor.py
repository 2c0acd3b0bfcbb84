"""Train XOR written in the DSL on a dataset built in Python (PyNeuraLogic style).

    python examples/python/train_xor.py
"""

from lrnn import Adam, Dataset, R, Settings
from lrnn.examples import xor_template

template = xor_template()
print(template)

dataset = Dataset()
for (a, b), y in [((0, 0), 0), ((0, 1), 1), ((1, 0), 1), ((1, 1), 0)]:
    dataset.add(R.xor[y], [R.a[a], R.b[b]])

model = template.build(Settings(optimizer=Adam(lr=0.1), epochs=400, seed=3))
history = model.train(dataset)  # a tqdm bar shows the loss per epoch
print(f"loss {history.train_losses[0]:.4f} -> {history.train_losses[-1]:.4f}")
print("outputs:", model(dataset).round(3))
