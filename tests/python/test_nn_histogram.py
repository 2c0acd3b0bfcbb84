"""The sequence-task example (examples/transformers/histogram.lrnn), shortened: the encoder
template learns the histogram task through `lrnn train` (25 epochs instead of 60)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(os.environ.get("LRNN_CLI", ROOT / "build" / "lrnn"))
EXAMPLE = ROOT / "examples" / "transformers"


@pytest.mark.skipif(not CLI.exists(), reason=f"the lrnn CLI is not built at {CLI} (make build)")
def test_histogram_encoder_learns_the_task(tmp_path):
    subprocess.run([sys.executable, str(EXAMPLE / "histogram_data.py"), "--out", str(tmp_path)], check=True)
    run = subprocess.run(
        [str(CLI), "train", str(EXAMPLE / "histogram.lrnn"),
         "--examples", str(tmp_path / "train_examples.txt"), "--queries", str(tmp_path / "train_queries.txt"),
         "--test-examples", str(tmp_path / "test_examples.txt"), "--test-queries", str(tmp_path / "test_queries.txt"),
         "--loss", "crossentropy", "--lr", "0.01", "--epochs", "25", "--batch-size", "32", "--schedule", "cosine",
         "--json"],
        capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["epochs"] == 25
    # chance is about 0.3 (the most frequent count); the full 60-epoch run reaches 0.98
    assert report["test"]["accuracy"] >= 0.9, report["test"]
    assert report["accuracy"] >= 0.9
