"""Weights and values: what `R.p(...)[...]` accepts (docs/language.md "Weights and values").

- a number: `R.p[0.5]` -> `0.5 p`
- a list or NumPy array: `R.p[[1, 2]]` -> `[1, 2] p` (a column vector), a nested list or a
  2-D array -> a matrix
- a tuple of ints: `R.p(V.X)[3, 3]` -> `{3, 3} p(X)` (shape only, randomly initialised)
- a name: `R.p(V.X)["w": 3, 3]` -> `$w={3, 3} p(X)`; `R.p["w"]` -> `$w p` (shares `w`)
- `.fixed()` -> `<...>` (not learned)
"""

from __future__ import annotations

import numbers
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from lrnn import _text

# While lrnn.nn.torch_function's batched NeuraLogic calls `to_logic`, a list: every torch tensor
# written as a value is converted through detach() and recorded here as (weight, tensor), so
# the layer knows which tensor (with its autograd history) each fact's value came from.
tensor_values: Optional[List[Tuple["Weight", Any]]] = None
# The exact types (torch.Tensor) Weight.from_item takes straight to _TensorWeight while
# tensor_values is set, before its other cases; lrnn.nn.torch_function registers them.
# Subclasses and other tensor types still get there, through Weight.value's test.
tensor_types: frozenset = frozenset()


# Bytes a written array value takes on its way to the engine, per entry: its copy here, its
# text in the template (up to ~24 characters a number), the parsed value and the weight.
_BYTES_PER_WRITTEN_ENTRY = 48


def _check_array_size(array: np.ndarray) -> None:
    """The engine's limits on one value, checked before the array is copied or written as
    text (which took 43 s and 5.8 GB for a 9000x9000 array before the parser refused it):
    at most MAX_VALUE_ENTRIES entries, and the memory budget (docs/cli.md "Memory budget").
    Both raise an LrnnError of kind "limit"; the atom's __getitem__ adds which weight."""
    from lrnn import _core
    from lrnn.errors import LrnnError

    if array.size > _core.MAX_VALUE_ENTRIES:
        message = (f"a weight or value of shape {array.shape} has {array.size} entries, over the limit of "
                   f"{_core.MAX_VALUE_ENTRIES} entries per value")
        raise LrnnError("error: " + message, message, kind="limit")
    _core.check_memory(array.size * _BYTES_PER_WRITTEN_ENTRY, f"a weight or value of shape {array.shape}")


def record_tensor(tensor: Any) -> "Weight":
    """A torch tensor written as a value while a batched NeuraLogic calls `to_logic`: its
    _TensorWeight, recorded in tensor_values."""
    weight = _TensorWeight.of(tensor, False)
    tensor_values.append((weight, tensor))
    return weight


def named_weight(item: Any, where: Callable[[], str]) -> "Weight":
    """Weight.from_item(item), a limit error naming where() (the atom whose weight it is).
    `where` is called only then: a batched NeuraLogic's to_logic gives each row's facts
    their values through here, and printing the atom every time cost more than the rest."""
    try:
        return Weight.from_item(item)
    except Exception as e:
        from lrnn.errors import LrnnError

        if not isinstance(e, LrnnError) or e.kind != "limit":
            raise
        message = f"{where()}: {e.message}"
        raise LrnnError("error: " + message, message, kind="limit") from None


