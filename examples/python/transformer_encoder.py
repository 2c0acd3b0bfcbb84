"""The transformer encoder of "Beyond Transformers with PyNeuraLogic", written in the DSL:
forward on six tokens with random embeddings, a few training steps, and the causal mask.

    python examples/python/transformer_encoder.py
"""

import numpy as np

from lrnn import Adam, Dataset, R, Settings, V
from lrnn.examples import transformer_encoder

dim, tokens = 4, 6
rng = np.random.default_rng(0)
embeddings = rng.normal(size=(tokens, dim))
facts = [R.input(i)[embeddings[i]] for i in range(tokens)]

template = transformer_encoder(dim, mask="causal")
print(template)

model = template.build(Settings(optimizer=Adam(lr=0.05), seed=1))
print("encoded tokens:\n", model(Dataset().add([R.norm2(V.I)], facts)).round(3))

targets = rng.normal(size=(tokens, dim))
train = Dataset().add([R.norm2(i)[targets[i]] for i in range(tokens)], facts)
history = model.train(train, 10, progress=False)
print("loss per step:", np.round(history.train_losses, 4))

net = model.ground_network(train)
pairs = sorted(a for a in net.atoms if a.startswith("attention_weights("))
print(f"{len(pairs)} attention pairs grounded (causal: j <= i), e.g. {pairs[:3]}")
