#!/usr/bin/env python3
"""Generates the demo's data set: small random "molecules" labelled by a hidden rule.

A molecule is a connected random graph of 8 to 14 atoms of types c, h, n, o. It is
*active* when some nitrogen has an oxygen at most two bonds away:

    active :- n(A), bond(A, B), o(B).
    active :- n(A), bond(A, B), bond(B, C), o(C).

The demo trains a two-layer message-passing template (template.lrnn) that knows nothing
of this rule and checks that it recovers it. Output is in the NeuraLogic text format:
one molecule per line in examples, one `target active.` per line in queries. Standard
library only and seeded, so every run writes the same files.
"""

import argparse
import os
import random

ATOM_TYPES = ["c", "h", "n", "o"]
ATOM_WEIGHTS = [0.55, 0.25, 0.1, 0.1]


def random_molecule(rng):
    size = rng.randint(8, 14)
    types = rng.choices(ATOM_TYPES, ATOM_WEIGHTS, k=size)
    # A random tree (every atom bonds to an earlier one) plus a few ring-closing bonds.
    bonds = {(i, rng.randrange(i)) for i in range(1, size)}
    for _ in range(rng.randint(0, 2)):
        a, b = rng.sample(range(size), 2)
        bonds.add((max(a, b), min(a, b)))
    return types, sorted(bonds)


def is_active(types, bonds):
    neighbours = {i: set() for i in range(len(types))}
    for a, b in bonds:
        neighbours[a].add(b)
        neighbours[b].add(a)
    for a, t in enumerate(types):
        if t != "n":
            continue
        near = set(neighbours[a])
        for b in neighbours[a]:
            near |= neighbours[b]
        if any(types[c] == "o" for c in near if c != a):
            return True
    return False


def molecule_text(index, types, bonds):
    atom = lambda i: f"m{index}_{i}"
    facts = [f"{t}({atom(i)})" for i, t in enumerate(types)]
    for a, b in bonds:
        facts.append(f"bond({atom(a)}, {atom(b)})")
        facts.append(f"bond({atom(b)}, {atom(a)})")
    return ", ".join(facts) + "."


def generate(count, rng, first_index):
    """`count` molecules, half active and half inactive (by rejection)."""
    wanted = {True: count // 2, False: count - count // 2}
    out = []
    while wanted[True] or wanted[False]:
        types, bonds = random_molecule(rng)
        label = is_active(types, bonds)
        if wanted[label]:
            wanted[label] -= 1
            out.append((types, bonds, label))
    rng.shuffle(out)
    return [(first_index + i, t, b, l) for i, (t, b, l) in enumerate(out)]


def write(folder, name, molecules):
    with open(os.path.join(folder, f"{name}_examples.txt"), "w") as ex, \
         open(os.path.join(folder, f"{name}_queries.txt"), "w") as qs:
        for index, types, bonds, label in molecules:
            ex.write(molecule_text(index, types, bonds) + "\n")
            qs.write(f"{1.0 if label else 0.0} active.\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="where to write {train,test}_{examples,queries}.txt")
    parser.add_argument("--train", type=int, default=200)
    parser.add_argument("--test", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    os.makedirs(args.folder, exist_ok=True)
    rng = random.Random(args.seed)
    write(args.folder, "train", generate(args.train, rng, 0))
    write(args.folder, "test", generate(args.test, rng, args.train))
    print(f"wrote {args.train} training and {args.test} test molecules to {args.folder}")


if __name__ == "__main__":
    main()