class Weight:
    """A weight or a value as written in the text format (mirrors lrnn::ValueSpec)."""

    SCALAR, VECTOR, MATRIX, DIMS, REFERENCE = "scalar", "vector", "matrix", "dims", "reference"

    __slots__ = ("kind", "rows", "cols", "data", "name", "is_fixed", "dims_is_vector", "float_marks")

    def __init__(
        self,
        kind: str,
        rows: int = 1,
        cols: int = 1,
        data: Optional[np.ndarray] = None,
        name: Optional[str] = None,
        fixed: bool = False,
        dims_is_vector: bool = False,
    ):
        self.kind = kind
        self.rows = rows
        self.cols = cols
        # float64, row-major; empty for DIMS / REFERENCE
        self.data = np.zeros(0) if data is None else data
        self.name = name
        self.is_fixed = fixed
        self.dims_is_vector = dims_is_vector
        # per entry, True where the user wrote a float (PyNeuraLogic prints 1.0 as `1.0` and
        # 1 as `1`); None when unknown (parsed text, shapes), which prints as the C++ printer
        self.float_marks: Optional[Tuple[bool, ...]] = None

    # ---- construction ----------------------------------------------------------------------
    @staticmethod
    def from_item(item: Any) -> "Weight":
        """The weight written inside `[...]` in PyNeuraLogic's DSL."""
        if tensor_values is not None and type(item) in tensor_types:
            return record_tensor(item)
        if isinstance(item, Weight):
            return item
        name = None
        if isinstance(item, slice):
            name, item = item.start, item.stop
        elif isinstance(item, tuple) and item and isinstance(item[0], slice):
            first = item[0]
            name, item = first.start, (first.stop, *item[1:])
        if name is not None:
            if not isinstance(name, str) or not _text.is_identifier(name) and not _text.is_variable_name(name):
                raise ValueError(f"invalid weight name {name!r}: write R.p['w': value]")
            if isinstance(item, slice) or item is None:
                raise ValueError(f"the named weight {name!r} needs a value or a shape: R.p[{name!r}: 3, 3]")
            weight = Weight.from_item(item)
            if weight.kind == Weight.REFERENCE:
                raise ValueError(f"the named weight {name!r} needs a value or a shape, not another name")
            weight.name = name
            return weight
        if isinstance(item, str):
            if not _text.is_identifier(item) and not _text.is_variable_name(item):
                raise ValueError(f"invalid weight name {item!r}")
            return Weight(Weight.REFERENCE, name=item)
        if isinstance(item, tuple):
            return Weight._dims(item)
        return Weight.value(item)

    @staticmethod
    def _dims(shape: Tuple[Any, ...]) -> "Weight":
        if len(shape) not in (1, 2):
            raise ValueError(f"a weight shape has one or two dimensions, got {shape!r}")
        dims = []
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, numbers.Integral) or int(d) <= 0:
                raise ValueError(f"weight dimensions are positive integers, got {shape!r}")
            dims.append(int(d))
        if len(dims) == 1:
            return Weight(Weight.DIMS, dims[0], 1, dims_is_vector=True)
        return Weight(Weight.DIMS, dims[0], dims[1])

    @staticmethod
    def value(value: Any, fixed: bool = False) -> "Weight":
        """A number, a (nested) list or a NumPy array as a scalar, vector or matrix."""
        if isinstance(value, bool):
            return Weight(Weight.SCALAR, data=np.array([1.0 if value else 0.0]), fixed=fixed)
        if isinstance(value, numbers.Real):
            weight = Weight(Weight.SCALAR, data=np.array([float(value)]), fixed=fixed)
            weight.float_marks = (_written_as_float(value),)
            return weight
        if tensor_values is not None and type(value).__module__.startswith("torch") and hasattr(value, "detach"):
            weight = _TensorWeight.of(value, fixed)
            tensor_values.append((weight, value))
            return weight
        weight = Weight._array_value(value, fixed)
        weight.float_marks = _float_marks(value, weight.data.size)
        return weight

    @staticmethod
    def _array_value(value: Any, fixed: bool) -> "Weight":
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise ValueError(f"cannot use {value!r} as a weight or value: {e}") from None
        _check_array_size(array)
        if array.ndim == 0:
            return Weight(Weight.SCALAR, data=array.reshape(1).copy(), fixed=fixed)
        if array.size == 0:
            raise ValueError("a weight or value cannot be empty")
        if not np.all(np.isfinite(array)):
            raise ValueError("weights and values must be finite numbers")
        if array.ndim == 1:
            return Weight(Weight.VECTOR, array.shape[0], 1, np.ascontiguousarray(array).copy(), fixed=fixed)
        if array.ndim == 2:
            return Weight(Weight.MATRIX, array.shape[0], array.shape[1], np.ascontiguousarray(array).reshape(-1).copy(), fixed=fixed)
        raise ValueError(f"a weight or value is a scalar, a vector or a matrix, got an array of shape {array.shape}")

    def fixed(self) -> "Weight":
        if self.is_fixed:
            raise ValueError(f"the weight {self} is already fixed")
        copy = self.copy()
        copy.is_fixed = True
        return copy

    def copy(self) -> "Weight":
        copy = Weight(self.kind, self.rows, self.cols, self.data, self.name, self.is_fixed, self.dims_is_vector)
        copy.float_marks = self.float_marks
        return copy

    # ---- reading -------------------------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        if self.kind == Weight.SCALAR:
            return ()
        if self.kind == Weight.VECTOR or (self.kind == Weight.DIMS and self.dims_is_vector):
            return (self.rows,)
        return (self.rows, self.cols)

    def to_numpy(self) -> np.ndarray:
        if self.kind in (Weight.DIMS, Weight.REFERENCE):
            raise ValueError(f"the weight {self} has no value yet")
        if self.kind == Weight.SCALAR:
            return np.array(self.data[0])
        return self.data.reshape(self.shape).copy()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """NumPy reads a written value as its array (`np.argmax(query.weight)` on a one-hot
        target, as PyNeuraLogic's values are lists); a shape-only weight has none (ValueError)."""
        array = self.to_numpy()
        return array if dtype is None else array.astype(dtype)

    # ---- printing ------------------------------------------------------------------------------
    def _body(self) -> str:
        marks = self.float_marks if self.float_marks is not None and len(self.float_marks) == self.data.size else None
        texts = [
            _as_written(x, marks[i] if marks is not None else False) for i, x in enumerate(self.data.tolist())
        ]
        if self.kind == Weight.SCALAR:
            return texts[0]
        if self.kind == Weight.VECTOR:
            return "[" + ", ".join(texts) + "]"
        if self.kind == Weight.MATRIX:
            rows = [texts[r * self.cols:(r + 1) * self.cols] for r in range(self.rows)]
            return "[" + ", ".join("[" + ", ".join(row) + "]" for row in rows) + "]"
        if self.kind == Weight.DIMS:
            return "{" + (str(self.rows) if self.dims_is_vector else f"{self.rows}, {self.cols}") + "}"
        return ""  # reference: only the name

    def __str__(self) -> str:
        if self.kind == Weight.REFERENCE:
            return f"<${self.name}>" if self.is_fixed else f"${self.name}"
        body = self._body()
        if self.is_fixed:
            body = f"<{body}>"
        return f"${self.name}={body}" if self.name is not None else body

    def __repr__(self) -> str:
        return f"Weight({self})"

    def __eq__(self, other: object) -> bool:
        """Equal to another Weight written the same, and, as PyNeuraLogic keeps what was
        written, to that: a shape tuple for `{1, 2}` (`R.p[1, 2].weight == (1, 2)`), a
        number or a list for a value."""
        if isinstance(other, Weight):
            return str(self) == str(other)
        if self.kind == Weight.DIMS and isinstance(other, tuple):
            return self.shape == other
        if self.kind in (Weight.SCALAR, Weight.VECTOR, Weight.MATRIX) and isinstance(other, (numbers.Real, list, np.ndarray)):
            try:
                other_array = np.asarray(other, dtype=np.float64)
            except (TypeError, ValueError):
                return False
            value = self.to_numpy()
            return other_array.shape == value.shape and bool(np.array_equal(other_array, value))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(str(self))


