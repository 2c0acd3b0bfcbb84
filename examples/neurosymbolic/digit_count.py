#!/usr/bin/env python3
""""How many": counting digits as neural predicates (docs/neurosymbolic.md "How many").

A row is K 8x8 digit images (scikit-learn's `load_digits`) and a queried digit d; the label
is only how many of the K images show d. The MLP of digit_addition.py gives each image a
distribution over 0..9, and the template computes p(count = n) exactly, image by image:
`count(I, N)` is the probability that N of the images before I show d, so a row grounds
K (K + 1) count rules (and 10 K for is/1), where enumerating the images' digits would take
10^K.

    python3 examples/neurosymbolic/digit_count.py --images 4 --epochs 2

`torch_exact_probability` is the same recursion in plain torch; bench/neurosymbolic.py
(`--task count`) times both and DeepProbLog 2.1.0 on it.
"""
from __future__ import annotations

from typing import List

import numpy as np
import torch

import predicate_training as training
from digit_addition import DigitNet, digit_main, entry_rules
from lrnn import R, Settings, Template
from lrnn.nn.torch_function import NeuraLogic

# is(I): image I shows the queried digit; count(I1, N) from count(I, N) by image I, which
# shows d (N + 1) or not (N, the soft negation 1 - is(I)); the rows' counts are at most 9.
RULES = """
is(I) :- img(I, X), d(0, X). [combination=product, aggregation=sum]
count(I1, N) :- count(I, N), ~is(I), @next(I, I1). [combination=product, aggregation=sum]
count(I1, N1) :- count(I, N), is(I), @next(I, I1), @next(N, N1). [combination=product, aggregation=sum]
correct :- last(K), count(K, N), n(0, N). [combination=product, aggregation=sum]
"""


def count_template() -> Template:
    return Template.from_string(RULES + "".join(entry_rules(r) for r in ("img", "d", "n")), "digit_count")


def to_logic(images: int):
    """The facts of one row: each image's digit distribution (`img_vector(i)`), the queried
    digit and the count one-hot (`d_vector(0)`, `n_vector(0)`), all 10-vectors, valued, so
    that every row has one structure."""
    if not 1 <= images <= 9:
        raise ValueError(f"the count is a digit: 1 to 9 images per row, got {images}")
    constant = [R.count(0, 0), R.last(images)]
    img_atoms = [R.img_vector(i) for i in range(images)]
    d_atom, n_atom = R.d_vector(0), R.n_vector(0)

    def facts(p: torch.Tensor, digit: torch.Tensor, count: torch.Tensor) -> List:
        return constant + [a[p[i]] for i, a in enumerate(img_atoms)] + [d_atom[digit], n_atom[count]]

    return facts


def torch_exact_probability(p: torch.Tensor, digit: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """p(count = n) in torch, the template's recursion: p [B, K, 10], digit and count one-hot
    [B, 10] -> [B]."""
    batch, images = p.shape[0], p.shape[1]
    shows = (p * digit.to(p.dtype)[:, None, :]).sum(-1)  # [B, K]
    ways = torch.zeros(batch, images + 1, dtype=p.dtype)
    ways[:, 0] = 1.0
    for i in range(images):
        q = shows[:, i:i + 1]
        ways = ways * (1 - q) + torch.nn.functional.pad(ways[:, :-1], (1, 0)) * q
    return (ways * count.to(p.dtype)[:, :images + 1]).sum(1)


def make_rows(images: np.ndarray, labels: np.ndarray, k: int, rows: int, seed: int):
    """`rows` rows of k images: the images [rows, k, 64], the queried digit and the count
    one-hot [rows, 10], and the counts. Half the queried digits are the label of one of the
    row's images (so the counts are not mostly 0), half uniform."""
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(images), size=(rows, k))
    shown = labels[pick]
    own = shown[np.arange(rows), rng.integers(0, k, size=rows)]
    digit = np.where(rng.random(rows) < 0.5, own, rng.integers(0, 10, size=rows))
    counts = (shown == digit[:, None]).sum(1)
    digit_hot, count_hot = np.zeros((rows, 10)), np.zeros((rows, 10))
    digit_hot[np.arange(rows), digit] = 1.0
    count_hot[np.arange(rows), counts] = 1.0
    return (torch.tensor(images[pick], dtype=torch.float32), torch.tensor(digit_hot, dtype=torch.float64),
            torch.tensor(count_hot, dtype=torch.float64), counts, digit)


def accuracy(net: DigitNet, data) -> float:
    """The fraction of counts right when each image's digit is the MLP's most likely one."""
    img, _, _, counts, digit = data
    with torch.no_grad():
        shown = net(img).argmax(-1).numpy()
    return float(((shown == digit[:, None]).sum(1) == counts).mean())


def train_epoch(net: DigitNet, probability, data, optimizer, batch_size: int) -> float:
    """One epoch in the data's order; returns its seconds."""
    img, digit, count = data[0], data[1], data[2]
    return training.train_batches(lambda b: probability(net(img[b]), digit[b], count[b]), len(img), optimizer,
                                  batch_size)


def lrnn_probability(images: int, dtype: torch.dtype = torch.float32) -> NeuraLogic:
    return NeuraLogic(count_template(), [], R.correct, to_logic(images), Settings(), dtype=dtype, batched=True)


def main() -> None:
    digit_main(__doc__, "images", 4, make_rows, lrnn_probability, torch_exact_probability, train_epoch, accuracy,
               "test count accuracy")


if __name__ == "__main__":
    main()
