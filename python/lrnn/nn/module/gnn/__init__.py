"""GNN layers. Each PyNeuraLogic module (pyneuralogic.py) prints PyNeuraLogic 0.9.2's rules;
its PyG-exact form (pyg.py, pyg_propagation.py, pyg_edges.py) runs on NumPy arrays, and on
torch tensors as a torch module (torch_layer.py, docs/torch_layers.md); it is reached through
`<Name>.pyg(...)` / `<Name>.from_torch(torch_geometric_layer)`."""

from lrnn.nn.module.gnn.pyg import GraphConv, PygGATv2Conv, PygGCNConv, PygGINConv, PygLayer, PygSAGEConv
from lrnn.nn.module.gnn.pyg_edges import PygGENConv, PygGINEConv, PygResGatedGraphConv, PygRGCNConv
from lrnn.nn.module.gnn.pyg_propagation import PygAPPNP, PygSGConv, PygTAGConv
from lrnn.nn.module.gnn.pyneuralogic import (
    APPNPConv, GATv2Conv, GCNConv, GENConv, GINConv, GINEConv, ResGatedGraphConv, RGCNConv, SAGEConv, SGConv,
    TAGConv,
)

__all__ = [
    "GCNConv", "SAGEConv", "GINConv", "GINEConv", "GATv2Conv", "GENConv", "GraphConv", "ResGatedGraphConv",
    "RGCNConv", "SGConv", "TAGConv", "APPNPConv", "PygLayer", "PygGCNConv", "PygSAGEConv", "PygGINConv",
    "PygGATv2Conv", "PygGENConv", "PygGINEConv", "PygResGatedGraphConv", "PygRGCNConv", "PygSGConv", "PygTAGConv", "PygAPPNP",
]
