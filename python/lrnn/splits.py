"""Query splits inside one example (docs/big_graphs.md "Query splits"): which queries of a
dataset train, validate and test, given as PyG-style boolean masks or as fractions drawn
with a seed. The engine holds the split; this module only turns masks into parts."""

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

# The engine's QuerySplit values (include/lrnn/training.hpp).
TRAIN, VAL, TEST, NONE = 0, 1, 2, 3
_NAMES = ("train_mask", "val_mask", "test_mask")


def _as_mask(mask: Any, name: str) -> Optional[np.ndarray]:
    """A boolean mask as a 1-D numpy array (numpy, torch or a sequence of bools)."""
    if mask is None:
        return None
    if hasattr(mask, "detach"):  # a torch tensor, without importing torch
        mask = mask.detach().cpu().numpy()
    array = np.asarray(mask)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (one entry per query), got shape {array.shape}")
    if array.dtype != np.bool_:
        if array.size and not np.isin(array, (0, 1)).all():
            raise ValueError(f"{name} must be boolean (or 0/1), got values such as {array[~np.isin(array, (0, 1))][0]!r}")
        array = array.astype(np.bool_)
    return array


class QuerySplitSpec:
    """A query split as asked for: masks (train, val, test; any may be None) or fractions."""

    def __init__(self, masks: Sequence[Any], fractions: Optional[Tuple[float, float, float]], seed: int):
        self.masks = [_as_mask(m, n) for m, n in zip(masks, _NAMES)]
        if fractions is not None and any(m is not None for m in self.masks):
            raise ValueError("give either masks (train_mask, val_mask, test_mask) or split=(train, val, test), not both")
        if fractions is not None:
            fractions = tuple(float(f) for f in fractions)
            if len(fractions) != 3:
                raise ValueError(f"split= takes three fractions (train, val, test), got {len(fractions)}")
        self.fractions = fractions
        self.seed = int(seed)

    def parts(self) -> List[int]:
        """One part per query (TRAIN, VAL, TEST or NONE); empty for a split by fractions."""
        given = [(m, n) for m, n in zip(self.masks, _NAMES) if m is not None]
        if not given:
            return []
        n = len(given[0][0])
        for m, name in given:
            if len(m) != n:
                raise ValueError(f"{name} has {len(m)} entries, {given[0][1]} has {n}: the masks must have one per query")
        train, val, test = self.masks
        both = [(a, b) for a, b in ((0, 1), (0, 2), (1, 2))
                if self.masks[a] is not None and self.masks[b] is not None and (self.masks[a] & self.masks[b]).any()]
        if both:
            a, b = both[0]
            q = int(np.flatnonzero(self.masks[a] & self.masks[b])[0])
            raise ValueError(f"query {q} is in both {_NAMES[a]} and {_NAMES[b]}: a query belongs to one part")
        parts = np.full(n, NONE if train is not None else TRAIN, dtype=np.uint8)
        if train is not None:
            parts[train] = TRAIN
        if val is not None:
            parts[val] = VAL
        if test is not None:
            parts[test] = TEST
        return parts.tolist()
