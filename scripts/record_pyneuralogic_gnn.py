"""Records the rules PyNeuraLogic 0.9.2's GNN modules generate (run once, in a venv with
`pip install neuralogic==0.9.2`): python scripts/record_pyneuralogic_gnn.py OUT.json.
tests/python/test_gnn_modules.py compares lrnn.nn.module's rules with them."""

import json
import sys

from neuralogic.core import Aggregation, Transformation
from neuralogic.nn.module import (APPNPConv, GATv2Conv, GCNConv, GENConv, GINConv, GINEConv, SAGEConv,
                                  ResGatedGraphConv, RGCNConv, SGConv, TAGConv)

# (class name, kwargs): every argument written as lrnn takes it; functions by name.
CASES = [
    ("GCNConv", dict(in_channels=3, out_channels=4, output_name="h", feature_name="x", edge_name="edge")),
    ("GCNConv", dict(in_channels=2, out_channels=5, output_name="h1", feature_name="f", edge_name="e",
                     activation="relu", add_self_loops=False)),
    ("GCNConv", dict(in_channels=2, out_channels=2, output_name="g", feature_name="f", edge_name="e",
                     normalize=False, aggregation="avg")),
    ("SAGEConv", dict(in_channels=3, out_channels=4, output_name="h", feature_name="x", edge_name="edge")),
    ("SAGEConv", dict(in_channels=2, out_channels=6, output_name="s", feature_name="f", edge_name="e",
                      activation="sigmoid", aggregation="max")),
    ("GINConv", dict(in_channels=3, out_channels=4, output_name="h", feature_name="x", edge_name="edge")),
    ("GINConv", dict(in_channels=5, out_channels=2, output_name="g", feature_name="f", edge_name="e",
                     activation="relu", aggregation="avg")),
    ("GINEConv", dict(in_channels=3, feature_name="x", edge_name="edge", nn_name="mlp")),
    ("GINEConv", dict(in_channels=3, feature_name="x", edge_name="edge", nn_name="out", eps=0.5, train_eps=True,
                      edge_dim=2)),
    ("GATv2Conv", dict(in_channels=3, out_channels=4, output_name="h", feature_name="x", edge_name="edge")),
    ("GATv2Conv", dict(in_channels=2, out_channels=3, output_name="a", feature_name="f", edge_name="e",
                       share_weights=True, activation="tanh", add_self_loops=False, negative_slope=0.1)),
    ("GENConv", dict(in_channels=3, out_channels=4, output_name="h", feature_name="x", edge_name="edge")),
    ("GENConv", dict(in_channels=4, out_channels=4, output_name="g", feature_name="f", edge_name="e",
                     aggregation="sum", num_layers=3, expansion=3, eps=0.01, train_eps=True, edge_dim=2)),
    ("ResGatedGraphConv", dict(in_channels=3, out_channels=4, output_name="h", feature_name="x", edge_name="edge")),
    ("ResGatedGraphConv", dict(in_channels=2, out_channels=2, output_name="r", feature_name="f", edge_name="e",
                               gating_activation="tanh", activation="relu", aggregation="avg")),
    ("RGCNConv", dict(in_channels=3, out_channels=4, output_name="h", feature_name="x", edge_name="edge",
                      relations=["r1", "r2"])),
    ("RGCNConv", dict(in_channels=2, out_channels=3, output_name="h", feature_name="x", edge_name=None,
                      relations=["bond", "near"], activation="relu", aggregation="sum")),
    ("SGConv", dict(in_channels=3, out_channels=4, output_name="h", feature_name="x", edge_name="edge")),
    ("SGConv", dict(in_channels=3, out_channels=2, output_name="s", feature_name="x", edge_name="edge", k=3,
                    activation="relu", add_self_loops=False)),
    ("SGConv", dict(in_channels=3, out_channels=2, output_name="s", feature_name="x", edge_name="edge", k=2,
                    normalize=False)),
    ("TAGConv", dict(in_channels=3, out_channels=4, output_name="h", feature_name="x", edge_name="edge")),
    ("TAGConv", dict(in_channels=2, out_channels=2, output_name="t", feature_name="f", edge_name="e", k=3,
                     activation="sigmoid", normalize=False)),
    ("APPNPConv", dict(output_name="h", feature_name="x", edge_name="edge", k=1, alpha=0.1)),
    ("APPNPConv", dict(output_name="p", feature_name="f", edge_name="e", k=3, alpha=0.25, activation="relu")),
    ("APPNPConv", dict(output_name="p", feature_name="f", edge_name="e", k=2, alpha=0.5, normalize=False)),
]

FUNCTIONS = {"relu": Transformation.RELU, "sigmoid": Transformation.SIGMOID, "tanh": Transformation.TANH,
             "avg": Aggregation.AVG, "max": Aggregation.MAX, "sum": Aggregation.SUM}


def main(out_path):
    classes = {c.__name__: c for c in (APPNPConv, GATv2Conv, GCNConv, GENConv, GINConv, GINEConv, SAGEConv,
                                       ResGatedGraphConv, RGCNConv, SGConv, TAGConv)}
    records = []
    for name, kwargs in CASES:
        real = {k: FUNCTIONS.get(v, v) if isinstance(v, str) and k in ("activation", "aggregation",
                                                                         "gating_activation") else v
                for k, v in kwargs.items()}
        rules = [str(r) for r in classes[name](**real)()]
        records.append({"module": name, "kwargs": kwargs, "rules": rules})
    with open(out_path, "w") as f:
        json.dump({"source": "neuralogic==0.9.2 (pip)", "cases": records}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
