"""Data-parallel training over MPI (docs/distributed.md).

Run a training script with ``mpirun -np N python3 script.py``: every rank runs the script,
and ``lrnn.Model`` (the same C++ path as ``lrnn train``) grounds only its block of each
dataset, computes the gradient of its part of every global minibatch, and sums the
gradients over the ranks exactly before each optimizer step, so the trained weights are the
same bits with 1, 2 or N ranks. Evaluations are gathered to rank 0 (the other ranks get
the metrics, not the outputs); ``model.save`` writes on rank 0 only.

    import lrnn.distributed as dist
    model.train(dataset, epochs=10, progress=dist.is_root())
    if dist.is_root():
        print(model.test(dataset).accuracy)

Importing this module in a job of several ranks also makes an uncaught Python exception on
any rank end the whole job (with the rank and the error), instead of leaving the other
ranks waiting in a collective. No mpi4py is needed.
"""
from __future__ import annotations

import sys
import traceback

from lrnn._core import distributed as _dist


def built_with_mpi() -> bool:
    """Whether this lrnn was built with MPI (the CMake option LRNN_MPI)."""
    return _dist.built_with_mpi()


def active() -> bool:
    """Whether this process is a rank of an MPI job (started by mpirun, or init() called)."""
    return _dist.active()


def rank() -> int:
    """This process's rank in the job (0 outside a job)."""
    return _dist.rank()


def size() -> int:
    """The number of ranks in the job (1 outside a job)."""
    return _dist.size()


def is_root() -> bool:
    """True on rank 0, the rank that prints and writes."""
    return _dist.rank() == 0


def init() -> int:
    """Starts MPI without a launcher (a job of one rank, trained through the exact
    distributed path); returns the number of ranks. Raises if lrnn was built without MPI."""
    return _dist.init()


def barrier() -> None:
    """Waits until every rank has reached this call."""
    _dist.barrier()


def abort(cause: str) -> None:
    """Ends every rank of the job, printing ``lrnn: rank R of N failed: CAUSE``."""
    _dist.abort(str(cause))


def _abort_on_uncaught(kind, value, tb) -> None:
    traceback.print_exception(kind, value, tb)
    _dist.abort(f"{kind.__name__}: {value}")


if _dist.size() > 1:
    sys.excepthook = _abort_on_uncaught

__all__ = ["built_with_mpi", "active", "rank", "size", "is_root", "init", "barrier", "abort"]
