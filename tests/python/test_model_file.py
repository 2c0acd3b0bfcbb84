"""Model files carry a checksum of their content (docs/semantics.md "Models on disk", issue
32): the documented formula computes it, an edited file is refused naming the file, and
deleting the checksum accepts a deliberate edit."""

import json

import pytest

from lrnn import R, Settings, Template
from lrnn.errors import LrnnError
from lrnn.model import Model


def saved(tmp_path):
    template = Template()
    template += R.q[1, 2] <= R.h
    template += R.h[2, 3] <= R.x
    model = template.build(Settings(seed=3))
    path = tmp_path / "model.json"
    model.save(str(path))
    return path


def fnv1a64(data: bytes) -> int:
    h = 14695981039346656037
    for byte in data:
        h = ((h ^ byte) * 1099511628211) % 2**64
    return h


def test_the_checksum_is_the_documented_hash_of_the_content(tmp_path):
    content = json.loads(saved(tmp_path).read_text())
    checksum = content.pop("checksum")
    text = json.dumps(content, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    assert checksum == f"fnv1a64:{fnv1a64(text.encode()):016x}"


def test_an_edited_model_file_is_refused_until_its_checksum_is_deleted(tmp_path):
    path = saved(tmp_path)
    content = json.loads(path.read_text())
    content["parameters"][0]["values"][0] += 0.5
    path.write_text(json.dumps(content, indent=1))
    with pytest.raises(LrnnError, match="model.json: the model file was changed after it was saved"):
        Model.load(str(path))
    del content["checksum"]
    path.write_text(json.dumps(content, indent=1))
    loaded = Model.load(str(path))
    name = content["parameters"][0]["name"]
    assert loaded.parameters()[name].flat[0] == content["parameters"][0]["values"][0]
