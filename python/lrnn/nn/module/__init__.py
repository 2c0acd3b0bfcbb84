"""PyNeuraLogic's module zoo (`neuralogic.nn.module`): rule generators added to a template
with `template += Module(...)`."""

from lrnn.nn.module.gnn import (
    APPNPConv, GATv2Conv, GCNConv, GENConv, GINConv, GINEConv, GraphConv, ResGatedGraphConv, RGCNConv, SAGEConv,
    SGConv, TAGConv,
)
from lrnn.nn.module.module import Module

__all__ = [
    "Module", "GCNConv", "SAGEConv", "GINConv", "GINEConv", "GATv2Conv", "GENConv", "GraphConv",
    "ResGatedGraphConv", "RGCNConv", "SGConv", "TAGConv", "APPNPConv",
]
