"""Initialisers of learnable weights whose value is not written (`{3, 3}`), as in
`neuralogic.nn.init`."""

from __future__ import annotations


class Initializer:
    kind = ""

    def engine_scale(self) -> float:
        return 1.0

    def engine_spec(self) -> str:
        """The engine's initializer setting, e.g. "uniform(0.5)" (repr keeps every digit)."""
        scale = self.engine_scale()
        return self.kind if scale == 1.0 else f"{self.kind}({scale!r})"

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __str__(self) -> str:
        return self.kind.upper()


class Uniform(Initializer):
    """Uniform on [-scale/2, scale/2] (PyNeuraLogic's convention; default [-1, 1])."""

    kind = "uniform"

    def __init__(self, scale: float = 2.0):
        self.scale = float(scale)

    def engine_scale(self) -> float:
        return self.scale / 2.0  # the engine samples U(-s, s)

    def __repr__(self) -> str:
        return f"Uniform(scale={self.scale})"


class Normal(Initializer):
    """Normal N(0, std^2)."""

    kind = "normal"

    def __init__(self, std: float = 1.0):
        self.std = float(std)

    def engine_scale(self) -> float:
        return self.std


class Glorot(Initializer):
    """Glorot (Xavier) uniform: U(-a, a), a = sqrt(6 / (fan_in + fan_out))."""

    kind = "glorot"

    def __init__(self, scale: float = 2.0):
        self.scale = float(scale)


class He(Initializer):
    """He normal: N(0, 2 / fan_in)."""

    kind = "he"

    def __init__(self, scale: float = 2.0):
        self.scale = float(scale)


class Constant(Initializer):
    """Every unwritten weight starts at `value`."""

    kind = "constant"

    def __init__(self, value: float = 0.1):
        self.value = float(value)

    def engine_scale(self) -> float:
        return self.value


class Longtail(Initializer):
    """PyNeuraLogic's long-tailed draw on [0, 10]: 10 (1 - u^(1/51)), u ~ U(0, 1)."""

    kind = "longtail"


class Torch(Initializer):
    """torch.nn.Linear's draw: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in the weight's
    columns (a vector {n} or a scalar: U(-1, 1))."""

    kind = "torch"


__all__ = ["Initializer", "Uniform", "Normal", "Glorot", "He", "Constant", "Longtail", "Torch"]
