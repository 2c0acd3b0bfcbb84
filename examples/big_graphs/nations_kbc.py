#!/usr/bin/env python3
"""Knowledge-base completion on nations (issue 28): the 995 triples r(X, R, Y) of
../shared/datasets/neuralogic/nations/examples.txt, split at random (seeded) 80/10/10 into
training, validation and test triples, and a DistMult or ComplEx template over learnable
entity and relation embeddings (the scores of lrnn.nn.module's KBC modules, and of
torch_geometric.nn.kge).

Writes, for --out PREFIX:
  PREFIX.lrnn              the template: one learnable embedding fact per entity and relation
                           (`{dim} e(usa).`, or drawn values with --xavier), and the score rules
  PREFIX.examples.txt      one example: `nation(usa), ...` (the embeddings are the template's)
  PREFIX.train.links.txt   `score(usa, economicaid, egypt).` per training triple
  PREFIX.val.links.txt, PREFIX.test.links.txt
  PREFIX.npz               entities, relations (names), train/val/test int64 [n, 3] (head,
                           relation, tail indices) and, with --xavier, the initial embeddings

  python3 examples/big_graphs/nations_kbc.py --model distmult --dim 32 --out /tmp/nations
  build/lrnn train /tmp/nations.lrnn -e /tmp/nations.examples.txt -q /tmp/nations.train.links.txt \\
      --val-queries /tmp/nations.val.links.txt --test-queries /tmp/nations.test.links.txt \\
      --link-prediction --corrupt both --margin 1 --ranking --epochs 100
"""
from __future__ import annotations

import argparse
import os
import re
import sys

import numpy as np

DEFAULT_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "datasets",
                            "neuralogic", "nations", "examples.txt")

# Embedding tables per model: (predicate, "entity" | "relation"), in PyG's order.
TABLES = {"distmult": [("e", "entity"), ("r", "relation")],
          "complex": [("e_re", "entity"), ("e_im", "entity"), ("r_re", "relation"), ("r_im", "relation")]}

RULES = {
    "distmult": [
        "score__sr(S, R) :- e(S), r(R). [combination=elproduct]",
        "score(S, R, O) :- score__sr(S, R)^T, e(O). [combination=product]",
    ],
    # Re(<h, r, conj(t)>) = <h_re, r_re, t_re> + <h_im, r_re, t_im> + <h_re, r_im, t_im> - <h_im, r_im, t_re>
    "complex": [
        "score__a(S, R) :- e_re(S), r_re(R). [combination=elproduct]",
        "score__b(S, R) :- e_im(S), r_re(R). [combination=elproduct]",
        "score__c(S, R) :- e_re(S), r_im(R). [combination=elproduct]",
        "score__d(S, R) :- e_im(S), r_im(R). [combination=elproduct]",
        "score(S, R, O) :- score__a(S, R)^T, e_re(O). [combination=product]",
        "score(S, R, O) :- score__b(S, R)^T, e_im(O). [combination=product]",
        "score(S, R, O) :- score__c(S, R)^T, e_im(O). [combination=product]",
        "score(S, R, O) :- score__d(S, R)^T, <-1.0> e_re(O). [combination=product]",
    ],
}


def triples_of(path: str) -> list[tuple[str, str, str]]:
    with open(path) as f:
        return re.findall(r"\br\((\w+),\s*(\w+),\s*(\w+)\)", f.read())


def xavier(rng, rows: int, cols: int) -> np.ndarray:
    """torch.nn.init.xavier_uniform_ of a [rows, cols] embedding table."""
    bound = np.sqrt(6.0 / (rows + cols))
    return rng.uniform(-bound, bound, size=(rows, cols))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(TABLES), default="distmult")
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--xavier", action="store_true",
                        help="write initial embeddings drawn as torch's xavier_uniform_ (also into the .npz)")
    parser.add_argument("--data", default=DEFAULT_DATA, help="nations/examples.txt")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    triples = triples_of(args.data)
    if not triples:
        parser.error(f"no r(X, R, Y) facts in {args.data}")
    entities = sorted({t[0] for t in triples} | {t[2] for t in triples})
    relations = sorted({t[1] for t in triples})
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(triples))
    n_val = n_test = len(triples) // 10
    parts = {"val": order[:n_val], "test": order[n_val: n_val + n_test], "train": order[n_val + n_test:]}
    index = np.array([(entities.index(h), relations.index(r), entities.index(t)) for h, r, t in triples], dtype=np.int64)

    tables = {}
    lines = [f"% {args.model} on nations: written by examples/big_graphs/nations_kbc.py"]
    for predicate, kind in TABLES[args.model]:
        names = entities if kind == "entity" else relations
        values = xavier(rng, len(names), args.dim) if args.xavier else None
        tables[predicate] = values
        for i, name in enumerate(names):
            value = "{%d}" % args.dim if values is None else "[" + ", ".join(f"{v:.17g}" for v in values[i]) + "]"
            lines.append(f"{value} {predicate}({name}).")
    lines += RULES[args.model]
    with open(args.out + ".lrnn", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(args.out + ".examples.txt", "w") as f:
        f.write(", ".join(f"nation({e})" for e in entities) + ".\n")
    for name, rows in parts.items():
        with open(f"{args.out}.{name}.links.txt", "w") as f:
            f.writelines(f"score({triples[i][0]}, {triples[i][1]}, {triples[i][2]}).\n" for i in rows)
    arrays = {"entities": np.array(entities), "relations": np.array(relations),
              **{name: index[rows] for name, rows in parts.items()}}
    if args.xavier:
        arrays.update({f"init_{p}": v for p, v in tables.items()})
    np.savez(args.out + ".npz", **arrays)
    print(f"{args.out}: {len(entities)} entities, {len(relations)} relations, {len(parts['train'])} training, "
          f"{n_val} validation, {n_test} test triples", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
