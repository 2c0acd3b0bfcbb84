"""PyNeuraLogic's module zoo (`neuralogic.nn.module`): rule generators added to a template
with `template += Module(...)`; each prints the rules PyNeuraLogic 0.9.2 prints."""

from lrnn.nn.module.general import (
    GRU, LSTM, MLP, RNN, Attention, AvgPooling, Linear, MaxPooling, MultiheadAttention, Pooling, PositionalEncoding,
    RvNN, SumPooling, Transformer, TransformerDecoder, TransformerEncoder,
)
from lrnn.nn.module.gnn import *  # noqa: F401,F403 - every layer file's __all__ (gnn/__init__.py)
from lrnn.nn.module.gnn import __all__ as _gnn_all
from lrnn.nn.module.kbc import DistMult, SimplE, TransE
from lrnn.nn.module.meta import MAGNNLinear, MAGNNMean, MetaConv
from lrnn.nn.module.module import Module, ModuleRule

#: the names `neuralogic.nn.module` 0.9.2 exports (each prints PyNeuraLogic's rules)
PYNEURALOGIC_MODULES = [
    "APPNPConv", "GATv2Conv", "GCNConv", "GINConv", "SAGEConv", "ResGatedGraphConv", "RGCNConv", "SGConv", "TAGConv",
    "GINEConv", "GENConv", "PositionalEncoding", "MLP", "Linear", "RNN", "GRU", "LSTM", "RvNN", "Pooling",
    "AvgPooling", "MaxPooling", "SumPooling", "Transformer", "TransformerEncoder", "TransformerDecoder", "Attention",
    "MultiheadAttention", "MetaConv", "MAGNNLinear", "MAGNNMean", "Module",
]

__all__ = sorted(set(PYNEURALOGIC_MODULES + list(_gnn_all) + ["ModuleRule", "TransE", "DistMult", "SimplE"]))
