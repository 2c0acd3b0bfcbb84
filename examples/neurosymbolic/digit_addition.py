#!/usr/bin/env python3
"""Multi-digit addition as neural predicates (docs/neurosymbolic.md "Batched neural predicates").

An MLP reads 8x8 digit images (scikit-learn's `load_digits`, shipped with the wheel) and gives
each a distribution over 0..9; an lrnn template adds two N-digit numbers digit by digit with a
carry, and the MLP learns from the sums alone (the loss is -log p(a + b = target)). The
template is linear in N: `carry(I, C)` is the probability that the digits below position I
add up to the target's and carry C into position I, so each position adds 2 x 10 x 10 ground
rules, where enumerating the digit tuples would take 100^N.

    python3 examples/neurosymbolic/digit_addition.py --digits 1 --epochs 2

`torch_exact_probability` computes the same probability in plain torch (the same carry
recursion as tensor products): the two train the same MLP to the same accuracy, which
bench/neurosymbolic.py measures.
"""
from __future__ import annotations

from typing import List, Tuple

import numpy as np
import torch

import predicate_training as training
from lrnn import R, Settings, Template
from lrnn.nn.torch_function import NeuraLogic

# carry(I1, C1) over the digits a(I, X) and b(I, Y) of position I, the carry C into it and the
# target's digit s(I, Z); the last position's carry must be the target's top digit.
RULES = """
carry(I1, 0) :- carry(I, C), a(I, X), b(I, Y), @add(X, Y, S), @add(S, C, Z), @lt(Z, 10), s(I, Z), @next(I, I1). [combination=product, aggregation=sum]
carry(I1, 1) :- carry(I, C), a(I, X), b(I, Y), @add(X, Y, S), @add(S, C, T), @geq(T, 10), @sub(T, 10, Z), s(I, Z), @next(I, I1). [combination=product, aggregation=sum]
correct :- last(I), carry(I, C), s(I, C). [combination=product, aggregation=sum]
"""


def entry_rules(relation: str, size: int = 10) -> str:
    """`relation(I, k)` is entry k of the `size`-vector fact `relation_vector(I)`: a fixed
    1 x size row of the identity reads it. A row then writes one fact per image (the MLP's
    output row), not ten, which is what makes to_logic cheap."""
    lines = []
    for k in range(size):
        row = ", ".join("1" if j == k else "0" for j in range(size))
        lines.append(f"{relation}(I, {k}) :- <[[{row}]]> {relation}_vector(I).")
    return "\n".join(lines) + "\n"


def addition_template() -> Template:
    return Template.from_string(RULES + "".join(entry_rules(r) for r in ("a", "b", "s")), "digit_addition")


def to_logic(digits: int):
    """The facts of one row: the digit distributions of a and b (position 0 the units) and the
    target's digits one-hot, each a 10-vector (the target's valued too, so that every row has
    the same structure and the rows of a batch share one grounding and one plan)."""

    # The atoms are made once; a row only gives them their values (making an atom costs more
    # than the engine's work on it).
    constant = [R.carry(0, 0), R.last(digits)]
    a_atoms = [R.a_vector(i) for i in range(digits)]
    b_atoms = [R.b_vector(i) for i in range(digits)]
    s_atoms = [R.s_vector(i) for i in range(digits + 1)]

    def facts(pa: torch.Tensor, pb: torch.Tensor, target: torch.Tensor) -> List:
        return (constant + [a[pa[i]] for i, a in enumerate(a_atoms)] + [b[pb[i]] for i, b in enumerate(b_atoms)]
                + [s[target[i]] for i, s in enumerate(s_atoms)])

    return facts


class DigitNet(torch.nn.Module):
    """8x8 image -> distribution over 0..9."""

    def __init__(self, hidden: int = 64):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.layers(images), dim=-1)


