#!/usr/bin/env python3
"""A seeded planted-partition graph for node classification on one big graph (issue 28).

N nodes fall into 4 classes of equal expected size. Each node has 16 noisy features: its
class's mean (a +-1 pattern of 16 entries drawn once per class) times --signal, plus
standard normal noise, rounded to 3 decimals (so the text and the .npz hold the same
numbers). Undirected edges are drawn until the graph has about N * degree / 2 of them: an
endpoint u uniformly, and with probability --homophily a partner v of u's class, otherwise
one of any class (uniformly); self loops and repeated pairs are dropped, and every edge is
written in both directions, so the average degree is about --degree.

The learning target is binary, so that one sigmoid output (examples/big_graphs/gcn.lrnn)
can learn it: whether the node's class is 2 or 3 (`y // 2`). The .npz keeps the class.

Writes, for --out PREFIX:
  PREFIX.examples.txt  one example: `<[16 values]> x(n0017), ..., edge(n0017, n0004), ...`
  PREFIX.queries.txt   one query per node, `1.0 out(n0017).` with the target y // 2
  PREFIX.train.queries.txt, PREFIX.val.queries.txt, PREFIX.test.queries.txt
                       the same queries of the train_mask, val_mask and test_mask nodes
                       (for `lrnn train -q ... --val-queries ... --test-queries ...`)
  PREFIX.npz           x float32 [N,16], edge_index int64 [2,E] (both directions),
                       y int64 [N] (the class), train_mask / val_mask / test_mask bool [N]
                       (a seeded random 60/20/20 split of the nodes)

The text is built as fixed-width byte rows with numpy (no Python loop per fact), so a
2M-node graph takes well under a minute:

  python3 examples/big_graphs/planted_partition.py --nodes 2000 --out /tmp/pp2k
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

CLASSES = 4
FEATURES = 16
CHUNK_ROWS = 1 << 20  # rows of text built at once (bounds the generator's own memory)


def planted_partition(nodes: int, degree: float, homophily: float, signal: float, seed: int):
    """(x, edge_index, y, train_mask, val_mask, test_mask) of one graph, as described above."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, CLASSES, size=nodes, dtype=np.int64)
    class_means = rng.choice([-1.0, 1.0], size=(CLASSES, FEATURES))
    x = signal * class_means[y] + rng.standard_normal((nodes, FEATURES))
    x = np.clip(np.round(x, 3), -9.999, 9.999).astype(np.float32)

    members = [np.flatnonzero(y == c) for c in range(CLASSES)]
    wanted = int(round(nodes * degree / 2))
    pairs = np.empty(0, dtype=np.int64)
    while pairs.size < wanted:
        draw = int((wanted - pairs.size) * 1.05) + 16
        u = rng.integers(0, nodes, size=draw)
        v = rng.integers(0, nodes, size=draw)  # the partner when it is not taken from u's class
        same = rng.random(draw) < homophily
        for c in range(CLASSES):
            pick = same & (y[u] == c)
            v[pick] = members[c][rng.integers(0, members[c].size, size=int(pick.sum()))]
        keep = u != v
        lo, hi = np.minimum(u[keep], v[keep]), np.maximum(u[keep], v[keep])
        pairs = np.unique(np.concatenate([pairs, lo * nodes + hi]))
    pairs = rng.permutation(pairs)[:wanted]
    lo, hi = pairs // nodes, pairs % nodes
    edge_index = np.stack([np.concatenate([lo, hi]), np.concatenate([hi, lo])]).astype(np.int64)

    split = rng.permutation(nodes)
    train_mask = np.zeros(nodes, dtype=bool)
    val_mask = np.zeros(nodes, dtype=bool)
    test_mask = np.zeros(nodes, dtype=bool)
    train_mask[split[: int(0.6 * nodes)]] = True
    val_mask[split[int(0.6 * nodes): int(0.8 * nodes)]] = True
    test_mask[split[int(0.8 * nodes):]] = True
    return x, edge_index, y, train_mask, val_mask, test_mask


def digits_into(rows: np.ndarray, column: int, values: np.ndarray, width: int) -> None:
    """Writes values (non-negative ints) zero-padded to width digits at rows[:, column:]."""
    values = values.astype(np.int64)
    for k in range(width - 1, -1, -1):
        rows[:, column + k] = ord("0") + values % 10
        values = values // 10


