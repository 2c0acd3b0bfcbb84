"""Issue #15's "fix on the way": None through the bindings, `constant` exported, selector
names, None propagating through element-wise operations (tracr's evaluator), None keys
refused, LoweredTemplate.run decoding to the interpreter's values."""

import pytest

import lrnn
import lrnn.rasp as rasp
from lrnn.rasp import aggregate, constant, indices, key, query, select, tokens


def shift_by(offset, sop):
    shifted = select(indices, indices.map(lambda i: i - offset), "==")
    return aggregate(shifted, sop, default=None)


def detect_pattern(sop, pattern):
    """tracr's library: True where the pattern ends at this position."""
    detectors = []
    for i, element in enumerate(reversed(pattern)):
        shifted = sop if i == 0 else shift_by(i, sop)
        detectors.append(shifted == element)
    out = detectors[0]
    for d in detectors[1:]:
        out = out & d
    return out


def test_none_passes_through_the_bindings():
    nothing = select(indices, indices, "false")
    assert aggregate(nothing, tokens, default=None)("ab") == [None, None]
    assert nothing.value(tokens, None)("ab") == [None, None]
    assert constant(None)("ab") == [None, None]
    assert "constant" in rasp.__all__


def test_selectors_have_names():
    sel = (key(indices) == query(indices)).name("same")
    assert sel.name() == "same"
    assert (key(indices) == query(indices)).name() == ""
    assert rasp.analyze(sel.value(tokens)).heads[0].selector == "same"


def test_elementwise_operations_keep_none():
    assert detect_pattern(tokens, "ab")("aaba") == [None, False, True, False]
    undefined = aggregate(select(indices, indices, "false"), tokens, default=None)
    for op in (undefined + 1, undefined == 1, ~undefined, undefined | True, undefined.map(lambda x: 7),
               rasp.SOp.zip(lambda a, b: 7, undefined, tokens), rasp.where(undefined, 1, 2)):
        assert op([1, 2]) == [None, None]


def test_selecting_with_none_names_the_sop():
    undefined = aggregate(select(indices, indices, "false"), tokens, default=None).name("nothing")
    with pytest.raises(lrnn.LrnnError, match="key s-op nothing is None at position 0"):
        select(undefined, indices, "==").value(tokens)("ab")
    with pytest.raises(lrnn.LrnnError, match="query s-op nothing is None"):
        select(indices, undefined, "<").value(tokens)("ab")


def test_lowered_template_decodes_interpreter_values():
    program = detect_pattern(tokens, "ab")
    lowered = rasp.to_template(program, "ab", 4)
    for word in ["aaba", "ab", "b", "bbab"]:
        assert lowered.run(word) == program(word), word
    gather = aggregate(select(indices, indices.map(lambda i: i - 1), "=="), tokens, default=None)
    lowered = rasp.to_template(gather, ["y", "x"], 3)
    assert lowered.run(["y", "x", "y"]) == [None, "y", "x"]
    # a vocabulary token "none" and the undefined None would be one constant: refused
    with pytest.raises(lrnn.LrnnError, match='can hold both None and the string "none"'):
        rasp.to_template(gather, ["none", "x"], 3)
    assert rasp.to_template(tokens, ["none", "x"], 2).run(["none", "x"]) == ["none", "x"]
    # booleans come back as booleans, not 0/1
    is_x = tokens == "x"
    assert rasp.to_template(is_x, ["none", "x"], 3).run(["x", "none"]) == [True, False]
