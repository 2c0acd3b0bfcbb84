#!/usr/bin/env bash
# make demo: runs the main job on data embedded here.
set -euo pipefail
BUILD=${1:-build}
echo "lrnn demo: (filled in as stages land)"
"$BUILD/lrnn" --help
