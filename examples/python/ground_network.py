"""Look inside: the ground network of one sample, with every neuron's value and the loss
gradient with respect to it.

    python examples/python/ground_network.py
"""

from lrnn import Dataset, R, Settings
from lrnn.examples import xor_template

model = xor_template().build(Settings(seed=3))
net = model.ground_network(Dataset().add(R.xor[1], [R.a[0], R.b[1]]))
print(net)
for atom, value, grad in zip(net.atoms, net.values, net.gradients):
    print(f"{atom:8s} value {value.round(4).tolist()}  gradient {grad.round(4).tolist()}")
