"""PyNeuraLogic's `neuralogic.dataset.base` classes: the bases lrnn's datasets derive from, so
`isinstance(ds, BaseDataset)` and type hints written against them hold."""

from typing import Any


class BaseDataset:
    """A logic dataset: its samples can be written as query and example text."""

    def dump(self, queries_fp: Any, examples_fp: Any, sep: str = "\n") -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot be written as text")


class ConvertibleDataset(BaseDataset):
    """A dataset in another form (tensors, CSV) that converts to a logic Dataset."""

    def to_dataset(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not convert to a Dataset")

    def dump(self, queries_fp: Any, examples_fp: Any, sep: str = "\n") -> None:
        """Writes the converted Dataset's queries and examples."""
        self.to_dataset().dump(queries_fp, examples_fp, sep)


__all__ = ["BaseDataset", "ConvertibleDataset"]
