#!/usr/bin/env python3
"""PyNeuraLogic side of bench/pyneuralogic_table.py: the three templates of PyNeuraLogic's own
benchmark table (its docs/benchmarks.rst, benchmarks/pyneuralogic_benchmark.py), written here
in its DSL with width 10, on the same TU graphs (node_feature(i) the one-hot node labels,
edges as listed, a hidden literal edge(Y, X) in the rules):

  gcn    atom_embed(X) = W x(X); l1(X) = W' sum_Y atom_embed(Y) over edge(Y, X), relu;
         l2(X) the same over l1; predict = W'' avg_X l2(X)
  gsage  each layer: W1 h(X) + W2 avg_Y h(Y) over edge(Y, X) (relu after the first)
  gin    five layers: l_k(X) = h(X) + sum_Y h(Y), then relu(W2 relu(W1 l_k(X)));
         predict = sum over the layers of W_k avg_X of the layer

trained with Adam(lr) and cross-entropy with logits, in batches of `--batch-size` samples
(1, as its table). Prints one JSON object: build seconds (model.build + build_dataset, its
table's "Dataset Build Time"), per-epoch seconds (model.train(built, epochs=1)), final loss."""
from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def template_rules(name: str, features: int, dim: int):
    from neuralogic.core import Aggregation, R, Transformation, V

    rules = [R.atom_embed(V.X)[dim, features] <= R.node_feature(V.X)]
    if name in ("gcn", "gsage"):
        previous = "atom_embed"
        for layer in ("l1_embed", "l2_embed"):
            if name == "gcn":
                rules.append((R.get(layer)(V.X)[dim, dim] <= (R.get(previous)(V.Y), R.hidden.edge(V.Y, V.X)))
                             | [Aggregation.SUM])
            else:
                rules.append(R.get(layer)(V.X)[dim, dim] <= R.get(previous)(V.X))
                rules.append((R.get(layer)(V.X)[dim, dim] <= (R.get(previous)(V.Y), R.hidden.edge(V.Y, V.X)))
                             | [Aggregation.AVG])
            previous = layer
        rules.append(R.l1_embed / 1 | [Transformation.RELU])
        rules.append((R.predict[1, dim] <= R.l2_embed(V.X)) | [Aggregation.AVG])
    elif name == "gin":
        previous = "atom_embed"
        for k in range(1, 6):
            summed, mlp = f"l{k}_embed", f"l{k}_mlp_embed"
            rules.append((R.get(summed)(V.X) <= (R.get(previous)(V.Y), R.hidden.edge(V.Y, V.X))) | [Aggregation.SUM])
            rules.append(R.get(summed)(V.X) <= R.get(previous)(V.X))
            rules.append((R.get(mlp)(V.X)[dim, dim] <= R.get(summed)(V.X)[dim, dim]) | [Transformation.RELU])
            rules.append(R.get(mlp) / 1 | [Transformation.RELU])
            rules.append((R.predict[1, dim] <= R.get(mlp)(V.X)) | [Aggregation.AVG])
            previous = mlp
    else:
        raise SystemExit(f"unknown model {name!r}: expected gcn, gsage or gin")
    rules.append(R.predict / 0 | [Transformation.IDENTITY])
    return rules


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--model", required=True, choices=["gcn", "gsage", "gin"])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    args.dataset = os.path.abspath(args.dataset)

    from pyneuralogic_tu import train_on_tu
    from tu_graphs import read_tu

    graphs = read_tu(args.dataset)
    report = train_on_tu(graphs, lambda: template_rules(args.model, graphs[0].x.shape[1], args.dim),
                         feature_name="node_feature", lr=args.lr, seed=args.seed, batch_size=args.batch_size,
                         epochs=args.epochs)
    print(json.dumps({**report, "model": args.model}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
