"""PyNeuraLogic's module zoo (`neuralogic.nn.module`): rule generators added to a template
with `template += Module(...)`."""

from lrnn.nn.module.gnn import (
    APPNPConv, GATv2Conv, GCNConv, GENConv, GINConv, GINEConv, GraphConv, ResGatedGraphConv, RGCNConv, SAGEConv,
    SGConv, TAGConv,
)
from lrnn.nn.module.gnn import __all__ as _gnn_all
from lrnn.nn.module.module import Module

__all__ = ["Module"] + list(_gnn_all)