def make_pairs(images: np.ndarray, labels: np.ndarray, digits: int, count: int, seed: int):
    """`count` additions of two `digits`-digit numbers drawn from the images: (a images, b
    images) as [count, digits, 64] (position 0 the units), the sums' digits one-hot as
    [count, digits + 1, 10], and the sums."""
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(images), size=(count, 2, digits))
    a_img, b_img = images[pick[:, 0]], images[pick[:, 1]]
    powers = 10 ** np.arange(digits)
    sums = (labels[pick[:, 0]] * powers).sum(1) + (labels[pick[:, 1]] * powers).sum(1)
    onehot = np.zeros((count, digits + 1, 10))
    for i in range(digits + 1):
        onehot[np.arange(count), i, (sums // 10 ** i) % 10] = 1.0
    return (torch.tensor(a_img, dtype=torch.float32), torch.tensor(b_img, dtype=torch.float32),
            torch.tensor(onehot, dtype=torch.float64), sums)


def load_digit_images() -> Tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    data = load_digits()
    return data.data / 16.0, data.target


def split_rows(make, size: int, train: int, test: int):
    """make(images, labels, size, rows, seed) for `train` rows of the first half of the
    images (seed 1) and `test` rows of the second half (seed 2): the examples' data."""
    images, labels = load_digit_images()
    half = len(images) // 2
    return make(images[:half], labels[:half], size, train, seed=1), make(images[half:], labels[half:], size, test, seed=2)


def torch_exact_probability(pa: torch.Tensor, pb: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """p(a + b = target) in torch, the template's recursion: pa, pb [B, N, 10], target one-hot
    [B, N + 1, 10] -> [B]."""
    batch, digits = pa.shape[0], pa.shape[1]
    total = torch.arange(10).view(10, 1) + torch.arange(10).view(1, 10)  # x + y
    carry = torch.zeros(batch, 2, dtype=pa.dtype)
    carry[:, 0] = 1.0
    for i in range(digits):
        joint = pa[:, i, :, None] * pb[:, i, None, :]  # [B, 10, 10]
        new = []
        for c_out in (0, 1):
            ways = torch.zeros(batch, dtype=pa.dtype)
            for c_in in (0, 1):
                t = total + c_in
                digit = (t - 10 * c_out).clamp(0, 9)
                mask = ((t >= 10 * c_out) & (t < 10 * c_out + 10)).to(pa.dtype)
                match = target[:, i, :].to(pa.dtype)[:, digit] * mask  # [B, 10, 10]
                ways = ways + carry[:, c_in] * (joint * match).sum((1, 2))
            new.append(ways)
        carry = torch.stack(new, dim=1)
    return (carry * target[:, digits, :2].to(pa.dtype)).sum(1)


def accuracy(net: DigitNet, a_img: torch.Tensor, b_img: torch.Tensor, sums: np.ndarray) -> float:
    """The fraction of sums right when each digit is the MLP's most likely one."""
    with torch.no_grad():
        digits = a_img.shape[1]
        powers = torch.tensor(10 ** np.arange(digits))
        a = (net(a_img).argmax(-1) * powers).sum(1)
        b = (net(b_img).argmax(-1) * powers).sum(1)
    return float(((a + b).numpy() == sums).mean())


def train_epoch(net: DigitNet, probability, data, optimizer, batch_size: int) -> float:
    """One epoch in the data's order; returns its seconds."""
    a_img, b_img, target, _ = data
    return training.train_batches(lambda b: probability(net(a_img[b]), net(b_img[b]), target[b]), len(a_img),
                                  optimizer, batch_size)


def lrnn_probability(digits: int):
    layer = NeuraLogic(addition_template(), [], R.correct, to_logic(digits), Settings(), dtype=torch.float32,
                       batched=True)
    return layer


def digit_main(doc: str, size: str, default: int, make, lrnn, torch_exact, epoch, accuracy_of, what: str) -> None:
    """The main() of the digit examples: `--SIZE` (default `default`) rows of make(...) from
    the images' halves, the MLP trained through lrnn(size) or torch_exact, accuracy_of(net,
    test) printed after each epoch."""
    parser = training.parser(doc, epochs=2)
    parser.add_argument(f"--{size}", type=int, default=default)
    args = parser.parse_args()
    n = getattr(args, size)
    torch.manual_seed(0)
    train, test = split_rows(make, n, args.train, args.test)
    net = DigitNet()
    probability = lrnn(n) if args.engine == "lrnn" else torch_exact
    training.run(args, net, probability, train, epoch, lambda: accuracy_of(net, test), 0.003, what)


def main() -> None:
    digit_main(__doc__, "digits", 1, make_pairs, lrnn_probability, torch_exact_probability, train_epoch,
               lambda net, test: accuracy(net, test[0], test[1], test[3]), "test accuracy")


if __name__ == "__main__":
    main()
