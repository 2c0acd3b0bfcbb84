#!/usr/bin/env python3
"""DeepProbLog 2.1.0 on bench/neurosymbolic.py's digit addition: the same images, pairs, MLP,
initial weights (torch.manual_seed), optimizer and batch order, with DeepProbLog's own
program for N-digit addition (its examples/MNIST multi_addition, which enumerates the
digit tuples) and its exact engine. Prints one JSON line per epoch: per-epoch seconds and
the test accuracy after each epoch (measured as bench/neurosymbolic.py measures it)."""
from __future__ import annotations

import torch

import _deepproblog
import digit_addition as da

PROGRAM = """
nn(digit_net,[X],Y,[0,1,2,3,4,5,6,7,8,9]) :: digit(X,Y).
number([],Result,Result).
number([H|T],Acc,Result) :- digit(H,Nr), Acc2 is Nr+10*Acc, number(T,Acc2,Result).
number(X,Y) :- number(X,0,Y).
addition(X,Y,Z) :- number(X,X2), number(Y,Y2), Z is X2+Y2.
"""


def main() -> None:
    args = _deepproblog.arguments(lr=0.003, size="digits", default=1)
    from problog.logic import Constant, Term, list2term

    train, test = da.split_rows(da.make_pairs, args.digits, args.train, args.test)
    a_img, b_img, _, sums = train
    n = args.digits

    class Images:  # the tensor source: Term("tensor", Term("train", i, side, position))
        def __getitem__(self, item):
            i, side, position = (int(c) for c in item)
            # DeepProbLog's number/3 reads the most significant digit first
            return (a_img if side == 0 else b_img)[i, n - 1 - position]

    def query(i):
        digits = [[Term("tensor", Term("train", Constant(i), Constant(s), Constant(p))) for p in range(n)]
                  for s in (0, 1)]
        return Term("addition", list2term(digits[0]), list2term(digits[1]), Constant(int(sums[i])))

    torch.manual_seed(0)
    net = da.DigitNet()
    _deepproblog.train(args, PROGRAM, "digit_net", net, Images(), len(sums), query,
                       lambda: da.accuracy(net, test[0], test[1], test[3]))


if __name__ == "__main__":
    main()
