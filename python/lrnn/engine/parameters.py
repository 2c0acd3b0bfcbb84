"""A built model's weights as PyNeuraLogic reads them (lrnn.Model.parameters and
state_dict): by lrnn name, and by PyNeuraLogic's weight index."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np


class Parameters(dict):
    """A model's weights by lrnn name (iteration, `items()`, `len` see only these), that also
    answers PyNeuraLogic's `parameters()` form: `["weights"]` is {index: value} of the
    learnable weights numbered as PyNeuraLogic numbers them, `["weight_names"]` {index: name}
    (`w<index>` for unnamed weights, as PyNeuraLogic prints them). A value replaced in either
    form is what `Model.load_state_dict` loads."""

    _PNL_KEYS = ("weights", "weight_names")

    def __init__(self, by_name: Dict[str, np.ndarray], numbering: List[Tuple[int, str]]):
        super().__init__(by_name)
        self.numbering = list(numbering)
        self._pnl_weights = {index: by_name[name] for index, name in numbering}
        self._pnl_originals = dict(self._pnl_weights)
        self._pnl_names = {
            index: (name[1:] if name.startswith("$") else f"w{index}") for index, name in numbering
        }

    def __getitem__(self, key: Any) -> Any:
        if key == "weights" and not dict.__contains__(self, key):
            return self._pnl_weights
        if key == "weight_names" and not dict.__contains__(self, key):
            return self._pnl_names
        return super().__getitem__(key)

    def __contains__(self, key: Any) -> bool:
        return key in self._PNL_KEYS or super().__contains__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def by_name(self) -> Dict[str, Any]:
        """The weights to load: by name, with any value replaced under a PyNeuraLogic index
        taking the place of its named value."""
        out = dict(self)
        for index, name in self.numbering:
            value = self._pnl_weights.get(index)
            if value is not self._pnl_originals[index]:
                out[name] = value
        unknown = sorted(set(self._pnl_weights) - set(self._pnl_originals), key=str)
        if unknown:
            raise KeyError(f"the model has no learnable weight with PyNeuraLogic index {unknown[0]}")
        return out


class WeightsByNameOrIndex(dict):
    """Weights by lrnn name (what iteration and `items()` see), also read and written by
    PyNeuraLogic's weight index: `weights[0]` is the weight PyNeuraLogic numbers 0."""

    def __init__(self, by_name: Dict[str, Any], index_to_name: Dict[int, str]):
        super().__init__(by_name)
        self._index_to_name = index_to_name

    def _name(self, key: Any) -> Any:
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if int(key) not in self._index_to_name:
                raise KeyError(f"the model has no learnable weight with PyNeuraLogic index {key} "
                               f"(it has {sorted(self._index_to_name)})")
            return self._index_to_name[int(key)]
        return key

    def __getitem__(self, key: Any) -> Any:
        return super().__getitem__(self._name(key))

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(self._name(key), value)

    def __contains__(self, key: Any) -> bool:
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            return int(key) in self._index_to_name
        return super().__contains__(key)
