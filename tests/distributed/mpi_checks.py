"""What the MPI checks of this folder share: a pass/fail line per check, and `mpirun` of the
lrnn command with the environment a root user in a container needs."""
import os
import subprocess

FAILURES = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message, flush=True)
    if not condition:
        FAILURES.append(message)


def mpi_environment(extra_env=None):
    """Root may run mpirun here (a container), one thread per rank, more ranks than cores."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    env.update(extra_env or {})
    return env


def mpirun(lrnn, ranks, args, extra_env=None, timeout=180):
    cmd = ["mpirun", "--oversubscribe", "-np", str(ranks), str(lrnn)] + [str(a) for a in args]
    return subprocess.run(cmd, env=mpi_environment(extra_env), capture_output=True, text=True, timeout=timeout)
