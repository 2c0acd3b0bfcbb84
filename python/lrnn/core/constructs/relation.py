"""`BaseRelation` and `WeightedRelation` under PyNeuraLogic's module path. lrnn has one
class for both (lrnn.core.atoms.Atom); a relation is a WeightedRelation when it has a weight."""

from lrnn.core.atoms import Atom


class _Weighted(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, Atom) and obj.weight is not None


class WeightedRelation(metaclass=_Weighted):
    """isinstance(x, WeightedRelation): x is a relation with a weight or value."""

    def __new__(cls, *args, **kwargs):
        raise TypeError("write R.name(...)[weight] to make a weighted relation")


BaseRelation = Atom

__all__ = ["BaseRelation", "WeightedRelation"]
