#!/usr/bin/env bash
# make bench: runs every benchmark that exists, each printing its own lines and writing
# bench/results/<name>.json. Python runners are bench/*.py (files starting with _ are
# helpers); compiled benchmarks are the bench_* executables built from bench/*.cpp, except
# those a runner drives itself (bench_<x> when bench/<x>.py exists).
# Never run by `make test`: these are timed, and the machine is shared.
#   scripts/bench.sh [BUILD_DIR] [NAME ...]   (NAME: mutagenesis, attention, a bench_* name)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
shift || true
PYTHON=${PYTHON:-python3}

# Peers are installed on demand: PyNeuraLogic (Java 17 runs its engine in-process) and
# PyTorch 2.13 (pinned: the attention parity and benchmark target this version).
"$PYTHON" -c "import neuralogic" 2>/dev/null || "$PYTHON" -m pip install -q neuralogic \
  || echo "bench: could not install neuralogic; the mutagenesis peer will report it"
"$PYTHON" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" 2>/dev/null \
  || "$PYTHON" -m pip install -q torch==2.13.0 \
  || echo "bench: could not install torch==2.13.0; the attention peer will report it"

# Say which build is measured: -march=native (make build's LRNN_NATIVE=ON) or portable.
export LRNN_BENCH_BUILD="$BUILD"
if grep -q '^LRNN_NATIVE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  echo "bench: $BUILD is a -march=native build (LRNN_NATIVE=ON): numbers for this CPU"
else
  echo "bench: $BUILD is a portable build (LRNN_NATIVE=OFF)"
fi

wanted() { [[ " ${SELECTED} " == *" $1 "* ]]; }
SELECTED="$*"
status=0
for runner in bench/[!_]*.py; do
  name=$(basename "$runner" .py)
  [ -z "$SELECTED" ] || wanted "$name" || continue
  echo "== bench/$name"
  "$PYTHON" "$runner" --build "$BUILD" || status=1
done
for exe in "$BUILD"/bench/bench_*; do
  [ -x "$exe" ] || continue
  name=$(basename "$exe")
  # bench_<x> driven by a runner bench/<x>.py (e.g. bench_attention) already ran above
  [ -f "bench/${name#bench_}.py" ] && continue
  [ -z "$SELECTED" ] || wanted "$name" || wanted "${name#bench_}" || continue
  echo "== $name"
  "$exe" || status=1
done
exit $status
