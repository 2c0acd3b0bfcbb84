"""`neuralogic.nn.optim` spelling of `lrnn.optim`."""

from lrnn.optim import SGD, Adam, AdamW, Optimizer

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
