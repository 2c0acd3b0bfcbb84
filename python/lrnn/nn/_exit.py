"""Holders that autograd nodes keep for their backward passes, emptied when Python exits."""

from __future__ import annotations

import atexit
import weakref


class EmptiedAtExit:
    """What an autograd node holds for its backward pass (lrnn.nn.torch_function: the layer,
    the engine's grounded sample or fact rows; lrnn.nn.module.gnn.torch_layer: the layer and
    a call's facts). A node still alive when Python exits (an output kept in a global: torch
    then frees its graph during finalization, too late to drop the node's Python references)
    would keep these, and with them the engine's objects, past the extension's end, which
    nanobind reports as leaks. So every such holder has its slots emptied at exit, before the
    modules go."""

    __slots__ = ("__weakref__",)

    def __init__(self) -> None:
        _LIVE.add(self)


_LIVE: "weakref.WeakSet[EmptiedAtExit]" = weakref.WeakSet()


@atexit.register
def _empty_holders() -> None:
    for holder in list(_LIVE):
        for cls in type(holder).__mro__:
            for name in getattr(cls, "__slots__", ()):
                if name != "__weakref__":
                    setattr(holder, name, None)
