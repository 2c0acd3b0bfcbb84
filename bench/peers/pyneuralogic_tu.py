"""Trains a PyNeuraLogic template on a TU graph dataset, the way the PyNeuraLogic peers of
bench/gnn.py and bench/pyneuralogic_table.py time it: the graphs as its TensorDataset
(node features under `feature_name`, the edges as listed under `edge_name`, the graph label
as the target of `predict`), Adam and cross-entropy with logits, Glorot initialisation.
Returns the JSON object the peers print: build seconds (model.build + build_dataset) and
per-epoch seconds (model.train(built, epochs=1)), the mean loss per epoch."""
from __future__ import annotations

import os
import tempfile
import time


def train_on_tu(graphs, make_rules, *, feature_name: str, lr: float, seed: int, batch_size: int,
                epochs: int) -> dict:
    """`make_rules()` returns the template's rules; it is called after neuralogic starts
    (the DSL needs the JVM). `batch_size` 0: every graph in one batch."""
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
    neuralogic.manual_seed(seed)
    neuralogic.initialize()
    model = Model()
    model.add_rules(make_rules())
    settings = Settings(optimizer=Adam(lr=lr), error_function=CrossEntropy(with_logits=True), initializer=Glorot())
    dataset = TensorDataset([Data(x=g.x, edge_index=g.edges, y=float(g.label)) for g in graphs],
                            feature_name=feature_name, edge_name="edge", output_name="predict")
    t0 = time.perf_counter()
    model.build(settings)
    built = model.build_dataset(dataset, batch_size=batch_size or len(graphs))
    build_s = time.perf_counter() - t0
    epoch_s, losses = [], []
    for _ in range(epochs):
        t0 = time.perf_counter()
        results = model.train(built, epochs=1)
        epoch_s.append(time.perf_counter() - t0)
        losses.append(sum(float(error) for _, _, error in results) / max(1, len(results)))
    return {"engine": "pyneuralogic", "version": neuralogic.__version__, "build_s": build_s, "epoch_s": epoch_s,
            "losses": losses, "rules": str(model).splitlines()}
