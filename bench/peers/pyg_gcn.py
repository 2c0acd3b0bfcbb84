#!/usr/bin/env python3
"""PyG side of bench/gnn.py: the GCN of bench/templates/gcn_mutag_bench.lrnn in PyTorch
Geometric, float32, on `--threads` threads. Each layer is GCNConv(normalize=False) over the
graph's edges plus a self-loop per node, h' = relu(W (h_i + sum_j h_j) + b); the readout is
global_mean_pool then Linear(32, 1), trained with BCEWithLogitsLoss and Adam. An epoch is
one pass of a shuffling DataLoader (collation included, as users run it): forward,
backward and step per batch. --compile runs the same model through torch.compile. Prints
one JSON object: per-epoch seconds, final loss."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32, help="0: the whole dataset")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--compile", action="store_true",
                        help="the model through torch.compile(dynamic=True) (inductor); its first "
                             "epoch includes the compilation, so compare the minimum")
    args = parser.parse_args()

    import torch
    from torch_geometric.data import Data
    from torch_geometric.loader import DataLoader
    from torch_geometric.nn import GCNConv, global_mean_pool

    from tu_graphs import read_tu

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    graphs = read_tu(args.dataset)
    data = []
    for g in graphs:
        n = g.x.shape[0]
        loops = torch.arange(n).repeat(2, 1)
        edge_index = torch.cat([torch.from_numpy(g.edges), loops], dim=1)
        data.append(Data(x=torch.tensor(g.x, dtype=torch.float32), edge_index=edge_index,
                         y=torch.tensor([float(g.label)])))

    class GCN(torch.nn.Module):
        def __init__(self, features: int, hidden: int):
            super().__init__()
            self.convs = torch.nn.ModuleList([
                GCNConv(features, hidden, normalize=False, add_self_loops=False),
                GCNConv(hidden, hidden, normalize=False, add_self_loops=False),
                GCNConv(hidden, hidden, normalize=False, add_self_loops=False),
            ])
            self.out = torch.nn.Linear(hidden, 1)

        def forward(self, x, edge_index, batch):
            for conv in self.convs:
                x = torch.relu(conv(x, edge_index))
            return self.out(global_mean_pool(x, batch)).view(-1)

    model = GCN(data[0].x.shape[1], args.hidden)
    # The batches' node counts vary: dynamic shapes compile once per kernel, not per size.
    run = torch.compile(model, dynamic=True) if args.compile else model
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    batch_size = args.batch_size or len(data)
    loader = DataLoader(data, batch_size=batch_size, shuffle=batch_size < len(data))
    epoch_s, losses = [], []
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        total, count = 0.0, 0
        for batch in loader:
            optimizer.zero_grad()
            loss = loss_fn(run(batch.x, batch.edge_index, batch.batch), batch.y)
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * batch.num_graphs
            count += batch.num_graphs
        epoch_s.append(time.perf_counter() - t0)
        losses.append(total / count)
    print(json.dumps({"engine": "pyg_compile" if args.compile else "pyg", "torch": torch.__version__, "threads": args.threads,
                      "epoch_s": epoch_s, "losses": losses,
                      "parameters": sum(p.numel() for p in model.parameters())}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
