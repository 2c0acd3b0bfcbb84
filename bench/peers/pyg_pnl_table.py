#!/usr/bin/env python3
"""PyG side of bench/pyneuralogic_table.py: the three models of PyNeuraLogic's own benchmark
table (its docs/benchmarks.rst and benchmarks/pyg_benchmark.py), as PyNeuraLogic built them in
PyTorch Geometric, float32, on `--threads` threads, in batches of one graph (its DataLoader's
batch_size=1):

  gcn    two GCNConv(F, 10) / (10, 10), normalize=False, no bias, relu between them; the mean
         of the nodes; Linear(10, 1) without bias
  gsage  the same with SAGEConv (mean aggregation, root weight, no bias)
  gin    five GINConv(Linear-ReLU-Linear) layers (the first from F), relu after each; the mean
         of each layer's nodes through its own Linear(10, 1) without bias, the five summed

trained with BCEWithLogitsLoss (PyNeuraLogic's table: sigmoid then cross-entropy, the same
function) and Adam(lr). An epoch is one pass of a shuffling DataLoader. Prints one JSON
object: per-epoch seconds, final loss, parameter count."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def build_model(name: str, features: int, dim: int):
    import torch
    from torch.nn import Linear, ReLU, Sequential
    from torch_geometric.nn import GCNConv, GINConv, SAGEConv, global_mean_pool

    class TwoLayer(torch.nn.Module):
        def __init__(self, conv):
            super().__init__()
            self.conv1, self.conv2 = conv(features, dim), conv(dim, dim)
            self.out = Linear(dim, 1, bias=False)

        def forward(self, x, edge_index, batch):
            x = torch.relu(self.conv1(x, edge_index))
            x = self.conv2(x, edge_index)
            return self.out(global_mean_pool(x, batch)).view(-1)

    class Gin(torch.nn.Module):
        def __init__(self):
            super().__init__()
            widths = [features] + [dim] * 4
            self.convs = torch.nn.ModuleList(
                GINConv(Sequential(Linear(w, dim), ReLU(), Linear(dim, dim))) for w in widths)
            self.outs = torch.nn.ModuleList(Linear(dim, 1, bias=False) for _ in widths)

        def forward(self, x, edge_index, batch):
            total = 0
            for conv, out in zip(self.convs, self.outs):
                x = torch.relu(conv(x, edge_index))
                total = total + out(global_mean_pool(x, batch))
            return total.view(-1)

    if name == "gcn":
        return TwoLayer(lambda i, o: GCNConv(i, o, normalize=False, bias=False))
    if name == "gsage":
        return TwoLayer(lambda i, o: SAGEConv(i, o, normalize=False, bias=False))
    if name == "gin":
        return Gin()
    raise SystemExit(f"unknown model {name!r}: expected gcn, gsage or gin")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--model", required=True, choices=["gcn", "gsage", "gin"])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    import torch
    from torch_geometric.data import Data
    from torch_geometric.loader import DataLoader

    from tu_graphs import read_tu

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    data = [Data(x=torch.tensor(g.x, dtype=torch.float32), edge_index=torch.from_numpy(g.edges),
                 y=torch.tensor([float(g.label)])) for g in read_tu(args.dataset)]
    model = build_model(args.model, data[0].x.shape[1], args.dim)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True)
    epoch_s, losses = [], []
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        total = 0.0
        for batch in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(batch.x, batch.edge_index, batch.batch), batch.y)
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * batch.num_graphs
        epoch_s.append(time.perf_counter() - t0)
        losses.append(total / len(data))
    print(json.dumps({"engine": "pyg", "torch": torch.__version__, "model": args.model, "epoch_s": epoch_s,
                      "losses": losses, "parameters": sum(p.numel() for p in model.parameters())}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
