"""Learning-rate decays (`neuralogic.nn.optim.lr_scheduler`): `Adam(lr=..., lr_decay=GeometricLR(0.9, 10))`."""

from lrnn.optim import ArithmeticLR, GeometricLR, LRDecay

__all__ = ["ArithmeticLR", "GeometricLR", "LRDecay"]
