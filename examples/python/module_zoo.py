"""PyNeuraLogic's module zoo (`neuralogic.nn.module` -> `lrnn.nn.module`): GNN layers, a readout
and a linear head added with `template += Module(...)`, trained to tell triangles from paths.
`print(template)` shows the rules PyNeuraLogic writes for the same modules."""

from lrnn import Dataset, R, Sample, Settings, Template
from lrnn.nn.module import Linear, SAGEConv, SumPooling
from lrnn.optim import Adam

template = Template()
template += SAGEConv(2, 4, "h1", "x", "_edge", activation="relu")  # "_edge": a hidden predicate
template += SAGEConv(4, 4, "h2", "h1", "_edge", activation="relu")
template += SumPooling("pooled", "h2")
template += Linear(4, 1, "out", "pooled", activation="sigmoid", arity=0)
print(template)


def graph(edges, label):
    nodes = sorted({n for edge in edges for n in edge})
    facts = [R.x(n)[[1.0, float(len([e for e in edges if n in e]))]] for n in nodes]
    facts += [R.edge(a, b) for a, b in edges] + [R.edge(b, a) for a, b in edges]
    return Sample([R.out[float(label)]], facts)


triangle, path = [(0, 1), (1, 2), (2, 0)], [(0, 1), (1, 2)]
square, star = [(0, 1), (1, 2), (2, 3), (3, 0)], [(0, 1), (0, 2), (0, 3)]
dataset = Dataset([graph(triangle, 1), graph(path, 0), graph(square, 1), graph(star, 0)])

model = template.build(Settings(optimizer=Adam(lr=0.05), epochs=150, seed=2))
print("before training (cycles 1, trees 0):", [round(float(y), 3) for y in model(dataset).reshape(-1)])
model.train(dataset, progress=False)
print("after training:                     ", [round(float(y), 3) for y in model(dataset).reshape(-1)])
