#!/usr/bin/env python3
"""PyG side of bench/link_prediction.py: the model of examples/big_graphs/link_gcn.lrnn on
the .npz of examples/big_graphs/link_split.py, full batch, float32, on `--threads` threads.

Encoder: two layers h' = W (h_i + mean_j h_j) + b over the training edges (SimpleConv with
mean aggregation and the root added, then Linear: the lrnn template's shared weight for the
node's own value and its neighbours' mean), relu after the first. Decoder: the dot product
of the two nodes' embeddings. Each epoch every training link gets one negative whose last
node is drawn uniformly (the corruption lrnn draws, and PyG's KGE models' random_sample);
binary cross-entropy from the scores as logits, Adam. The weights start as torch's Linear's,
the biases at zero (as lrnn's template with --initializer torch). Validation and test links are scored
against one fixed corruption each (seeded); AUC from the ranks (ties counted half).

Prints one JSON object: build_s, per-epoch seconds, losses, val/test AUC after each epoch
(of the epoch's own forward pass, as lrnn reports them)."""
from __future__ import annotations

import argparse
import json
import time

from pyg_big_graph import start  # the same start as the node-classification peer


def auc(scores, labels) -> float:
    import torch
    order = torch.argsort(scores)
    ranks = torch.empty_like(scores)
    ranks[order] = torch.arange(1, scores.numel() + 1, dtype=scores.dtype)
    # Ties share their mean rank.
    unique, inverse = torch.unique(scores, return_inverse=True)
    sums = torch.zeros(unique.numel(), dtype=scores.dtype).index_add_(0, inverse, ranks)
    counts = torch.zeros(unique.numel(), dtype=scores.dtype).index_add_(0, inverse, torch.ones_like(ranks))
    ranks = (sums / counts)[inverse]
    pos = labels > 0.5
    n_pos, n_neg = float(pos.sum()), float((~pos).sum())
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--graph", required=True, help="the .npz of link_split.py")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--init-out", default=None,
                        help="write the starting weights (lin1, lin2: [out, in]) as JSON, for lrnn to start from")
    args = parser.parse_args()

    import torch
    from torch_geometric.nn import SimpleConv

    t0, graph, x = start(args)
    nodes = x.shape[0]
    train = torch.from_numpy(graph["train_edges"])
    edge_index = torch.cat([train, train.flip(0)], dim=1)
    generator = torch.Generator().manual_seed(args.seed + 1)

    def corrupt(links):
        negative = links.clone()
        negative[1] = torch.randint(nodes, (links.shape[1],), generator=generator)
        return negative

    held_out = {}
    for part in ("val", "test"):
        positive = torch.from_numpy(graph[f"{part}_edges"])
        links = torch.cat([positive, corrupt(positive)], dim=1)
        labels = torch.cat([torch.ones(positive.shape[1]), torch.zeros(positive.shape[1])])
        held_out[part] = (links, labels)

    class Encoder(torch.nn.Module):
        def __init__(self, features: int, hidden: int):
            super().__init__()
            self.mean = SimpleConv(aggr="mean", combine_root="sum")
            self.lin1 = torch.nn.Linear(features, hidden)
            self.lin2 = torch.nn.Linear(hidden, hidden)

        def forward(self, x, edge_index):
            h = torch.relu(self.lin1(self.mean(x, edge_index)))
            return self.lin2(self.mean(h, edge_index))

    model = Encoder(x.shape[1], args.hidden)
    with torch.no_grad():  # the lrnn template's biases start at zero too (link_gcn.lrnn)
        torch.nn.init.zeros_(model.lin1.bias)
        torch.nn.init.zeros_(model.lin2.bias)
    if args.init_out:
        with open(args.init_out, "w") as f:
            json.dump({"w1": model.lin1.weight.tolist(), "w2": model.lin2.weight.tolist()}, f)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    build_s = time.perf_counter() - t0

    def scores(z, links):
        return (z[links[0]] * z[links[1]]).sum(dim=-1)

    epoch_s, losses, val_auc, test_auc = [], [], [], []
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        optimizer.zero_grad()
        z = model(x, edge_index)
        links = torch.cat([train, corrupt(train)], dim=1)
        labels = torch.cat([torch.ones(train.shape[1]), torch.zeros(train.shape[1])])
        loss = torch.nn.functional.binary_cross_entropy_with_logits(scores(z, links), labels)
        with torch.no_grad():  # the held-out links from the same pass
            val_auc.append(auc(scores(z, held_out["val"][0]), held_out["val"][1]))
            test_auc.append(auc(scores(z, held_out["test"][0]), held_out["test"][1]))
        loss.backward()
        optimizer.step()
        epoch_s.append(time.perf_counter() - t0)
        losses.append(float(loss.detach()))
    print(json.dumps({"build_s": build_s, "epoch_s": epoch_s, "losses": losses, "val_auc": val_auc,
                      "test_auc": test_auc, "nodes": nodes, "train_links": int(train.shape[1])}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
