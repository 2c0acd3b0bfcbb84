#!/usr/bin/env python3
"""What partitioning one big graph over N MPI ranks would hold and exchange, computed from its
actual METIS partition without running N processes (docs/distributed.md "One sample over many
ranks", issue 29).

The graph is a planted-partition .npz (examples/big_graphs/planted_partition.py: x,
edge_index with both directions). The partition is the one `lrnn train` computes under
`mpirun -np N` (src/train/partition_metis.cpp): METIS_PartGraphKway with seed 1 over the
constants in the order of the examples file (node i is constant i), each weighted by 1 + its
facts (its x fact and both directions of its edges), each pair by the facts it shares.
Printed per N: the edge cut, the constants each rank would hold within 1 and 2 hops of its
own (what the radius-2 halo of gcn.lrnn replicates), the ghost atoms (neighbours owned
elsewhere), and the bytes per epoch a per-layer exchange of the ghosts' values (forward) and
gradients (backward) would send: 2 x ghosts x width x 8 bytes per exchanged layer.

Usage: partition_volume.py GRAPH.npz [--ranks 2,4,64] [--width 32] [--exchanged-layers 1]
"""
from __future__ import annotations

import argparse
import ctypes
import sys

import numpy as np

METIS_NOPTIONS = 40
METIS_OPTION_SEED = 8        # enum moptions in metis.h (5.1.0)
METIS_OPTION_NUMBERING = 17


def metis_parts(xadj, adjncy, vwgt, adjwgt, parts: int) -> np.ndarray:
    lib = ctypes.CDLL("libmetis.so.5")
    idx = ctypes.c_int32  # IDXTYPEWIDTH 32 in Debian's metis.h
    options = (idx * METIS_NOPTIONS)()
    lib.METIS_SetDefaultOptions(options)
    options[METIS_OPTION_SEED] = 1
    options[METIS_OPTION_NUMBERING] = 0
    n = idx(len(xadj) - 1)
    ncon, nparts, cut = idx(1), idx(parts), idx(0)
    part = np.zeros(len(xadj) - 1, dtype=np.int32)
    ptr = lambda a: a.ctypes.data_as(ctypes.POINTER(idx))
    status = lib.METIS_PartGraphKway(ctypes.byref(n), ctypes.byref(ncon), ptr(xadj), ptr(adjncy), ptr(vwgt), None,
                                     ptr(adjwgt), ctypes.byref(nparts), None, None, options, ctypes.byref(cut),
                                     ptr(part))
    if status != 1:
        raise SystemExit(f"METIS_PartGraphKway failed with status {status}")
    return part


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("graph")
    parser.add_argument("--ranks", default="2,4,64")
    parser.add_argument("--width", type=int, default=32, help="values per exchanged atom (gcn.lrnn: 32)")
    parser.add_argument("--exchanged-layers", type=int, default=1,
                        help="layers read from neighbours' derived atoms (gcn.lrnn: h1, read by h2)")
    args = parser.parse_args(argv)
    g = np.load(args.graph)
    n = g["x"].shape[0]
    src, dst = g["edge_index"][0].astype(np.int64), g["edge_index"][1].astype(np.int64)
    # The co-occurrence graph: edge(i, j) and edge(j, i) are two facts between i and j.
    order = np.lexsort((dst, src))
    src, dst = src[order], dst[order]
    pair = src * n + dst
    uniq, counts = np.unique(pair, return_counts=True)
    a, b = uniq // n, uniq % n
    # Each ordered pair's weight: the facts between the two (both directions count).
    rev = np.searchsorted(uniq, b * n + a)
    rev_ok = (rev < len(uniq)) & (uniq[np.minimum(rev, len(uniq) - 1)] == b * n + a)
    weight = counts + np.where(rev_ok, counts[np.minimum(rev, len(uniq) - 1)], 0)
    # Undirected adjacency (both directions present in planted graphs).
    xadj = np.zeros(n + 1, dtype=np.int64)
    np.add.at(xadj, a + 1, 1)
    xadj = np.cumsum(xadj).astype(np.int32)
    adjncy = b.astype(np.int32)
    adjwgt = weight.astype(np.int32)
    facts_per_node = 1 + np.bincount(src, minlength=n) + np.bincount(dst, minlength=n)
    vwgt = (1 + facts_per_node).astype(np.int32)
    print(f"{args.graph}: {n} nodes, {len(src)} edge facts")
    for ranks in [int(r) for r in args.ranks.split(",")]:
        part = metis_parts(xadj, adjncy, vwgt, adjwgt, ranks)
        cut = int(np.count_nonzero(part[src] != part[dst]))
        ghosts, hop1, hop2 = [], [], []
        for r in range(ranks):
            own = part == r
            near1 = own.copy()
            near1[dst[own[src]]] = True
            near2 = near1.copy()
            near2[dst[near1[src]]] = True
            ghosts.append(int(np.count_nonzero(near1 & ~own)))
            hop1.append(np.count_nonzero(near1) / n)
            hop2.append(np.count_nonzero(near2) / n)
        volume = 2 * sum(ghosts) * args.width * 8 * args.exchanged_layers
        print(f"{ranks} ranks: edge cut {cut} of {len(src)} facts ({cut / len(src) * 100:.1f}%); owned "
              f"{np.bincount(part, minlength=ranks).max()} nodes at most; within 1 hop: max {max(hop1) * 100:.1f}% of "
              f"the nodes, within 2 hops (the radius-2 halo): max {max(hop2) * 100:.1f}%; ghosts per rank: max "
              f"{max(ghosts)}, total {sum(ghosts)}; per-layer exchange: {volume / 1e6:.1f} MB per epoch in all "
              f"({volume / ranks / 1e6:.2f} MB per rank)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
