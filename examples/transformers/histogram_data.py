#!/usr/bin/env python3
"""Generates the histogram task for examples/transformers/histogram.lrnn (seeded).

Each example is a sequence of `length` tokens over a vocabulary of `vocab` symbols, given as
one-hot facts `<[0, 1, 0, 0]> tok(i)`; the target of query `hist(i)` is how often token i's
symbol occurs in the sequence (1..length), one-hot over `length` classes. Writes
train/test examples and queries files (named examples, one line each) into --out.

    python3 examples/transformers/histogram_data.py --out /tmp/histogram
    build/lrnn train examples/transformers/histogram.lrnn \
        --examples /tmp/histogram/train_examples.txt --queries /tmp/histogram/train_queries.txt \
        --test-examples /tmp/histogram/test_examples.txt --test-queries /tmp/histogram/test_queries.txt \
        --loss crossentropy --lr 0.01 --epochs 60 --batch-size 32
"""
import argparse
import os
import random


def one_hot(k, size):
    return "[" + ", ".join("1" if i == k else "0" for i in range(size)) + "]"


def write(path_prefix, sequences, vocab, length):
    with open(path_prefix + "_examples.txt", "w") as ex, open(path_prefix + "_queries.txt", "w") as qs:
        for s, seq in enumerate(sequences):
            facts = ", ".join(f"<{one_hot(t, vocab)}> tok({i})" for i, t in enumerate(seq))
            ex.write(f"s{s} :- {facts}.\n")
            queries = ", ".join(f"{one_hot(seq.count(t) - 1, length)} hist({i})" for i, t in enumerate(seq))
            qs.write(f"s{s} :- {queries}.\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--train", type=int, default=400)
    p.add_argument("--test", type=int, default=200)
    p.add_argument("--length", type=int, default=6)
    p.add_argument("--vocab", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    rng = random.Random(a.seed)
    seqs = [[rng.randrange(a.vocab) for _ in range(a.length)] for _ in range(a.train + a.test)]
    os.makedirs(a.out, exist_ok=True)
    write(os.path.join(a.out, "train"), seqs[: a.train], a.vocab, a.length)
    write(os.path.join(a.out, "test"), seqs[a.train:], a.vocab, a.length)


if __name__ == "__main__":
    main()
