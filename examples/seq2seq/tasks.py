"""Seeded sequence-to-sequence tasks over digit tokens (issue 35): reversal, sorting and
addition. Token ids: 0 padding (torch's batches only), 1 BOS, 2 EOS, digit k is 3 + k, and
addition's "+" is 13, so every task fits a vocabulary of 14.

Each task draws pairs of the lengths asked; held-out lengths are lengths never drawn for
training (docs/seq2seq.md "Examples")."""

from __future__ import annotations

import random
from typing import List, Sequence, Tuple

PAD, BOS, EOS, PLUS = 0, 1, 2, 13
VOCAB = 14
Pair = Tuple[List[int], List[int]]


def digit(k: int) -> int:
    return 3 + k


def _digits(rng: random.Random, n: int) -> List[int]:
    return [rng.randrange(10) for _ in range(n)]


def reversal(count: int, lengths: Sequence[int], seed: int) -> List[Pair]:
    """A digit string and its reverse."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        x = [digit(k) for k in _digits(rng, rng.choice(list(lengths)))]
        out.append((x, x[::-1]))
    return out


def sorting(count: int, lengths: Sequence[int], seed: int) -> List[Pair]:
    """A digit string and its digits in ascending order."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        x = [digit(k) for k in _digits(rng, rng.choice(list(lengths)))]
        out.append((x, sorted(x)))
    return out


def addition(count: int, lengths: Sequence[int], seed: int) -> List[Pair]:
    """"a+b" of two numbers of the length drawn (most significant digit first) and their sum."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.choice(list(lengths))
        a, b = rng.randrange(10 ** n), rng.randrange(10 ** n)
        src = [digit(int(c)) for c in str(a)] + [PLUS] + [digit(int(c)) for c in str(b)]
        out.append((src, [digit(int(c)) for c in str(a + b)]))
    return out


TASKS = {"reversal": reversal, "sorting": sorting, "addition": addition}
