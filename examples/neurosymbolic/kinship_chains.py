#!/usr/bin/env python3
"""Kinship composition with learned relation embeddings, in the manner of CLUTRR
(docs/neurosymbolic.md "Kinship chains").

A row is a chain of 2 or 3 family links between people, X0 -> X1 -> ... -> Xk, each link a
word: one of three synonyms of father, mother, son or daughter ("father", "dad", "papa",
...; 12 words, the link "X(i+1) is X(i)'s father"). The label is only the composed relation
of Xk to X0 (grandfather, great-granddaughter, ...). A torch model embeds each word
(nn.Embedding, learned) and maps it to a distribution over the four relations; an lrnn
template composes the chain by a composition table, `comp(R0, R1, R)` ("X's R0's R1 is X's
R"), link by link:

    path(I1, R) :- path(I, R0), link(I, R1), comp(R0, R1, R), @next(I, I1).
    correct :- last(I), path(I, R), target(0, R).

so the model learns what each word means from composed relations alone. Chains go all up
(ancestors) or all down (descendants): there the composition is a function of the links
(father's son could be a brother or oneself, which CLUTRR's stories resolve and this
example leaves out). Rows of length 2 and 3 have two structures and batch together.

    python3 examples/neurosymbolic/kinship_chains.py --epochs 3

`torch_exact_probability` is the same composition as tensor products; bench/neurosymbolic.py
(`--task kinship`) times both and DeepProbLog 2.1.0 on it.
"""
from __future__ import annotations

from typing import List, Tuple

import numpy as np
import torch

import predicate_training as training
from digit_addition import entry_rules
from lrnn import R, Settings, Template
from lrnn.nn.torch_function import NeuraLogic

BASE = ["father", "mother", "son", "daughter"]  # the links: (up, male), (up, female), (down, ...)
WORDS = [w for group in (["father", "dad", "papa"], ["mother", "mum", "mama"], ["son", "boy", "lad"],
                         ["daughter", "girl", "lass"]) for w in group]  # word w means BASE[w // 3]
MAX_LINKS = 3
PREFIX = {1: "", 2: "grand", 3: "great-grand"}
# self, then per number of generations 1..3 the four relations of that distance
RELATIONS = ["self"] + [PREFIX[g] + b for g in (1, 2, 3) for b in BASE]


def compose(r0: int, r1: int) -> int:
    """X's r0's r1 (r1 a link, 0..3) as an index in RELATIONS, or -1 when not a direct line
    (an ancestor's descendant or the other way round) or over three generations."""
    if r0 == 0:
        return 1 + r1
    generations, base = (r0 - 1) // 4 + 1, (r0 - 1) % 4
    if (base < 2) != (r1 < 2) or generations == MAX_LINKS:
        return -1
    return 1 + 4 * generations + r1


def template_text() -> str:
    comp = "\n".join(f"comp({r0}, {r1}, {compose(r0, r1)})." for r0 in range(len(RELATIONS)) for r1 in range(4)
                     if compose(r0, r1) >= 0)
    return (comp + "\n"
            "path(I1, R) :- path(I, R0), link(I, R1), comp(R0, R1, R), @next(I, I1). "
            "[combination=product, aggregation=sum]\n"
            "correct :- last(I), path(I, R), target(0, R). [combination=product, aggregation=sum]\n"
            + entry_rules("link", 4) + entry_rules("target", len(RELATIONS)))


def kinship_template() -> Template:
    return Template.from_string(template_text(), "kinship_chains")


def to_logic():
    """The facts of one row: each link's distribution over the four relations (`link_vector(i)`,
    i < the chain's length) and the target relation one-hot (`target_vector(0)`); the chain's
    length (`last(k)`) is part of the row's structure."""
    start = R.path(0, 0)
    lasts = {k: R.last(k) for k in range(1, MAX_LINKS + 1)}
    link_atoms = [R.link_vector(i) for i in range(MAX_LINKS)]
    target_atom = R.target_vector(0)

    def facts(links: torch.Tensor, length: int, target: torch.Tensor) -> List:
        return [start, lasts[int(length)]] + [link_atoms[i][links[i]] for i in range(int(length))] + [target_atom[target]]

    return facts


