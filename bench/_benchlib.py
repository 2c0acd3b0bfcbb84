"""Shared helpers of the Python benchmark runners (bench/[!_]*.py): running a command while
measuring its peak memory, reading its JSON, and describing the run."""
from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import tempfile
import time
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATASETS = os.path.join(os.path.dirname(REPO), "shared", "datasets")
if not os.path.isdir(DATASETS):
    DATASETS = "/work/shared/datasets"
RESULTS = os.path.join(REPO, "bench", "results")


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    peak_rss_mb: float  # of the child and the descendants it waited for


def run_with_rss(cmd: list[str], timeout_s: float | None = None, cwd: str | None = None,
                 max_rss_mb: float | None = None) -> Run:
    """Run cmd to completion and return its output, wall time and peak RSS.

    The child is reaped with os.wait4, whose rusage belongs to that child alone (Linux's
    ru_maxrss: the peak RSS, in KiB, of the child or of its largest waited-for descendant).
    That is why each command gets its own number here; getrusage(RUSAGE_CHILDREN) would give
    the maximum over every child this process has ever waited for. Output goes through
    temporary files so no pipe can fill up while we wait. With max_rss_mb the child is
    killed once its resident memory passes that (read from /proc every 0.05 s): a peer that
    grows without bound (DeepProbLog on 2-digit sums: 22 GB) would otherwise end in the
    kernel's out-of-memory killer, which may pick another process of the machine."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, cwd=cwd)
        deadline = None if timeout_s is None else start + timeout_s
        killed = None  # why it was killed
        while True:
            watching = killed is None and (deadline is not None or max_rss_mb is not None)
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG if watching else 0)
            if pid == proc.pid:
                break
            if deadline is not None and time.perf_counter() > deadline:
                killed = f"killed after {timeout_s} s"
            elif max_rss_mb is not None and _rss_mb(proc.pid) > max_rss_mb:
                killed = f"killed at {max_rss_mb:.0f} MB resident"
            if killed is not None:
                proc.kill()  # then wait for it to die
            else:
                time.sleep(0.05)
        wall_s = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # tell Popen the child is reaped
        out.seek(0)
        err.seek(0)
        stderr = err.read() + (f"\n({killed})" if killed else "")
        return Run(proc.returncode, out.read(), stderr, wall_s, rusage.ru_maxrss / 1024.0)


def _rss_mb(pid: int) -> float:
    """The resident memory of process pid now (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def last_json_object(text: str) -> dict | None:
    """The JSON object a tool printed: the whole output, or else its last line that parses."""
    text = text.strip()
    if not text:
        return None
    try:
        value = json.loads(text)
        return value if isinstance(value, dict) else None
    except json.JSONDecodeError:
        pass
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def git_commit() -> str | None:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def machine() -> dict:
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_at_start": load,
    }


def native_build(build: str | None = None) -> bool | None:
    """Whether the lrnn measured was compiled with -march=native (CMake's LRNN_NATIVE, which
    `make build` turns on): its numbers hold for this CPU only. None if not configured."""
    build = build or os.environ.get("LRNN_BENCH_BUILD") or os.path.join(REPO, "build")
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as cache:
            for line in cache:
                if line.startswith("LRNN_NATIVE:"):
                    return line.strip().endswith("=ON")
    except OSError:
        return None
    return None


def header() -> dict:
    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": machine(),
        "native": native_build(),
    }


def load_warning() -> str | None:
    """A warning when other processes already keep every core busy: then multi-threaded
    timings measure the scheduler as much as the code (a 2-thread parallel region waits
    for whichever of its threads was preempted)."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return None
    cpus = os.cpu_count() or 1
    if load > cpus:
        return (f"warning: load average {load:.1f} on {cpus} cores before the run: timings are "
                f"dominated by other processes; compare ratios of this run only")
    return None


def ratio(numerator, denominator):
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def fmt(value, unit="", digits=3):
    if value is None:
        return "n/a"
    return f"{value:.{digits}g}{unit}"


def write_result(name: str, result: dict, path: str | None = None) -> str:
    path = path or os.path.join(RESULTS, f"{name}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as fp:
        json.dump(result, fp, indent=2)
        fp.write("\n")
    os.replace(tmp, path)
    return path


def run_json(cmd: list[str], env: dict, timeout_s: float) -> tuple[dict | None, str, float]:
    """Runs `cmd` with `env` added to the environment (thread counts): its last JSON object
    on stdout, an error text ("" when it ran), and its peak RSS in MB."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        run = run_with_rss(cmd, timeout_s=timeout_s)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    report = last_json_object(run.stdout)
    if run.returncode != 0 or report is None:
        tail = (run.stderr or run.stdout).strip().splitlines()[-3:]
        return None, f"exit {run.returncode}: " + " | ".join(tail), run.peak_rss_mb
    return report, "", run.peak_rss_mb


def run_lrnn_train(cmd: list[str], env: dict, timeout_s: float) -> dict:
    """`lrnn train ... --json` run as run_json runs it: {"available", "epoch_s" (each epoch),
    "epoch_min_s", "build_s", "loss", "peak_rss_mb"}, or {"available": False, "reason"}."""
    report, error, rss = run_json(cmd, env, timeout_s)
    if report is None:
        return {"available": False, "reason": "lrnn train failed " + error}
    timing = report["timing"]
    epochs = timing.get("epochs_s") or [timing["epoch_s"]]
    return {"available": True, "epoch_s": epochs, "epoch_min_s": min(epochs), "build_s": timing["build_s"],
            "loss": report.get("loss"), "peak_rss_mb": rss}
