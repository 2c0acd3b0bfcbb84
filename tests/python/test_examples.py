"""Every script in examples/python runs to completion."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"


@pytest.mark.parametrize("script", sorted(p.name for p in EXAMPLES.glob("*.py")))
def test_example_runs(script):
    env = dict(os.environ, TQDM_DISABLE="1")
    result = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip(), f"{script} printed nothing"
