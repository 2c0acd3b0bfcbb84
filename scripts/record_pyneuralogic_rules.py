"""Records the rules PyNeuraLogic 0.9.2's module zoo (`neuralogic.nn.module`) generates, one
text file per case, for tests/python/test_pnl_zoo.py (which never imports neuralogic).

Run once with a python that has `neuralogic==0.9.2` (and Java) installed:
    python3 scripts/record_pyneuralogic_rules.py tests/python/data/pyneuralogic_rules
Each file is `# <Module> <kwargs as JSON>` then the module's rules, one `str(rule)` a line.
Functions are written by name in the kwargs ("relu", "avg") and passed to neuralogic as its
Transformation/Aggregation objects.
"""

import json
import os
import sys

import neuralogic.nn.module as pnl
from neuralogic.core import Aggregation, Transformation

FUNCTIONS = {"relu": Transformation.RELU, "sigmoid": Transformation.SIGMOID, "tanh": Transformation.TANH,
             "identity": Transformation.IDENTITY, "avg": Aggregation.AVG, "max": Aggregation.MAX,
             "sum": Aggregation.SUM}
FUNCTION_ARGS = ("activation", "aggregation", "gating_activation")

GNN = dict(in_channels=3, out_channels=4, output_name="h", feature_name="x", edge_name="edge")
HIDDEN_EDGE = dict(in_channels=1, out_channels=2, output_name="h1", feature_name="h0", edge_name="_edge")

