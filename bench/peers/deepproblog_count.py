#!/usr/bin/env python3
"""DeepProbLog 2.1.0 on bench/neurosymbolic.py's "how many" task (examples/neurosymbolic/
digit_count.py): the same rows of K images and a queried digit, MLP, initial weights
(torch.manual_seed), optimizer and batch order, with a counting program over the images'
list and DeepProbLog's exact engine. Prints one JSON line per epoch: per-epoch seconds and
the test count accuracy after each epoch (measured as bench/neurosymbolic.py measures it)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "neurosymbolic"))
import digit_addition as da  # noqa: E402
import digit_count as dc  # noqa: E402

# count(Images, D, N): N of the images show digit D (an image shows D, or another digit Y).
PROGRAM = """
nn(digit_net,[X],Y,[0,1,2,3,4,5,6,7,8,9]) :: digit(X,Y).
count([],_,0).
count([H|T],D,N) :- digit(H,D), count(T,D,N1), N is N1+1.
count([H|T],D,N) :- digit(H,Y), Y \\= D, count(T,D,N).
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--train", type=int, default=700)
    parser.add_argument("--test", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.003)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from deepproblog.dataset import DataLoader, Dataset
    from deepproblog.engines import ExactEngine
    from deepproblog.model import Model
    from deepproblog.network import Network
    from deepproblog.query import Query
    from deepproblog.train import train_model
    from problog.logic import Constant, Term, list2term

    images, labels = da.load_digit_images()
    half = len(images) // 2
    train = dc.make_rows(images[:half], labels[:half], args.images, args.train, seed=1)
    test = dc.make_rows(images[half:], labels[half:], args.images, args.test, seed=2)
    img, _, _, counts, digits = train

    class Images:  # the tensor source: Term("tensor", Term("train", i, position))
        def __getitem__(self, item):
            i, position = (int(c) for c in item)
            return img[i, position]

    class Rows(Dataset):
        def __len__(self):
            return len(counts)

        def to_query(self, i):
            row = [Term("tensor", Term("train", Constant(i), Constant(p))) for p in range(args.images)]
            return Query(Term("count", list2term(row), Constant(int(digits[i])), Constant(int(counts[i]))))

    torch.manual_seed(0)
    net = da.DigitNet()
    network = Network(net, "digit_net", batching=True)
    network.optimizer = torch.optim.Adam(net.parameters(), lr=args.lr)
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"dpl_count_{os.getpid()}.pl")
    with open(path, "w") as f:
        f.write(PROGRAM)
    model = Model(path, [network])
    model.set_engine(ExactEngine(model), cache=True)
    model.add_tensor_source("train", Images())
    loader = DataLoader(Rows(), args.batch_size, shuffle=False)
    epochs, accuracies = [], []
    for _ in range(args.epochs):
        start = time.perf_counter()
        train_model(model, loader, 1, log_iter=10 ** 9, verbose=0)
        epochs.append(time.perf_counter() - start)
        accuracies.append(dc.accuracy(net, test))
        print(json.dumps({"epoch_seconds": epochs, "accuracy": accuracies}), flush=True)
    os.unlink(path)


if __name__ == "__main__":
    main()
