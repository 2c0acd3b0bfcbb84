"""Writes one big random graph (default 200k nodes, 2M directed edges, 16 float features
per node, 7 classes) as the text a user would write (DIR/examples.txt: one example with
node(i), [..] x(i) and edge(i, j) facts; DIR/queries.txt: one `graph :- [one-hot]
predict(i).` line per node) and as DIR/graph.npz (x, edge_index, y, masks) for
`--dataset npz:FILE`. bench_parse DIR/examples.txt times the text parser on it.

    python3 bench/random_graph_text.py /tmp/big_graph [--nodes 200000 --edges 2000000 --features 16]
"""

import argparse
import os

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--nodes", type=int, default=200_000)
    ap.add_argument("--edges", type=int, default=2_000_000)
    ap.add_argument("--features", type=int, default=16)
    ap.add_argument("--classes", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    x = rng.normal(size=(a.nodes, a.features))
    edge_index = rng.integers(0, a.nodes, size=(2, a.edges), dtype=np.int64)
    y = rng.integers(0, a.classes, size=a.nodes, dtype=np.int64)
    split = rng.random(a.nodes)
    os.makedirs(a.out, exist_ok=True)
    np.savez(os.path.join(a.out, "graph.npz"), x=x, edge_index=edge_index, y=y, train_mask=split < 0.6,
             val_mask=(split >= 0.6) & (split < 0.8), test_mask=split >= 0.8)
    with open(os.path.join(a.out, "examples.txt"), "w") as f:
        f.write("graph :- ")
        f.write(", ".join(f"node({i}), [{', '.join(map(repr, row))}] x({i})" for i, row in enumerate(x.tolist())))
        f.write(", ")
        f.write(", ".join(f"edge({s}, {t})" for s, t in zip(edge_index[0].tolist(), edge_index[1].tolist())))
        f.write(".\n")
    one_hot = np.eye(a.classes, dtype=np.int64)
    with open(os.path.join(a.out, "queries.txt"), "w") as f:
        for i, label in enumerate(y.tolist()):
            f.write(f"graph :- [{', '.join(map(str, one_hot[label]))}] predict({i}).\n")
    for name in ("examples.txt", "queries.txt", "graph.npz"):
        print(f"{name}: {os.path.getsize(os.path.join(a.out, name)) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