def _written_as_float(x: Any) -> bool:
    return isinstance(x, (float, np.floating))


def _float_marks(value: Any, size: int) -> Optional[Tuple[bool, ...]]:
    """Which entries of a (nested) list or array were written as floats, row-major."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None and not isinstance(value, (list, tuple)):
        # an array or a tensor: its dtype decides (read without converting the values again)
        floating = getattr(dtype, "is_floating_point", None)  # a torch dtype
        try:
            return ((bool(floating) if floating is not None else np.dtype(dtype).kind == "f"),) * size
        except TypeError:
            return None
    marks: List[bool] = []

    def walk(v: Any) -> None:
        if isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        elif isinstance(v, np.ndarray):
            marks.extend([v.dtype.kind == "f"] * v.size)
        else:
            marks.append(_written_as_float(v))

    walk(value)
    return tuple(marks) if len(marks) == size else None


def _as_written(x: float, written_as_float: bool) -> str:
    """The C++ printer's text of `x`, with `.0` kept on a whole float the user wrote as one."""
    text = _text.format_number(x)
    if written_as_float and text.lstrip("-").isdigit():
        return text + ".0"
    return text


class WeightFactory:
    """`W[...]`: a bare weight, used as a rule's offset (`R.h <= (R.a[3, 3], W[3,])`)."""

    def __getitem__(self, item: Any) -> Weight:
        return Weight.from_item(item)

    def __call__(self, value: Any) -> Weight:
        return Weight.value(value)


W = WeightFactory()


_DATA_SLOT = Weight.__dict__["data"]


class _TensorWeight(Weight):
    """A torch tensor written as a value while a batched NeuraLogic calls `to_logic`: its
    shape now, its numbers (`data`, checked finite) only when something reads them. The
    layer reads the tensor itself (recorded in `tensor_values`) and checks the batch's
    gathered values at once: converting and checking every row's tensors one by one cost
    more than the engine's work on them."""

    __slots__ = ("_tensor",)

    @staticmethod
    def of(tensor: Any, fixed: bool) -> "_TensorWeight":
        shape = tensor.shape  # a torch.Size, a tuple of ints
        if len(shape) > 2:
            raise ValueError(f"a weight or value is a scalar, a vector or a matrix, got an array of shape {tuple(shape)}")
        if len(shape) > 0 and tensor.numel() == 0:
            raise ValueError("a weight or value cannot be empty")
        # The slots set directly: Weight.__init__ would allocate an empty array for `data`.
        weight = _TensorWeight.__new__(_TensorWeight)
        weight.kind = (Weight.SCALAR, Weight.VECTOR, Weight.MATRIX)[len(shape)]
        weight.rows = shape[0] if shape else 1
        weight.cols = shape[1] if len(shape) == 2 else 1
        weight.name, weight.is_fixed, weight.dims_is_vector, weight.float_marks = None, fixed, False, None
        weight._tensor = tensor
        _DATA_SLOT.__set__(weight, None)
        return weight

    @property
    def data(self) -> np.ndarray:
        data = _DATA_SLOT.__get__(self)
        if data is None:
            data = Weight._array_value(self._tensor.detach().cpu().numpy(), self.is_fixed).data
            _DATA_SLOT.__set__(self, data)
        return data

    @data.setter
    def data(self, value: np.ndarray) -> None:
        _DATA_SLOT.__set__(self, value)
