#!/usr/bin/env python3
"""The GIN of examples/graphs/gin_<ds>.lrnn in PyTorch Geometric, cross-validated on given
folds (bench/gnn_cv.py passes lrnn's). Reads the TU files with PyG's own TUDataset (from a
temporary copy laid out as root/DS/raw), trains one fresh model per fold and prints one JSON
object: per-fold test accuracy, mean ± std, time per epoch.

Model (same as the template): 5 x GINConv(eps=0, nn = Linear(d, 64) -> ReLU -> Linear(64, 64))
each followed by ReLU; logit = sum_k w_k . sum_nodes h_k (h_0 = x, w_k without bias) + b.
--batch-norm (gin_<ds>_bn.lrnn): nn = Linear(d, 64) -> BatchNorm1d(64) -> ReLU -> Linear(64, 64).
Loss BCEWithLogits (mean over the batch), Adam, minibatches shuffled per epoch."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset-dir", required=True)
    ap.add_argument("--folds-json", required=True, help="file with {'fold_of_sample': [...]}")
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--step-size", type=int, default=0, help="StepLR step (epochs); 0: constant rate")
    ap.add_argument("--gamma", type=float, default=0.5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--batch-norm", action="store_true", help="BatchNorm1d after each MLP's first linear map")
    ap.add_argument("--test-curve", action="store_true",
                    help="also test every fold after every epoch (untimed; training unchanged)")
    a = ap.parse_args()

    import torch
    from torch import nn
    from torch_geometric.datasets import TUDataset
    from torch_geometric.loader import DataLoader
    from torch_geometric.nn import GINConv, global_add_pool

    torch.set_num_threads(a.threads)
    dtype = getattr(torch, a.dtype)
    torch.set_default_dtype(dtype)
    name = os.path.basename(os.path.normpath(a.dataset_dir))
    with open(a.folds_json) as f:
        fold_of_sample = json.load(f)["fold_of_sample"]
    k = max(fold_of_sample) + 1

    with tempfile.TemporaryDirectory() as root:
        raw = os.path.join(root, name, "raw")
        os.makedirs(raw)
        for file in os.listdir(a.dataset_dir):
            if file.startswith(name + "_"):
                shutil.copy(os.path.join(a.dataset_dir, file), raw)
        dataset = TUDataset(root, name)
        dataset = [d for d in dataset]  # materialised before the folder goes away
    if len(dataset) != len(fold_of_sample):
        sys.exit(f"{len(dataset)} graphs but {len(fold_of_sample)} fold assignments")
    in_dim = dataset[0].x.shape[1]

    class GIN(nn.Module):
        def __init__(self):
            super().__init__()
            dims = [in_dim] + [a.hidden] * a.layers
            self.convs = nn.ModuleList(
                GINConv(nn.Sequential(nn.Linear(dims[i], a.hidden),
                                      nn.BatchNorm1d(a.hidden) if a.batch_norm else nn.Identity(),
                                      nn.ReLU(), nn.Linear(a.hidden, a.hidden)), eps=0.0)
                for i in range(a.layers))
            self.readouts = nn.ModuleList(nn.Linear(d, 1, bias=False) for d in dims)
            self.bias = nn.Parameter(torch.zeros(1))

        def forward(self, data):
            h, out = data.x, self.bias + self.readouts[0](global_add_pool(data.x, data.batch))
            for conv, readout in zip(self.convs, self.readouts[1:]):
                h = torch.relu(conv(h, data.edge_index))
                out = out + readout(global_add_pool(h, data.batch))
            return out.view(-1)

    folds, epoch_times = [], []
    for fold in range(k):
        torch.manual_seed(a.seed)
        train = [d for d, f in zip(dataset, fold_of_sample) if f != fold]
        test = [d for d, f in zip(dataset, fold_of_sample) if f == fold]
        model = GIN()
        opt = torch.optim.Adam(model.parameters(), lr=a.lr)
        sched = torch.optim.lr_scheduler.StepLR(opt, a.step_size, a.gamma) if a.step_size else None
        loss_fn = nn.BCEWithLogitsLoss()
        loader = DataLoader(train, batch_size=a.batch_size, shuffle=True,
                            generator=torch.Generator().manual_seed(a.seed))
        test_batch = next(iter(DataLoader(test, batch_size=len(test))))

        def test_accuracy() -> float:
            model.eval()
            with torch.no_grad():
                return int(((model(test_batch) > 0).long() == test_batch.y).sum()) / len(test)

        curve, curve_s = [], 0.0
        start = time.perf_counter()
        for _ in range(a.epochs):
            model.train()
            for batch in loader:
                opt.zero_grad()
                loss = loss_fn(model(batch), batch.y.to(dtype))
                loss.backward()
                opt.step()
            if sched is not None:
                sched.step()
            if a.test_curve:
                t = time.perf_counter()
                curve.append(test_accuracy())
                curve_s += time.perf_counter() - t
        seconds = time.perf_counter() - start - curve_s
        epoch_times.append(seconds / max(1, a.epochs))
        accuracy = curve[-1] if curve else test_accuracy()  # the curve's last point is this model already
        folds.append({"fold": fold, "train_samples": len(train), "test_samples": len(test),
                      "test_accuracy": accuracy, "train_s": seconds})
        if a.test_curve:
            folds[-1]["test_accuracy_by_epoch"] = curve
        print(f"pyg fold {fold + 1}/{k}: test accuracy {accuracy:.4f}", file=sys.stderr, flush=True)
    accs = [f["test_accuracy"] for f in folds]
    mean = sum(accs) / len(accs)
    std = (sum((x - mean) ** 2 for x in accs) / len(accs)) ** 0.5
    print(json.dumps({"folds": folds, "mean_accuracy": mean, "std_accuracy": std,
                      "epoch_s": sum(epoch_times) / len(epoch_times), "threads": a.threads, "dtype": a.dtype,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
