"""What bench/neurosymbolic.py's DeepProbLog 2.1.0 peers share (deepproblog_addition.py,
deepproblog_count.py, deepproblog_kinship.py): their options, and the training loop (the
program in a temporary file, one network with batching and Adam, the exact engine with
caching, a tensor source, batches in the data's order), printing one JSON line per epoch:
the epochs' seconds and the test accuracy after each."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
# the tasks' data, models and accuracy come from the examples themselves
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "neurosymbolic"))


def arguments(lr: float, size: str | None = None, default: int = 1) -> argparse.Namespace:
    """The peers' options (and `--SIZE`, an int, when given); torch on one thread."""
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--train", type=int, default=700)
    p.add_argument("--test", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=lr)
    if size:
        p.add_argument(f"--{size}", type=int, default=default)
    torch.set_num_threads(1)
    return p.parse_args()


def train(args, program: str, name: str, net: Any, source: Any, rows: int, query: Callable[[int], Any],
          accuracy: Callable[[], float]) -> None:
    """Train `net` (DeepProbLog's network `name` in `program`) on `rows` queries, query(i) the
    i-th as a problog Term, with tensors from `source` (the tensor source "train")."""
    import torch
    from deepproblog.dataset import DataLoader, Dataset
    from deepproblog.engines import ExactEngine
    from deepproblog.model import Model
    from deepproblog.network import Network
    from deepproblog.query import Query
    from deepproblog.train import train_model

    class Rows(Dataset):
        def __len__(self):
            return rows

        def to_query(self, i):
            return Query(query(i))

    network = Network(net, name, batching=True)
    network.optimizer = torch.optim.Adam(net.parameters(), lr=args.lr)
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"dpl_{name}_{os.getpid()}.pl")
    with open(path, "w") as f:
        f.write(program)
    model = Model(path, [network])
    model.set_engine(ExactEngine(model), cache=True)
    model.add_tensor_source("train", source)
    loader = DataLoader(Rows(), args.batch_size, shuffle=False)
    epochs, accuracies = [], []
    for _ in range(args.epochs):
        start = time.perf_counter()
        train_model(model, loader, 1, log_iter=10 ** 9, verbose=0)
        epochs.append(time.perf_counter() - start)
        accuracies.append(accuracy())
        print(json.dumps({"epoch_seconds": epochs, "accuracy": accuracies}), flush=True)
    os.unlink(path)
