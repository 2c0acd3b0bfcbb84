"""The dtype switch of the lrnn.nn modules that run the engine: the scalar type of their
forward and backward passes (weights, gradients and the arrays in and out stay float64)."""

from __future__ import annotations

from typing import Any, Iterable


class DtypeSwitch:
    """`.dtype` ('float32' | 'float64'), `.float()`, `.double()` (as torch's modules). A
    subclass lists its engine models in `_engine_models()`; a model made later must take
    `self.dtype` when it is made."""

    def _engine_models(self) -> Iterable[Any]:
        raise NotImplementedError

    @property
    def dtype(self) -> str:
        return self.__dict__.get("_dtype", "float64")

    @dtype.setter
    def dtype(self, value) -> None:
        from lrnn.core.settings import check_dtype

        self._dtype = check_dtype(value, f"{type(self).__name__}.dtype")
        for model in self._engine_models():
            model.dtype = self._dtype

    def float(self):
        """Runs forward and backward in float32 (as torch's module.float())."""
        self.dtype = "float32"
        return self

    def double(self):
        self.dtype = "float64"
        return self
