#!/usr/bin/env python3
"""DeepProbLog 2.1.0 on bench/neurosymbolic.py's "how many" task (examples/neurosymbolic/
digit_count.py): the same rows of K images and a queried digit, MLP, initial weights
(torch.manual_seed), optimizer and batch order, with a counting program over the images'
list and DeepProbLog's exact engine. Prints one JSON line per epoch: per-epoch seconds and
the test count accuracy after each epoch (measured as bench/neurosymbolic.py measures it)."""
from __future__ import annotations

import torch

import _deepproblog
import digit_addition as da
import digit_count as dc

# count(Images, D, N): N of the images show digit D (an image shows D, or another digit Y).
PROGRAM = """
nn(digit_net,[X],Y,[0,1,2,3,4,5,6,7,8,9]) :: digit(X,Y).
count([],_,0).
count([H|T],D,N) :- digit(H,D), count(T,D,N1), N is N1+1.
count([H|T],D,N) :- digit(H,Y), Y \\= D, count(T,D,N).
"""


def main() -> None:
    args = _deepproblog.arguments(lr=0.003, size="images", default=4)
    from problog.logic import Constant, Term, list2term

    train, test = da.split_rows(dc.make_rows, args.images, args.train, args.test)
    img, _, _, counts, digits = train

    class Images:  # the tensor source: Term("tensor", Term("train", i, position))
        def __getitem__(self, item):
            i, position = (int(c) for c in item)
            return img[i, position]

    def query(i):
        row = [Term("tensor", Term("train", Constant(i), Constant(p))) for p in range(args.images)]
        return Term("count", list2term(row), Constant(int(digits[i])), Constant(int(counts[i])))

    torch.manual_seed(0)
    net = da.DigitNet()
    _deepproblog.train(args, PROGRAM, "digit_net", net, Images(), len(counts), query, lambda: dc.accuracy(net, test))


if __name__ == "__main__":
    main()
