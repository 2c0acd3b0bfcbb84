"""lrnn.nn modules print as torch prints its modules: the class and the constructor
arguments that differ from their defaults (issue 16: a readable repr)."""
import lrnn.nn as nn
from lrnn.nn.module.gnn import GCNConv, PygGCNConv


def test_attention_modules_show_their_arguments():
    assert repr(nn.MultiheadAttention(8, 2)) == "MultiheadAttention(embed_dim=8, num_heads=2)"
    assert repr(nn.MultiheadAttention(8, 2, bias=False)) == "MultiheadAttention(embed_dim=8, num_heads=2, bias=False)"
    assert repr(nn.TransformerEncoderLayer(8, 2, 16)) == "TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16)"


def test_graph_modules_show_their_arguments():
    assert repr(PygGCNConv(3, 4, improved=True)) == "PygGCNConv(in_channels=3, out_channels=4, improved=True, add_self_loops=True)"
    assert repr(GCNConv(3, 4, "h", "x", "edge")).startswith(
        "GCNConv(in_channels=3, out_channels=4, output_name='h', feature_name='x', edge_name='edge'"
    )
