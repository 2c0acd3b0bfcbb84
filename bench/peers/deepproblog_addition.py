#!/usr/bin/env python3
"""DeepProbLog 2.1.0 on bench/neurosymbolic.py's digit addition: the same images, pairs, MLP,
initial weights (torch.manual_seed), optimizer and batch order, with DeepProbLog's own
program for N-digit addition (its examples/MNIST multi_addition, which enumerates the
digit tuples) and its exact engine. Prints one JSON line: per-epoch seconds and the test
accuracy after each epoch (measured as bench/neurosymbolic.py measures it)."""
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

PROGRAM = """
nn(digit_net,[X],Y,[0,1,2,3,4,5,6,7,8,9]) :: digit(X,Y).
number([],Result,Result).
number([H|T],Acc,Result) :- digit(H,Nr), Acc2 is Nr+10*Acc, number(T,Acc2,Result).
number(X,Y) :- number(X,0,Y).
addition(X,Y,Z) :- number(X,X2), number(Y,Y2), Z is X2+Y2.
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--digits", type=int, default=1)
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
    train = da.make_pairs(images[:half], labels[:half], args.digits, args.train, seed=1)
    test = da.make_pairs(images[half:], labels[half:], args.digits, args.test, seed=2)
    a_img, b_img, _, sums = train
    n = args.digits

    class Images:  # the tensor source: Term("tensor", Term("train", i, side, position))
        def __getitem__(self, item):
            i, side, position = (int(c) for c in item)
            # DeepProbLog's number/3 reads the most significant digit first
            return (a_img if side == 0 else b_img)[i, n - 1 - position]

    class Additions(Dataset):
        def __len__(self):
            return len(sums)

        def to_query(self, i):
            digits = [[Term("tensor", Term("train", Constant(i), Constant(s), Constant(p))) for p in range(n)]
                      for s in (0, 1)]
            return Query(Term("addition", list2term(digits[0]), list2term(digits[1]), Constant(int(sums[i]))))

    torch.manual_seed(0)
    net = da.DigitNet()
    network = Network(net, "digit_net", batching=True)
    network.optimizer = torch.optim.Adam(net.parameters(), lr=args.lr)
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"dpl_addition_{os.getpid()}.pl")
    with open(path, "w") as f:
        f.write(PROGRAM)
    model = Model(path, [network])
    model.set_engine(ExactEngine(model), cache=True)
    model.add_tensor_source("train", Images())
    loader = DataLoader(Additions(), args.batch_size, shuffle=False)
    epochs, accuracies = [], []
    for _ in range(args.epochs):
        start = time.perf_counter()
        train_model(model, loader, 1, log_iter=10 ** 9, verbose=0)
        epochs.append(time.perf_counter() - start)
        accuracies.append(da.accuracy(net, test[0], test[1], test[3]))
        print(json.dumps({"epoch_seconds": epochs, "accuracy": accuracies}), flush=True)
    os.unlink(path)


if __name__ == "__main__":
    main()
