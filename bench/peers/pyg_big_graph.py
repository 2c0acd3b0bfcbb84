#!/usr/bin/env python3
"""PyG side of bench/big_graph.py: the GCN of examples/big_graphs/gcn.lrnn on one
planted-partition graph (the .npz of examples/big_graphs/planted_partition.py), full batch,
float32, on `--threads` threads.

Two GCNConv(normalize=False) layers of width 32 over the edges plus a self loop per node,
h' = relu(W (h_i + sum_j h_j) + b), then Linear(32, 1) and a sigmoid per node, MSE against
the binary target y // 2, Adam. With --train-mask the loss covers the train_mask nodes only
and the accuracy of the test_mask nodes is reported as `test_accuracy`; without it every
node is trained on (as lrnn's one-query-per-node example without a query split is).

Prints one JSON object: build_s (loading the .npz and making the tensors and the model),
per-epoch seconds, losses, `accuracy` over the trained nodes after the last epoch.

With --minibatch B --fanout F1,F2 (and --train-mask): PyG's NeighborLoader(num_neighbors=
[F1, F2], batch_size=B, shuffle=True) over the train_mask nodes, the graph's edges without
self loops (a sampled self loop would take a neighbour's place); each batch's subgraph gets
a self loop per node, so a layer is W (h_i + sum of the sampled h_j) + b, and the loss is
over the batch's seed nodes only. An epoch's `epoch_s` is the loop over the loader
(sampling included); the test accuracy is then computed full batch, every epoch (timed
apart: `eval_s`). NeighborLoader needs pyg-lib or torch-sparse: without them the script
prints {"available": false, "reason": ...} and exits 0 (bench/README.md "big_graph" says
how to install them)."""
from __future__ import annotations

import argparse
import json
import time


def start(args):
    """One run's start: --threads threads, the --seed, the clock (build time counts from
    here) and the .npz graph's arrays. Returns (t0, graph, x as a tensor)."""
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    t0 = time.perf_counter()
    graph = np.load(args.graph)
    return t0, graph, torch.from_numpy(graph["x"])


def make_gcn(features: int, hidden: int, self_loops: bool):
    """The issue's 2-layer GCN: two GCNConv(normalize=False) of width `hidden` with ReLU, then
    linear hidden -> 1 and a sigmoid per node. self_loops: forward adds a self loop per node
    (a NeighborLoader batch's subgraph has none; the full graph's edge_index comes with them)."""
    import torch
    from torch_geometric.nn import GCNConv

    class GCN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = GCNConv(features, hidden, normalize=False, add_self_loops=False)
            self.conv2 = GCNConv(hidden, hidden, normalize=False, add_self_loops=False)
            self.out = torch.nn.Linear(hidden, 1)

        def forward(self, x, edge_index):
            if self_loops:
                loops = torch.arange(x.shape[0]).repeat(2, 1)
                edge_index = torch.cat([edge_index, loops], dim=1)
            h = torch.relu(self.conv1(x, edge_index))
            h = torch.relu(self.conv2(h, edge_index))
            return torch.sigmoid(self.out(h)).view(-1)

    return GCN()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--graph", required=True, help="the .npz of planted_partition.py")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--train-mask", action="store_true", help="train on train_mask, test on test_mask")
    parser.add_argument("--minibatch", type=int, default=0, help="NeighborLoader batch size (0: full batch)")
    parser.add_argument("--fanout", default="10,10", help="NeighborLoader num_neighbors, outermost first")
    args = parser.parse_args()
    if args.minibatch > 0:
        return minibatch(args)

    import torch

    t0, graph, x = start(args)
    nodes = x.shape[0]
    loops = torch.arange(nodes).repeat(2, 1)
    edge_index = torch.cat([torch.from_numpy(graph["edge_index"]), loops], dim=1)
    target = torch.from_numpy(graph["y"] // 2).to(torch.float32)
    trained = torch.from_numpy(graph["train_mask"]) if args.train_mask else torch.ones(nodes, dtype=torch.bool)

    model = make_gcn(x.shape[1], args.hidden, self_loops=False)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    build_s = time.perf_counter() - t0

    epoch_s, losses = [], []
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x, edge_index)[trained], target[trained])
        loss.backward()
        optimizer.step()
        epoch_s.append(time.perf_counter() - t0)
        losses.append(float(loss.detach()))

    with torch.no_grad():
        correct = (model(x, edge_index) >= 0.5).to(torch.float32) == target
    report = {"build_s": build_s, "epoch_s": epoch_s, "losses": losses, "nodes": nodes,
              "edges": int(graph["edge_index"].shape[1]), "accuracy": float(correct[trained].float().mean())}
    if args.train_mask:
        report["test_accuracy"] = float(correct[torch.from_numpy(graph["test_mask"])].float().mean())
    print(json.dumps(report))
    return 0


def minibatch(args) -> int:
    import torch
    from torch_geometric.data import Data
    try:
        from torch_geometric.loader import NeighborLoader
        from torch_geometric.typing import WITH_PYG_LIB, WITH_TORCH_SPARSE
    except ImportError as e:  # pragma: no cover - depends on the installed PyG
        print(json.dumps({"available": False, "reason": f"torch_geometric.loader: {e}"}))
        return 0
    if not (WITH_PYG_LIB or WITH_TORCH_SPARSE):
        print(json.dumps({"available": False, "reason": "NeighborLoader needs pyg-lib or torch-sparse, neither is "
                          "installed (bench/README.md \"big_graph\": pip install --no-build-isolation torch-sparse)"}))
        return 0

    t0, graph, x = start(args)
    nodes = x.shape[0]
    edge_index = torch.from_numpy(graph["edge_index"])
    target = torch.from_numpy(graph["y"] // 2).to(torch.float32)
    train_mask = torch.from_numpy(graph["train_mask"])
    test_mask = torch.from_numpy(graph["test_mask"])
    data = Data(x=x, edge_index=edge_index, y=target)
    fanout = [int(f) for f in args.fanout.split(",")]
    loader = NeighborLoader(data, num_neighbors=fanout, batch_size=args.minibatch, shuffle=True,
                            input_nodes=train_mask)

    model = make_gcn(x.shape[1], args.hidden, self_loops=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    build_s = time.perf_counter() - t0

    epoch_s, eval_s, losses, test_accuracy, batches = [], [], [], [], 0
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        total, count = 0.0, 0
        for batch in loader:
            optimizer.zero_grad()
            seeds = batch.batch_size
            loss = torch.nn.functional.mse_loss(model(batch.x, batch.edge_index)[:seeds], batch.y[:seeds])
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * seeds
            count += seeds
            batches += 1
        epoch_s.append(time.perf_counter() - t0)
        losses.append(total / count)
        t0 = time.perf_counter()
        with torch.no_grad():
            correct = (model(x, edge_index) >= 0.5).to(torch.float32) == target
        test_accuracy.append(float(correct[test_mask].float().mean()))
        eval_s.append(time.perf_counter() - t0)
    report = {"available": True, "build_s": build_s, "epoch_s": epoch_s, "eval_s": eval_s, "losses": losses,
              "nodes": nodes, "edges": int(edge_index.shape[1]), "batches_per_epoch": batches // max(1, args.epochs),
              "accuracy": float(correct[train_mask].float().mean()), "test_accuracy": test_accuracy[-1],
              "test_accuracies": test_accuracy, "sampler": "pyg-lib" if WITH_PYG_LIB else "torch-sparse"}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
