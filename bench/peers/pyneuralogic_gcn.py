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
import tempfile
import time

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

    from tu_graphs import read_tu

    graphs = read_tu(args.dataset)
    # The Java side writes ./target/out/...; keep it out of the caller's directory.
    workdir = tempfile.TemporaryDirectory(prefix="pyneuralogic_")
    os.chdir(workdir.name)
    import neuralogic
    import neuralogic.logging
    from neuralogic.core import Model, Settings
    from neuralogic.dataset import Data, TensorDataset
    from neuralogic.nn.init import Glorot
    from neuralogic.nn.loss import CrossEntropy
    from neuralogic.nn.optim import Adam

    neuralogic.logging.clear_handlers()
    neuralogic.manual_seed(args.seed)
    neuralogic.initialize()
    model = Model()
    model.add_rules(template_rules(graphs[0].x.shape[1], args.hidden))
    settings = Settings(optimizer=Adam(lr=args.lr), error_function=CrossEntropy(with_logits=True),
                        initializer=Glorot())
    dataset = TensorDataset([Data(x=g.x, edge_index=g.edges, y=float(g.label)) for g in graphs],
                            feature_name="x", edge_name="edge", output_name="predict")
    batch_size = args.batch_size or len(graphs)
    t0 = time.perf_counter()
    model.build(settings)
    built = model.build_dataset(dataset, batch_size=batch_size)
    build_s = time.perf_counter() - t0
    epoch_s, losses = [], []
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        results = model.train(built, epochs=1)
        epoch_s.append(time.perf_counter() - t0)
        losses.append(sum(float(error) for _, _, error in results) / max(1, len(results)))
    print(json.dumps({"engine": "pyneuralogic", "version": neuralogic.__version__, "build_s": build_s,
                      "epoch_s": epoch_s, "losses": losses, "rules": str(model).splitlines()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
