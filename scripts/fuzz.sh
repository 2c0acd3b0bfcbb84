#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz for SECONDS each, seeded with the project's own
# inputs (templates, examples, error cases, .rasp programs). Exit 1 on the first crash,
# hang, leak or sanitizer report; the reproducer is left in BUILD/fuzz-findings/.
# Usage: scripts/fuzz.sh BUILD SECONDS [TARGET...]
#   FUZZ_RUNS=N (environment): instead of SECONDS, exactly N inputs per target from a fixed
#   seed, so the run is the same on every machine (what `make test` does).
set -euo pipefail
BUILD=${1:?build dir}
SECONDS_EACH=${2:-30}
shift 2 || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_template fuzz_examples fuzz_train fuzz_rasp fuzz_model_json fuzz_tu)
corpus="$BUILD/fuzz-corpus"
findings="$BUILD/fuzz-findings"
# A fixed number of runs starts from the seeds alone (libFuzzer adds what it finds to the
# corpus folder), so the same inputs are tried on every machine.
[ -n "${FUZZ_RUNS:-}" ] && rm -rf "$corpus"
mkdir -p "$findings"

seed() {  # seed TARGET FILE...: copy files into the target's corpus (ignores missing ones)
  local dir="$corpus/$1"; shift
  mkdir -p "$dir"
  for f in "$@"; do [ -f "$f" ] && cp "$f" "$dir/seed-$(echo "$f" | tr '/' '_')"; done
  return 0
}
shared=../shared/datasets/neuralogic/simple
seed fuzz_template examples/templates/*.lrnn examples/demo/template.lrnn examples/transformers/*.lrnn \
  tests/programs/*/template.lrnn tests/errors/*.lrnn
seed fuzz_examples $shared/xor/naive/trainExamples.txt $shared/family/examples.txt $shared/family/queries.txt \
  $shared/trains/queries.txt tests/programs/*/examples.txt tests/programs/*/queries.txt tests/errors/*.txt
seed fuzz_rasp tests/rasp/*.rasp examples/rasp/*.rasp tests/rasp/errors/*
# Saved models without their "checksum" line (such a file loads unchecked, docs/semantics.md),
# so that mutations reach the parser instead of stopping at the checksum.
seed fuzz_model_json tests/fuzz/seeds/model_*.json
seed fuzz_tu tests/fuzz/seeds/tu_*.txt
# Inputs that once failed (fuzz_train's own format: template, "%%", examples) stay as seeds.
seed fuzz_train tests/fuzz/seeds/train_*.txt
for t in xor.lrnn xor_vectorized.lrnn family.lrnn; do
  ex=$shared/xor/naive/trainExamples.txt
  [ "$t" = xor_vectorized.lrnn ] && ex=$shared/xor/vectorized/trainExamples.txt
  [ "$t" = family.lrnn ] && continue
  { cat "examples/templates/$t"; printf '\n%%%%\n'; cat "$ex"; } > "$corpus/fuzz_train/seed-$t"
done

status=0
for target in "${targets[@]}"; do
  if [ -n "${FUZZ_RUNS:-}" ]; then echo "== $target: $FUZZ_RUNS inputs from seed 1"; else echo "== $target: ${SECONDS_EACH}s"; fi
  # -rss_limit_mb: an input may not take more memory than a limit error allows;
  # -timeout: any single input over 10 s is a hang.
  budget=(-max_total_time="$SECONDS_EACH")
  [ -n "${FUZZ_RUNS:-}" ] && budget=(-runs="$FUZZ_RUNS" -seed=1)
  if ! ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
      "$BUILD/tests/fuzz/$target" "$corpus/$target" "${budget[@]}" -timeout=10 \
      -rss_limit_mb=4096 -max_len=4096 -artifact_prefix="$findings/$target-" -print_final_stats=1 \
      > "$findings/$target.log" 2>&1; then
    echo "   FAILED: see $findings/$target.log"; grep -E "ERROR|SUMMARY|==[0-9]+==" "$findings/$target.log" | head -5
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$findings/$target.log" | tail -1 | sed 's/^/   /'
  fi
done
exit $status
