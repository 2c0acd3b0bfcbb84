"""Error functions, as in `neuralogic.nn.loss`."""

from __future__ import annotations


class ErrorFunction:
    """`reduction` as in torch: "mean" divides the batch's summed error by its number of
    outputs (entries of an output are averaged), "sum" does not divide; it changes the
    gradient."""

    name = ""
    reductions = ("mean",)

    def __init__(self, reduction: str = "mean"):
        if reduction not in ("mean", "sum"):
            raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
        if reduction not in self.reductions:
            raise ValueError(f"{type(self).__name__} takes reduction='mean' only in lrnn, got {reduction!r}")
        self.reduction = reduction

    @property
    def engine_name(self) -> str:
        """The engine's loss setting (include/lrnn/training.hpp)."""
        return self.name

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}()" if self.reduction == "mean" else f"{type(self).__name__}(reduction={self.reduction!r})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.reduction == other.reduction  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((self.name, self.reduction))


class MSE(ErrorFunction):
    """Mean squared error: (y - t)^2 averaged over an output's entries and over the outputs
    (reduction="mean"), or summed over both (reduction="sum", torch's MSELoss(reduction="sum"))."""

    name = "mse"
    reductions = ("mean", "sum")

    @property
    def engine_name(self) -> str:
        return "mse" if self.reduction == "mean" else "mse_sum"


class CrossEntropy(ErrorFunction):
    """Cross-entropy from logits: binary (sigmoid) for one-entry outputs, softmax otherwise."""

    name = "crossentropy"

    def __init__(self, with_logits: bool = True, reduction: str = "mean"):
        if not with_logits:
            raise ValueError(
                "lrnn's CrossEntropy takes logits (with_logits=True): drop the final sigmoid/softmax "
                "activation and the loss applies it"
            )
        super().__init__(reduction)
        self.with_logits = True


class SoftEntropy(CrossEntropy):
    """PyNeuraLogic's SoftEntropy: softmax (sigmoid for one entry) of the output, then
    cross-entropy against the target; the same numbers as CrossEntropy(with_logits=True)."""

    def __init__(self, reduction: str = "mean"):
        super().__init__(True, reduction)


__all__ = ["ErrorFunction", "MSE", "CrossEntropy", "SoftEntropy"]
