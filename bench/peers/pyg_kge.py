#!/usr/bin/env python3
"""PyG side of bench/kbc.py: torch_geometric.nn.kge's DistMult or ComplEx on the nations
split of examples/big_graphs/nations_kbc.py (its .npz), full batch, one thread.

The initial embeddings are the .npz's (drawn as torch's xavier_uniform_, and written into
the lrnn template too), so both engines start from the same model. Each epoch: the model's
own loss on the training triples in a fresh random order (as its loader shuffles; DistMult:
margin ranking loss against model.random_sample's corruptions, ComplEx:
binary cross-entropy), one Adam step. After training, the validation and test triples are
ranked against every corruption of their head and of their tail, filtered (the other true
triples removed), ties counted half, as lrnn ranks them: MRR and Hits@1/3/10. (KGEModel.test
ranks tails only, unfiltered.)

Prints one JSON object: build_s, per-epoch seconds, losses, val/test ranking."""
from __future__ import annotations

import argparse
import json
import time


def ranking(model, triples, true_set, entities: int) -> dict:
    import torch
    ranks = []
    with torch.no_grad():
        for h, r, t in triples.tolist():
            for side in ("tail", "head"):
                cand = torch.arange(entities)
                heads = torch.full((entities,), h) if side == "tail" else cand
                tails = cand if side == "tail" else torch.full((entities,), t)
                scores = model(heads, torch.full((entities,), r), tails)
                truth = scores[t if side == "tail" else h]
                keep = [e for e in range(entities)
                        if e != (t if side == "tail" else h)
                        and ((h, r, e) if side == "tail" else (e, r, t)) not in true_set]
                others = scores[keep]
                ranks.append(1 + float((others > truth).sum()) + 0.5 * float((others == truth).sum()))
    n = len(ranks)
    return {"mrr": sum(1 / x for x in ranks) / n, "hits@1": sum(x <= 1 for x in ranks) / n,
            "hits@3": sum(x <= 3 for x in ranks) / n, "hits@10": sum(x <= 10 for x in ranks) / n, "count": n}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True, help="the .npz of nations_kbc.py (written with --xavier)")
    parser.add_argument("--model", choices=["distmult", "complex"], required=True)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import numpy as np
    import torch
    from torch_geometric.nn.kge import ComplEx, DistMult

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    t0 = time.perf_counter()
    data = np.load(args.data)
    entities, relations = len(data["entities"]), len(data["relations"])
    dim = data["init_e" if args.model == "distmult" else "init_e_re"].shape[1]
    if args.model == "distmult":
        model = DistMult(entities, relations, dim)
        tables = {"e": model.node_emb, "r": model.rel_emb}
    else:
        model = ComplEx(entities, relations, dim)
        tables = {"e_re": model.node_emb, "e_im": model.node_emb_im, "r_re": model.rel_emb, "r_im": model.rel_emb_im}
    with torch.no_grad():
        for name, table in tables.items():
            table.weight.copy_(torch.from_numpy(data[f"init_{name}"]).to(table.weight.dtype))
    train = torch.from_numpy(data["train"])
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    build_s = time.perf_counter() - t0

    epoch_s, losses = [], []
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        optimizer.zero_grad()
        # Shuffled each epoch, as PyG's KGE loader (shuffle=True) gives its batches: the
        # model's random_sample corrupts the heads of a batch's first half and the tails of
        # the rest, so in a fixed order the same triples would always lose their head.
        batch = train[torch.randperm(train.shape[0])]
        loss = model.loss(batch[:, 0], batch[:, 1], batch[:, 2])
        loss.backward()
        optimizer.step()
        epoch_s.append(time.perf_counter() - t0)
        losses.append(float(loss.detach()))
    true_set = {tuple(x) for part in ("train", "val", "test") for x in data[part].tolist()}
    report = {"build_s": build_s, "epoch_s": epoch_s, "losses": losses,
              "val": ranking(model, data["val"], true_set, entities),
              "test": ranking(model, data["test"], true_set, entities)}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
