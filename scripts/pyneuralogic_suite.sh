#!/usr/bin/env bash
# Runs PyNeuraLogic 0.9.2's own test suite on lrnn, ported the way a user would port code:
# by renaming the imports (neuralogic -> lrnn) and nothing else. The suite is downloaded
# from PyPI (the sdist) into a scratch directory; it is never copied into this project.
# Prints pytest's summary: how many of PyNeuraLogic's tests pass on lrnn.
# Usage: scripts/pyneuralogic_suite.sh [WORKDIR] [pytest args...]
#   PYTHON=python3 (environment): the interpreter with lrnn installed.
#   PYNEURALOGIC_CHECKOUT (environment, optional): a clone of github.com/LukasZahradnik/PyNeuraLogic;
#   test_java_evaluation.py imports its examples/datasets (not in the sdist), which are then
#   ported the same way next to the tests, as they sit in PyNeuraLogic's repository.
set -euo pipefail
WORK=${1:-${TMPDIR:-/tmp}/pyneuralogic-suite}
shift || true
PYTHON=${PYTHON:-python3}
mkdir -p "$WORK"
if [ ! -d "$WORK/neuralogic-0.9.2/tests" ]; then
  "$PYTHON" -m pip download -q --no-deps --no-binary :all: neuralogic==0.9.2 -d "$WORK"
  tar -xzf "$WORK/neuralogic-0.9.2.tar.gz" -C "$WORK"
fi
rm -rf "$WORK/ported"
cp -r "$WORK/neuralogic-0.9.2/tests" "$WORK/ported"
sed -i 's/\bneuralogic\b/lrnn/g' "$WORK"/ported/*.py
if [ -n "${PYNEURALOGIC_CHECKOUT:-}" ]; then
  mkdir -p "$WORK/ported/examples"
  cp -r "$PYNEURALOGIC_CHECKOUT/examples/datasets" "$WORK/ported/examples/"
  find "$WORK/ported/examples" -name '*.py' -exec sed -i 's/\bneuralogic\b/lrnn/g' {} +
fi
cd "$WORK/ported"
"$PYTHON" -m pytest -q -p no:cacheprovider --continue-on-collection-errors "$@" 2>&1 | tail -n 40
