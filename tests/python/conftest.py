"""Fixtures shared by the Python tests."""
import os
import subprocess
import sys

import pytest


@pytest.fixture
def mpirun_python():
    """`mpirun_python(ranks, script, *args)`: runs a Python script on `ranks` MPI ranks (root may
    run mpirun here, one thread per rank, more ranks than cores) and returns the finished
    process, its output captured."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")

    def run(ranks, script, *args, timeout=180):
        cmd = ["mpirun", "--oversubscribe", "-np", str(ranks), sys.executable, str(script), *map(str, args)]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)

    return run