def rows_of(pattern: bytes, count: int) -> np.ndarray:
    return np.tile(np.frombuffer(pattern, dtype=np.uint8), (count, 1))


def node_name_width(nodes: int) -> int:
    return max(1, len(str(nodes - 1)))


def feature_text(x: np.ndarray, first: int, width: int) -> bytes:
    """`<[ 1.234,-0.567,...]> x(n0017), ` for the rows of x (node ids first, first + 1, ...)."""
    count = x.shape[0]
    value = b"-0.000"
    pattern = b"<[" + b",".join([value] * FEATURES) + b"]> x(n" + b"0" * width + b"), "
    rows = rows_of(pattern, count)
    milli = np.rint(x.astype(np.float64) * 1000).astype(np.int64)
    for f in range(FEATURES):
        at = 2 + f * (len(value) + 1)
        rows[:, at] = np.where(milli[:, f] < 0, ord("-"), ord(" "))
        magnitude = np.abs(milli[:, f])
        rows[:, at + 1] = ord("0") + magnitude // 1000
        digits_into(rows, at + 3, magnitude % 1000, 3)
    digits_into(rows, len(pattern) - 3 - width, np.arange(first, first + count), width)
    return rows.tobytes()


def edge_text(sources: np.ndarray, targets: np.ndarray, width: int) -> bytes:
    """`edge(n0017, n0004), ` per edge."""
    pattern = b"edge(n" + b"0" * width + b", n" + b"0" * width + b"), "
    rows = rows_of(pattern, sources.size)
    digits_into(rows, 6, sources, width)
    digits_into(rows, 6 + width + 3, targets, width)
    return rows.tobytes()


def write_queries(path: str, y, nodes) -> None:
    """The queries of `nodes` (ascending ids), CHUNK_ROWS lines at a time."""
    width = node_name_width(y.size)
    with open(path, "wb") as out:
        for start in range(0, nodes.size, CHUNK_ROWS):
            chunk = nodes[start: start + CHUNK_ROWS]
            rows = rows_of(b"0.0 out(n" + b"0" * width + b").\n", chunk.size)
            rows[:, 0] = ord("0") + y[chunk] // 2
            digits_into(rows, 9, chunk, width)
            out.write(rows.tobytes())


def write_text(prefix: str, x, edge_index, y) -> None:
    nodes = x.shape[0]
    width = node_name_width(nodes)
    with open(prefix + ".examples.txt", "wb") as out:
        for start in range(0, nodes, CHUNK_ROWS):
            out.write(feature_text(x[start: start + CHUNK_ROWS], start, width))
        edges = edge_index.shape[1]
        for start in range(0, edges, CHUNK_ROWS):
            chunk = edge_index[:, start: start + CHUNK_ROWS]
            text = edge_text(chunk[0], chunk[1], width)
            if start + CHUNK_ROWS >= edges:
                text = text[:-2] + b".\n"  # the last fact ends the example
            out.write(text)
    write_queries(prefix + ".queries.txt", y, np.arange(nodes))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--degree", type=float, default=10.0, help="average degree (edges both ways)")
    parser.add_argument("--homophily", type=float, default=0.6, help="share of edges drawn inside a class")
    parser.add_argument("--signal", type=float, default=0.15, help="scale of the class pattern in the features")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="path prefix of the three files written")
    args = parser.parse_args(argv)
    if args.nodes < 2 or args.degree <= 0 or not 0 <= args.homophily <= 1:
        parser.error("need --nodes >= 2, --degree > 0 and 0 <= --homophily <= 1")
    if args.degree >= args.nodes - 1:
        parser.error("--degree must be below --nodes - 1 (no self loops, no repeated edges)")
    x, edge_index, y, train_mask, val_mask, test_mask = planted_partition(
        args.nodes, args.degree, args.homophily, args.signal, args.seed)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)  # --out /tmp/graphs/g: the folder too
    write_text(args.out, x, edge_index, y)
    for part, mask in (("train", train_mask), ("val", val_mask), ("test", test_mask)):
        write_queries(f"{args.out}.{part}.queries.txt", y, np.flatnonzero(mask))
    np.savez(args.out + ".npz", x=x, edge_index=edge_index, y=y, train_mask=train_mask, val_mask=val_mask,
             test_mask=test_mask)
    print(f"{args.out}: {args.nodes} nodes, {edge_index.shape[1]} directed edges", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
