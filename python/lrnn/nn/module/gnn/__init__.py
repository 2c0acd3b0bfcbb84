"""GNN layers: PyNeuraLogic's rule generators (pyneuralogic.py) and PyG-exact layers that
run on NumPy arrays (pyg.py, reached through `<Name>.pyg(...)` / `<Name>.from_torch(...)`)."""

from lrnn.nn.module.gnn.pyneuralogic import (
    APPNPConv, GATv2Conv, GCNConv, GENConv, GINConv, GINEConv, ResGatedGraphConv, RGCNConv, SAGEConv, SGConv,
    TAGConv,
)
from lrnn.nn.module.gnn.pyg import GraphConv, PygGATv2Conv, PygGCNConv, PygGINConv, PygSAGEConv

__all__ = [
    "GCNConv", "SAGEConv", "GINConv", "GINEConv", "GATv2Conv", "GENConv", "GraphConv", "ResGatedGraphConv",
    "RGCNConv", "SGConv", "TAGConv", "APPNPConv", "PygGCNConv", "PygSAGEConv", "PygGINConv", "PygGATv2Conv",
]
