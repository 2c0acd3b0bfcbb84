#!/usr/bin/env python3
"""A seeded grid graph as an .npz, for one big graph with locality (docs/distributed.md
"One sample over many ranks"): WIDTH x HEIGHT nodes, each joined to its 4 neighbours (every
edge in both directions), 16 standard normal features per node (seed 5) and a binary label,
whether its first feature is positive. Unlike the planted graph (an expander), a ball of
2 hops around half of a grid is little more than that half, so ranks that each build only
their part of it (`--dataset npz:` under mpirun) hold about 1/N of it.

Writes OUT (.npz): x [N,16] (float64, or float32 with --float32), edge_index int64 [2,E], y
int64 [N].

  python3 examples/big_graphs/grid_graph.py --width 40 --height 15 --out /tmp/grid.npz
"""
from __future__ import annotations

import argparse

import numpy as np

FEATURES = 16


def grid_graph(width: int, height: int, dtype=np.float64) -> dict:
    """The grid's arrays: x, edge_index (the row edges, then the column edges, then the same
    reversed) and y."""
    ids = np.arange(width * height).reshape(height, width)
    pairs = [(ids[:, :-1], ids[:, 1:]), (ids[:-1, :], ids[1:, :])]
    src = np.concatenate([a.ravel() for a, _ in pairs] + [b.ravel() for _, b in pairs])
    dst = np.concatenate([b.ravel() for _, b in pairs] + [a.ravel() for a, _ in pairs])
    x = np.random.default_rng(5).normal(size=(width * height, FEATURES)).astype(dtype)
    return {"x": x, "edge_index": np.stack([src, dst]).astype(np.int64), "y": (x[:, 0] > 0).astype(np.int64)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, required=True)
    parser.add_argument("--height", type=int, required=True)
    parser.add_argument("--float32", action="store_true", help="float32 features (default float64)")
    parser.add_argument("--out", required=True, help="the .npz to write")
    args = parser.parse_args()
    if args.width < 1 or args.height < 1:
        parser.error("--width and --height must be at least 1")
    np.savez(args.out, **grid_graph(args.width, args.height, np.float32 if args.float32 else np.float64))


if __name__ == "__main__":
    main()