CASES = [
    # graph layers
    ("GCNConv", GNN),
    ("GCNConv", HIDDEN_EDGE),
    ("GCNConv", dict(GNN, activation="relu", add_self_loops=False)),
    ("GCNConv", dict(GNN, normalize=False, aggregation="avg")),
    ("SAGEConv", GNN),
    ("SAGEConv", dict(HIDDEN_EDGE, activation="sigmoid", aggregation="max")),
    ("GINConv", GNN),
    ("GINConv", dict(HIDDEN_EDGE, activation="relu", aggregation="avg")),
    ("GINEConv", dict(in_channels=3, feature_name="x", edge_name="edge", nn_name="mlp")),
    ("GINEConv", dict(in_channels=3, feature_name="x", edge_name="_edge", nn_name="out", eps=0.5, train_eps=True,
                      edge_dim=2)),
    ("GATv2Conv", GNN),
    ("GATv2Conv", dict(HIDDEN_EDGE, share_weights=True, activation="tanh", add_self_loops=False,
                       negative_slope=0.1)),
    ("GENConv", GNN),
    ("GENConv", dict(in_channels=4, out_channels=4, output_name="g", feature_name="f", edge_name="e",
                     aggregation="sum", num_layers=3, expansion=3, eps=0.01, train_eps=True, edge_dim=2)),
    ("GENConv", dict(in_channels=5, out_channels=1, output_name="h", feature_name="f", edge_name="e",
                     num_layers=1, aggregation="avg", eps=0, edge_dim=5)),
    ("ResGatedGraphConv", GNN),
    ("ResGatedGraphConv", dict(HIDDEN_EDGE, gating_activation="tanh", activation="relu", aggregation="avg")),
    ("RGCNConv", dict(GNN, relations=["r1", "r2"])),
    ("RGCNConv", dict(GNN, edge_name="_edge", relations=["a", "b"], activation="relu", aggregation="sum")),
    ("RGCNConv", dict(GNN, edge_name=None, relations=["bond", "near"])),
    ("SGConv", GNN),
    ("SGConv", dict(HIDDEN_EDGE, k=3, activation="relu", add_self_loops=False)),
    ("SGConv", dict(HIDDEN_EDGE, k=2, normalize=False)),
    ("TAGConv", GNN),
    ("TAGConv", dict(HIDDEN_EDGE, k=3, activation="sigmoid", normalize=False)),
    ("APPNPConv", dict(output_name="h", feature_name="x", edge_name="edge", k=1, alpha=0.1)),
    ("APPNPConv", dict(output_name="p", feature_name="f", edge_name="_e", k=3, alpha=0.25, activation="relu")),
    ("APPNPConv", dict(output_name="p", feature_name="f", edge_name="e", k=2, alpha=0.5, normalize=False)),
    # general layers
    ("Linear", dict(in_channels=1, out_channels=2, output_name="h1", input_name="h0")),
    ("Linear", dict(in_channels=3, out_channels=2, output_name="h", input_name="x", activation="sigmoid", arity=2)),
    ("Linear", dict(in_channels=3, out_channels=2, output_name="h", input_name="x", arity=0)),
    ("MLP", dict(units=[3, 4, 2], output_name="h", input_name="x")),
    ("MLP", dict(units=[3, 4, 5, 2, 6], output_name="h", input_name="x", activation="sigmoid", arity=2)),
    ("MLP", dict(units=[3, 4, 5, 2], output_name="h", input_name="x",
                 activation=["relu", "tanh", "sigmoid", "identity"])),
    ("RNN", dict(input_size=3, hidden_size=2, output_name="h", input_name="f", hidden_0_name="h0")),
    ("RNN", dict(input_size=3, hidden_size=2, output_name="h", input_name="f", hidden_0_name="h0", arity=0,
                 activation="relu")),
    ("GRU", dict(input_size=3, hidden_size=2, output_name="h", input_name="f", hidden_0_name="h0", arity=0)),
    ("GRU", dict(input_size=3, hidden_size=2, output_name="h", input_name="f", hidden_0_name="h0")),
    ("LSTM", dict(input_size=3, hidden_size=2, output_name="h", input_name="f", hidden_0_name="h0",
                  cell_state_0_name="c0", arity=0)),
    ("LSTM", dict(input_size=3, hidden_size=2, output_name="h", input_name="f", hidden_0_name="h0",
                  cell_state_0_name="c0")),
    ("RvNN", dict(input_size=3, output_name="h", input_name="x", parent_map_name="parent")),
    ("RvNN", dict(input_size=2, output_name="t", input_name="x", parent_map_name="p", max_children=3,
                  activation="relu", aggregation="avg", arity=0)),
    ("Pooling", dict(output_name="out", input_name="h", aggregation="sum")),
    ("SumPooling", dict(output_name="out", input_name="h")),
    ("AvgPooling", dict(output_name="out", input_name="h", input_arity=2)),
    ("MaxPooling", dict(output_name="out", input_name="h", input_arity=0)),
    ("Attention", dict(embed_dim=4, output_name="att", query_name="q", key_name="k", value_name="v")),
    ("Attention", dict(embed_dim=9, output_name="att", query_name="q", key_name="k", value_name="v",
                       mask_name="m", arity=2)),
    ("MultiheadAttention", dict(embed_dim=4, num_heads=2, output_name="out", query_name="q", key_name="k",
                                value_name="v")),
    ("MultiheadAttention", dict(embed_dim=10, num_heads=1, output_name="out", query_name="q", key_name="k",
                                value_name="v", vdim=14, kdim=12)),
    ("MultiheadAttention", dict(embed_dim=6, num_heads=3, output_name="o", query_name="q", key_name="k",
                                value_name="v", mask_name="m", arity=0)),
    ("PositionalEncoding", dict(embed_dim=4, max_len=5, output_name="pe", input_name="x")),
    ("PositionalEncoding", dict(embed_dim=6, max_len=3, output_name="pe", input_name="x", learnable=True)),
    ("TransformerEncoder", dict(input_dim=4, num_heads=2, dim_feedforward=8, output_name="enc", input_name="x")),
    ("TransformerDecoder", dict(input_dim=4, num_heads=2, dim_feedforward=8, output_name="dec", input_name="x",
                                encoder_name="enc")),
    ("Transformer", dict(input_dim=4, num_heads=2, dim_feedforward=8, output_name="tr", src_name="src",
                         tgt_name="tgt")),
    # meta-path layers
    ("MetaConv", dict(in_channels=3, out_channels=2, output_name="h", feature_name="f", role_name="role",
                      roles=["a", "b"])),
    ("MetaConv", dict(in_channels=3, out_channels=2, output_name="h", feature_name="f", role_name=None,
                      roles=["a", "b"], activation="relu", aggregation="sum")),
    ("MAGNNMean", dict(output_name="h", feature_name="f", relation_name="e", type_name="type",
                       meta_paths=["r1", "r2"])),
    ("MAGNNMean", dict(output_name="h", feature_name="f", relation_name="e", type_name=None,
                       meta_paths=["a", "b", "c"], activation="relu", aggregation="avg")),
    ("MAGNNLinear", dict(in_channels=3, out_channels=2, output_name="h", feature_name="f", relation_name="e",
                         type_name=None, meta_paths=["r1", "r2"])),
]


def as_neuralogic(kwargs):
    def convert(key, value):
        if key not in FUNCTION_ARGS:
            return value
        if isinstance(value, list):
            return [FUNCTIONS[v] for v in value]
        return FUNCTIONS[value]

    return {k: convert(k, v) for k, v in kwargs.items()}


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    counts = {}
    for name, kwargs in CASES:
        counts[name] = counts.get(name, 0) + 1
        rules = [str(r) for r in getattr(pnl, name)(**as_neuralogic(kwargs))()]
        with open(os.path.join(out_dir, f"{name}-{counts[name]}.txt"), "w") as f:
            f.write(f"# {name} {json.dumps(kwargs)}\n")
            f.write("".join(rule + "\n" for rule in rules))


if __name__ == "__main__":
    main(sys.argv[1])
