"""Engine errors reach Python as lrnn.LrnnError (a ValueError) with the CLI's message."""

import pytest

import lrnn
from lrnn import _core


def test_error_carries_the_cli_diagnostic():
    with pytest.raises(lrnn.LrnnError) as info:
        _core._raise_error("a :- b\nxor :- ]", "t.lrnn", 2, 8, 1, "expected a literal, found ']'")
    e = info.value
    assert isinstance(e, ValueError)
    assert str(e) == "t.lrnn:2:8: error: expected a literal, found ']'\nxor :- ]\n       ^"
    assert (e.file, e.line, e.col, e.kind) == ("t.lrnn", 2, 8, "parse")
    assert e.message == "expected a literal, found ']'"
