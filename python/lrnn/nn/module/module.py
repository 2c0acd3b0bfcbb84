"""The base of every zoo module: PyNeuraLogic's `Module` (a rule generator)."""

from abc import ABC, abstractmethod
from typing import Any, Iterator, List


class Module(ABC):
    """`module()` returns the module's rules; `template += module` adds them."""

    @abstractmethod
    def __call__(self) -> List[Any]: ...

    def __repr__(self) -> str:
        from lrnn.nn._repr import constructor_repr

        return constructor_repr(self)

    def __iter__(self) -> Iterator[Any]:
        # so `template += module` adds the rules (Template.__iadd__ takes iterables)
        from lrnn.core.template import Template

        return iter(Template.from_string("\n".join(str(r) for r in self()), type(self).__name__)._entries)
