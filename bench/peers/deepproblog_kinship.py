#!/usr/bin/env python3
"""DeepProbLog 2.1.0 on bench/neurosymbolic.py's kinship chains (examples/neurosymbolic/
kinship_chains.py): the same chains of words, relation-embedding model, initial weights
(torch.manual_seed), optimizer and batch order; the words' relations are a neural predicate
and the chain is composed by the same composition table, link by link, with DeepProbLog's
exact engine. Prints one JSON line per epoch: per-epoch seconds and the test accuracy after
each epoch (measured as bench/neurosymbolic.py measures it)."""
from __future__ import annotations

import torch

import _deepproblog
import kinship_chains as kc


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
    args = _deepproblog.arguments(lr=0.01)
    from problog.logic import Constant, Term, list2term

    words, lengths, _, targets = kc.make_chains(args.train, seed=1)
    test = kc.make_chains(args.test, seed=2)

    class Words:  # the tensor source: Term("tensor", Term("train", i, position)) is a word id
        def __getitem__(self, item):
            i, position = (int(c) for c in item)
            return words[i, position]

    def query(i):
        chain = [Term("tensor", Term("train", Constant(i), Constant(p))) for p in range(int(lengths[i]))]
        return Term("kin", list2term(chain), Constant(int(targets[i])))

    torch.manual_seed(0)
    net = kc.RelationNet()
    _deepproblog.train(args, program(), "relation_net", net, Words(), len(targets), query,
                       lambda: kc.accuracy(net, test))


if __name__ == "__main__":
    main()
