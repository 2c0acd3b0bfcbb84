#!/usr/bin/env python3
"""DeepProbLog 2.1.0 on bench/neurosymbolic.py's kinship chains (examples/neurosymbolic/
kinship_chains.py): the same chains of words, relation-embedding model, initial weights
(torch.manual_seed), optimizer and batch order; the words' relations are a neural predicate
and the chain is composed by the same composition table, link by link, with DeepProbLog's
exact engine. Prints one JSON line per epoch: per-epoch seconds and the test accuracy after
each epoch (measured as bench/neurosymbolic.py measures it)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "neurosymbolic"))
import kinship_chains as kc  # noqa: E402


def program() -> str:
    """link(W, R): word W means relation R (0..3); path(Words, R0, R) composes the chain
    from R0 with comp/3, the table of kinship_chains.py's template."""
    comp = "\n".join(f"comp({r0},{r1},{kc.compose(r0, r1)})." for r0 in range(len(kc.RELATIONS)) for r1 in range(4)
                     if kc.compose(r0, r1) >= 0)
    return ("nn(relation_net,[W],R,[0,1,2,3]) :: link(W,R).\n" + comp + "\n"
            "path([],R,R).\n"
            "path([W|Ws],R0,R) :- link(W,R1), comp(R0,R1,R2), path(Ws,R2,R).\n"
            "kin(Ws,R) :- path(Ws,0,R).\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--train", type=int, default=700)
    parser.add_argument("--test", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from deepproblog.dataset import DataLoader, Dataset
    from deepproblog.engines import ExactEngine
    from deepproblog.model import Model
    from deepproblog.network import Network
    from deepproblog.query import Query
    from deepproblog.train import train_model
    from problog.logic import Constant, Term, list2term

    words, lengths, _, targets = kc.make_chains(args.train, seed=1)
    test = kc.make_chains(args.test, seed=2)

    class Words:  # the tensor source: Term("tensor", Term("train", i, position)) is a word id
        def __getitem__(self, item):
            i, position = (int(c) for c in item)
            return words[i, position]

    class Chains(Dataset):
        def __len__(self):
            return len(targets)

        def to_query(self, i):
            chain = [Term("tensor", Term("train", Constant(i), Constant(p))) for p in range(int(lengths[i]))]
            return Query(Term("kin", list2term(chain), Constant(int(targets[i]))))

    torch.manual_seed(0)
    net = kc.RelationNet()
    network = Network(net, "relation_net", batching=True)
    network.optimizer = torch.optim.Adam(net.parameters(), lr=args.lr)
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"dpl_kinship_{os.getpid()}.pl")
    with open(path, "w") as f:
        f.write(program())
    model = Model(path, [network])
    model.set_engine(ExactEngine(model), cache=True)
    model.add_tensor_source("train", Words())
    loader = DataLoader(Chains(), args.batch_size, shuffle=False)
    epochs, accuracies = [], []
    for _ in range(args.epochs):
        start = time.perf_counter()
        train_model(model, loader, 1, log_iter=10 ** 9, verbose=0)
        epochs.append(time.perf_counter() - start)
        accuracies.append(kc.accuracy(net, test))
        print(json.dumps({"epoch_seconds": epochs, "accuracy": accuracies}), flush=True)
    os.unlink(path)


if __name__ == "__main__":
    main()
