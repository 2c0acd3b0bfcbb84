"""GNN layers, one file per layer: each holds the layer's PyNeuraLogic form (a rule generator
printing PyNeuraLogic 0.9.2's rules, on `_graph_module._GraphModule`) and its PyG form (the
`Pyg<Name>` class on `pyg.PygLayer`: PyG's exact layer, on NumPy arrays and, as a torch module,
on torch tensors: torch_layer.py, docs/torch_layers.md), reached through `<Name>.pyg(...)` /
`<Name>.from_torch(torch_geometric_layer)`.

Adding a layer is adding its file here: every module of this folder whose name does not
start with `_` (and is not one of the bases) is imported, and its `__all__` exported."""

from lrnn._folder_exports import export_module_files
from lrnn.nn.module.gnn.pyg import PygLayer

_BASES = {"pyg", "torch_layer"}

__all__ = ["PygLayer"]
__all__ += export_module_files(__name__, __path__, globals(), skip=_BASES)
