#!/usr/bin/env bash
# make demo: generate a labelled molecule data set, train a message-passing template on
# it, and show what the model learned on molecules it never saw.
set -euo pipefail
BUILD=${1:-build}
LRNN="$BUILD/lrnn"
DATA="$BUILD/demo"
PYTHON=${PYTHON:-python3}

echo "== 1. data: random molecules, active iff an oxygen is within two bonds of a nitrogen"
"$PYTHON" examples/demo/generate_molecules.py "$DATA"

echo
echo "== 2. the template (it does not know the rule):"
grep -v '^%' examples/demo/template.lrnn | sed '/^$/d; s/^/   /'

echo
echo "== 3. train (Adam, cross-entropy, 80 epochs, minibatches of 10)"
"$LRNN" train examples/demo/template.lrnn \
  --examples "$DATA/train_examples.txt" --queries "$DATA/train_queries.txt" \
  --test-examples "$DATA/test_examples.txt" --test-queries "$DATA/test_queries.txt" \
  --loss crossentropy --epochs 80 --lr 0.01 --batch-size 10 --seed 1 --report-every 20 \
  --save "$DATA/model.json" --report "$DATA/report.html"

echo
echo "== 4. what it learned: predictions on the first 8 held-out molecules"
"$LRNN" eval "$DATA/model.json" --examples "$DATA/test_examples.txt" \
  --queries "$DATA/test_queries.txt" --json > "$DATA/eval.json"
"$PYTHON" - "$DATA/eval.json" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
for row in result["outputs"][:8]:
    p = row.get("prediction", row["output"])
    print(f"   molecule {row['example']:3d}: P(active) = {p:.3f}   truth {row['target']:.0f}")
print(f"   test accuracy {result['accuracy']:.3f} on {len(result['outputs'])} molecules")
PY

echo
echo "== 5. the same engine answers logic queries: which test molecule-0 atoms are nitrogens near an oxygen?"
printf 'near_o(A) :- n(A), bond(A, B), o(B).\nnear_o(A) :- n(A), bond(A, B), bond(B, C), o(C).\n' > "$DATA/rule.lrnn"
head -1 "$DATA/test_examples.txt" > "$DATA/first_test.txt"
"$LRNN" query "$DATA/rule.lrnn" --facts "$DATA/first_test.txt" 'near_o(A)' | sed 's/^/   /'

echo
echo "== 6. pictures: the training report and the template"
# SVG needs Graphviz's dot (make demo installs it); without it the drawing is DOT text.
PICTURE="$DATA/template.svg"
command -v dot >/dev/null || PICTURE="$DATA/template.dot"
"$LRNN" draw examples/demo/template.lrnn -o "$PICTURE"
echo "   training report (loss and accuracy per epoch, outputs): $DATA/report.html"
echo "   template drawing: $PICTURE"
