#!/usr/bin/env python3
"""A planted-partition graph (planted_partition.py) split for link prediction (issue 28).

The undirected edges are split at random (seeded) into training, validation and test links
(85/5/10, as PyG's link-prediction tutorial splits them with RandomLinkSplit); only the
training links are edges of the graph the encoder reads, so validation and test links are
never seen by message passing.

Writes, for --out PREFIX:
  PREFIX.examples.txt     one example: the node features and the training edges (both ways)
  PREFIX.train.links.txt  `link(n0017, n0004).` per training link (one direction)
  PREFIX.val.links.txt, PREFIX.test.links.txt   the same for validation and test links
  PREFIX.npz              x float32 [N,16], train_edges / val_edges / test_edges int64 [2, *]

  python3 examples/big_graphs/link_split.py --nodes 2000 --out /tmp/links2k
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import planted_partition as pp  # noqa: E402


def link_text(pairs: np.ndarray, width: int) -> bytes:
    """`link(n0017, n0004).` per column of pairs [2, n]."""
    pattern = b"link(n" + b"0" * width + b", n" + b"0" * width + b").\n"
    rows = pp.rows_of(pattern, pairs.shape[1])
    pp.digits_into(rows, 6, pairs[0], width)
    pp.digits_into(rows, 6 + width + 3, pairs[1], width)
    return rows.tobytes()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--degree", type=float, default=10.0)
    parser.add_argument("--homophily", type=float, default=0.6)
    parser.add_argument("--signal", type=float, default=0.15)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--val", type=float, default=0.05, help="share of the links held out for validation")
    parser.add_argument("--test", type=float, default=0.10, help="share of the links held out for test")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    x, edge_index, _, _, _, _ = pp.planted_partition(args.nodes, args.degree, args.homophily, args.signal, args.seed)
    undirected = edge_index[:, : edge_index.shape[1] // 2]  # (lo, hi) pairs; the second half reverses them
    rng = np.random.default_rng(args.seed + 1)
    order = rng.permutation(undirected.shape[1])
    n_val, n_test = int(args.val * order.size), int(args.test * order.size)
    parts = {"val": undirected[:, order[:n_val]], "test": undirected[:, order[n_val: n_val + n_test]],
             "train": undirected[:, order[n_val + n_test:]]}
    train = parts["train"]
    graph_edges = np.concatenate([train, train[::-1]], axis=1)
    width = pp.node_name_width(args.nodes)
    with open(args.out + ".examples.txt", "wb") as out:
        for start in range(0, args.nodes, pp.CHUNK_ROWS):
            out.write(pp.feature_text(x[start: start + pp.CHUNK_ROWS], start, width))
        for start in range(0, graph_edges.shape[1], pp.CHUNK_ROWS):
            chunk = graph_edges[:, start: start + pp.CHUNK_ROWS]
            text = pp.edge_text(chunk[0], chunk[1], width)
            if start + pp.CHUNK_ROWS >= graph_edges.shape[1]:
                text = text[:-2] + b".\n"
            out.write(text)
    for name, pairs in parts.items():
        with open(f"{args.out}.{name}.links.txt", "wb") as out:
            for start in range(0, pairs.shape[1], pp.CHUNK_ROWS):
                out.write(link_text(pairs[:, start: start + pp.CHUNK_ROWS], width))
    np.savez(args.out + ".npz", x=x, train_edges=train, val_edges=parts["val"], test_edges=parts["test"])
    print(f"{args.out}: {args.nodes} nodes, {train.shape[1]} training links ({graph_edges.shape[1]} directed edges), "
          f"{parts['val'].shape[1]} validation, {parts['test'].shape[1]} test", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
