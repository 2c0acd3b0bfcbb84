"""`Rule` and `RuleBody` under PyNeuraLogic's module path."""

from lrnn.core.rules import Rule, RuleBody

__all__ = ["Rule", "RuleBody"]