def composition_tensor() -> torch.Tensor:
    """C[r0, r1, r] = 1 when X's r0's r1 is X's r."""
    c = torch.zeros(len(RELATIONS), 4, len(RELATIONS), dtype=torch.float64)
    for r0 in range(len(RELATIONS)):
        for r1 in range(4):
            if compose(r0, r1) >= 0:
                c[r0, r1, compose(r0, r1)] = 1.0
    return c


def torch_exact_probability(links: torch.Tensor, lengths: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """p(the chain composes to the target) in torch: links [B, 3, 4] (rows shorter than 3
    padded), lengths [B], target one-hot [B, len(RELATIONS)] -> [B]."""
    c = composition_tensor().to(links.dtype)
    path = torch.zeros(links.shape[0], len(RELATIONS), dtype=links.dtype)
    path[:, 0] = 1.0
    for i in range(MAX_LINKS):
        step = torch.einsum("br,bs,rst->bt", path, links[:, i], c)
        path = torch.where((torch.as_tensor(lengths) > i)[:, None], step, path)
    return (path * target.to(links.dtype)).sum(1)


class RelationNet(torch.nn.Module):
    """Word ids (any shape) -> distributions over the four relations: a learned embedding."""

    def __init__(self, dim: int = 8):
        super().__init__()
        self.embedding = torch.nn.Embedding(len(WORDS), dim)
        self.out = torch.nn.Linear(dim, 4)

    def forward(self, words: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.out(self.embedding(words)), dim=-1)


def make_chains(rows: int, seed: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, np.ndarray]:
    """`rows` chains: word ids [rows, 3] (padded with word 0), lengths [rows] (2 or 3), the
    target relation one-hot [rows, len(RELATIONS)], and the targets' indices."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, MAX_LINKS + 1, size=rows)
    down = rng.integers(0, 2, size=rows)
    base = 2 * down[:, None] + rng.integers(0, 2, size=(rows, MAX_LINKS))  # father/mother up, son/daughter down
    words = 3 * base + rng.integers(0, 3, size=(rows, MAX_LINKS))
    targets = np.zeros(rows, dtype=np.int64)
    for r in range(rows):
        rel = 0
        for i in range(lengths[r]):
            rel = compose(rel, int(base[r, i]))
        targets[r] = rel
        words[r, lengths[r]:] = 0
    onehot = np.zeros((rows, len(RELATIONS)))
    onehot[np.arange(rows), targets] = 1.0
    return (torch.tensor(words), torch.tensor(lengths), torch.tensor(onehot, dtype=torch.float64), targets)


def accuracy(net: RelationNet, data) -> float:
    """The fraction of chains whose composition, each word read as its most likely relation,
    is the target."""
    words, lengths, _, targets = data
    with torch.no_grad():
        links = net(words).argmax(-1).numpy()
    right = 0
    for r in range(len(targets)):
        rel = 0
        for i in range(int(lengths[r])):
            rel = compose(rel, int(links[r, i])) if rel >= 0 else -1
        right += rel == targets[r]
    return right / len(targets)


def train_epoch(net: RelationNet, probability, data, optimizer, batch_size: int) -> float:
    """One epoch in the data's order; returns its seconds."""
    words, lengths, target = data[0], data[1], data[2]
    return training.train_batches(lambda b: probability(net(words[b]), lengths[b].tolist(), target[b]), len(words),
                                  optimizer, batch_size)


def lrnn_probability(dtype: torch.dtype = torch.float32) -> NeuraLogic:
    return NeuraLogic(kinship_template(), [], R.correct, to_logic(), Settings(), dtype=dtype, batched=True)


def main() -> None:
    args = training.parser(__doc__, epochs=3).parse_args()
    train, test = make_chains(args.train, seed=1), make_chains(args.test, seed=2)
    torch.manual_seed(0)
    net = RelationNet()
    probability = lrnn_probability() if args.engine == "lrnn" else torch_exact_probability
    training.run(args, net, probability, train, train_epoch, lambda: accuracy(net, test), 0.01, "test accuracy")


if __name__ == "__main__":
    main()
