"""The zoo's registry from Python (docs/architecture.md "How to add a zoo module in C++"): every
registered C++ module has its class in lrnn.nn and every class names a registered module; a
class's signature defaults are the registry's; the one generic binding refuses a wrong call
naming the parameter; and a class file dropped into lrnn/nn/zoo/ is exported with no other
edit (checked on a copy of the installed package)."""

import inspect
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import lrnn
import lrnn.nn as nn
from lrnn import _core
from lrnn.errors import LrnnError
from lrnn.nn.zoo import zoo_modules


def _zoo_classes():
    """Every class lrnn.nn exports that generates a zoo module, with its registry name(s)."""
    out = {}
    for name in nn.__all__:
        cls = getattr(nn, name)
        zoo_name = getattr(cls, "zoo_name", None)
        if inspect.isclass(cls) and zoo_name:
            out[cls] = zoo_name
    return out


def test_every_registered_module_has_a_class_and_every_class_a_module():
    schemas = zoo_modules()
    assert set(schemas) == {"attention", "multihead_attention", "relational_attention", "seq2seq", "transformer",
                            "transformer_decoder_layer", "transformer_encoder", "transformer_encoder_layer"}
    named = set()
    for cls, zoo_name in _zoo_classes().items():
        if isinstance(zoo_name, property):  # chosen per instance (TransformerEncoderLayer: layer or stack)
            continue
        assert zoo_name in schemas, cls
        named.add(zoo_name)
    named |= {nn.TransformerEncoderLayer(4, 1, 8).zoo_name, nn.TransformerEncoderLayer(4, 1, 8, num_layers=2).zoo_name}
    assert named == set(schemas)


def test_signature_defaults_are_the_registry_defaults():
    compared = 0
    for cls, zoo_name in _zoo_classes().items():
        if isinstance(zoo_name, property):
            continue
        schema = {name: (kind, default) for name, kind, default, _doc, _min in zoo_modules()[zoo_name]}
        for name, p in inspect.signature(cls.__init__).parameters.items():
            if name not in schema or p.default is inspect.Parameter.empty:
                continue
            kind, default = schema[name]
            if kind == "mask" or default is None:  # masks are Mask objects in Python; None: required in C++
                continue
            assert p.default == default, f"{cls.__name__}({name}={p.default!r}) but the registry's default is {default!r}"
            compared += 1
    assert compared >= 15


def test_schema_lists_types_defaults_and_bounds():
    params = {name: (kind, default, doc, low) for name, kind, default, doc, low in zoo_modules()["relational_attention"]}
    assert params["node_dim"] == ("int", None, "size of a node's embedding (E)", 1)
    assert params["num_heads"][:2] == ("int", 1)
    assert params["prefix"][:2] == ("string", "rel")
    assert params["mask"][:2] == ("mask", [])


def test_generic_binding_generates_and_refuses_naming_the_parameter():
    m = _core.zoo_module("relational_attention", {"node_dim": np.int64(4), "edge_dim": 3, "num_heads": 2})
    assert m.kind == "RelationalAttention" and m.output == "rel"
    assert m.text() == nn.RelationalAttention(4, 3, 2).rules()
    with pytest.raises(LrnnError, match=r"unknown zoo module 'relational_atention' \(did you mean "
                                             r"'relational_attention'\?\)"):
        _core.zoo_module("relational_atention", {})
    with pytest.raises(LrnnError, match=r"unknown parameter 'num_head' \(did you mean 'num_heads'\?\)"):
        _core.zoo_module("relational_attention", {"node_dim": 4, "edge_dim": 3, "num_head": 2})
    with pytest.raises(LrnnError, match="parameter 'node_dim': expected a bool, an int, a str or a list of str, got 4.5"):
        _core.zoo_module("relational_attention", {"node_dim": 4.5, "edge_dim": 3})
    with pytest.raises(LrnnError, match="parameter 'node_dim' is an int, got a bool"):
        _core.zoo_module("relational_attention", {"node_dim": True, "edge_dim": 3})
    with pytest.raises(LrnnError, match="parameter 'edge_dim' must be in \\[1, 2147483647\\], got 0"):
        _core.zoo_module("relational_attention", {"node_dim": 4, "edge_dim": 0})
    with pytest.raises(LrnnError, match="a mask is a list of literals \\(str\\), got 3"):
        _core.zoo_module("relational_attention", {"node_dim": 4, "edge_dim": 3, "mask": ["@neq(I, J)", 3]})
    with pytest.raises(LrnnError, match="parameter 'edge_dim' \\(.*\\) is required"):
        _core.zoo_module("relational_attention", {"node_dim": 4})
    with pytest.raises(LrnnError, match="parameter 'edge_dim': expected a bool, an int, a str or a list of str, got None"):
        nn.RelationalAttention(4, None)


def test_a_class_file_is_all_the_python_side_needs(tmp_path):
    # A copy of the installed package with one more file in lrnn/nn/zoo/: its class, on an
    # already registered generator, is exported by lrnn.nn.zoo and lrnn.nn and runs.
    package = Path(lrnn.__file__).resolve().parent
    shutil.copytree(package, tmp_path / "lrnn", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "lrnn" / "nn" / "zoo" / "tiny_attention.py").write_text(textwrap.dedent('''
        """A module in one file: the class of a registered generator."""
        from lrnn.nn.zoo._base import ZooModule, _as_2d


        class TinyAttention(ZooModule):
            """One head over 2-vectors."""

            zoo_name = "multihead_attention"

            def __init__(self, prefix: str = "tiny", seed: int = 1):
                super().__init__(seed)
                self.embed_dim, self.prefix = 2, prefix
                self._model_for(self._default_mask)

            def __call__(self, x):
                x = _as_2d(x, "x")
                return self._run([("input", x)], x.shape[0], None)


        __all__ = ["TinyAttention"]
        '''))
    script = textwrap.dedent("""
        import numpy as np
        import lrnn.nn as nn
        assert nn.__file__.startswith(%r), nn.__file__
        m = nn.TinyAttention()
        assert "tiny_q0(I) :- $tiny_wq0={2,2} input(I), $tiny_bq0={2}." in m.rules()
        print(m(np.ones((3, 2))).shape)
        """ % str(tmp_path))
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(3, 2)"
