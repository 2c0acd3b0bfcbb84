"""Error functions, as in `neuralogic.nn.loss`."""

from __future__ import annotations


class ErrorFunction:
    name = ""

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(self.name)


class MSE(ErrorFunction):
    """Mean squared error over the output's entries (its exact gradient is used)."""

    name = "mse"


class CrossEntropy(ErrorFunction):
    """Cross-entropy from logits: binary (sigmoid) for one-entry outputs, softmax otherwise."""

    name = "crossentropy"

    def __init__(self, with_logits: bool = True):
        if not with_logits:
            raise ValueError(
                "lrnn's CrossEntropy takes logits (with_logits=True): drop the final sigmoid/softmax "
                "activation and the loss applies it"
            )
        self.with_logits = True


SoftEntropy = CrossEntropy

__all__ = ["ErrorFunction", "MSE", "CrossEntropy", "SoftEntropy"]
