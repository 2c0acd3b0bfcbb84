#!/usr/bin/env python3
"""PyNeuraLogic side of bench/gnn.py: the rules of bench/templates/gcn_mutag_bench.lrnn in
PyNeuraLogic's DSL (the self and neighbour rules of a layer share one named weight; edges
are hidden literals), on the same TU graphs (x(i) one-hot node labels, edge(i, j) as listed),
trained with Adam and cross-entropy with logits. PyNeuraLogic's rule bodies take no bias,
so the three {32,1} layer biases and the output bias of the lrnn template are left out
here (97 of 2401 parameters; their arithmetic is negligible). Prints one JSON object:
build seconds, per-epoch seconds (model.train(built, epochs=1)), final loss."""
from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def template_rules(features: int, hidden: int):
    from neuralogic.core import Aggregation, R, Transformation, V

    rules = []
    previous, width = "x", features
    for layer in (1, 2, 3):
        head, weight = f"h{layer}", f"w{layer}"
        rules.append(R.get(head)(V.X) <= R.get(previous)(V.X)[weight:hidden, width])
        rules.append(
            (R.get(head)(V.X) <= (R.get(previous)(V.Y)[weight:hidden, width], R.hidden.edge(V.X, V.Y)))
            | [Aggregation.SUM]
        )
        rules.append(R.get(head) / 1 | [Transformation.RELU])
        previous, width = head, hidden
    rules.append((R.predict <= R.h3(V.X)[1, hidden]) | [Aggregation.AVG])
    rules.append(R.predict / 0 | [Transformation.IDENTITY])
    return rules


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32, help="0: the whole dataset")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    args.dataset = os.path.abspath(args.dataset)

    from pyneuralogic_tu import train_on_tu
    from tu_graphs import read_tu

    graphs = read_tu(args.dataset)
    report = train_on_tu(graphs, lambda: template_rules(graphs[0].x.shape[1], args.hidden), feature_name="x",
                         lr=args.lr, seed=args.seed, batch_size=args.batch_size, epochs=args.epochs)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
