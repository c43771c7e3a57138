#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/eval_folds.py on three synthetic finecast-eval reports whose answers are known: the mean
# and sd over the folds, the RMSE ratio to the best regression row of each report, the CRPS ratio
# to the stronger noise reference, the inflation fitted over the folds and, with --leave-one-out,
# each fold's inflation fitted on the others; a one-member model is refused, naming the file.
set -euo pipefail

SRC="${FINECAST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PY=/usr/bin/python3
[[ -x $PY ]] || { echo "skipped: no $PY"; exit 77; }
work="$(mktemp -d "${TMPDIR:-/tmp}/finecast-folds-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT

"$PY" - "$work" <<'PY'
import json, os, sys
w = sys.argv[1]
# fold k: model RMSE r, spread s; regression_cons 1.0, regression_local 0.8 (the best regression);
# noise references with CRPS 0.5 and 0.4 (the stronger)
for k, (r, s) in enumerate([(0.8, 0.4), (1.0, 0.8), (1.2, 0.6)], 1):
    os.makedirs(f"{w}/fold{k}")
    rows = [dict(name="model", members=16, rmse=r, crps=0.2 * k, crps_fair=0.1 * k, spread=s),
            dict(name="bicubic_cons", members=1, rmse=2.0, crps=1.0, crps_fair=1.0, spread=None),
            dict(name="regression_cons", members=1, rmse=1.0, crps=0.9, crps_fair=0.9, spread=None),
            dict(name="regression_local", members=1, rmse=0.8, crps=0.9, crps_fair=0.9, spread=None),
            dict(name="noise_white", members=16, rmse=1.0, crps=0.5, crps_fair=0.5, spread=1.0),
            dict(name="noise_spectral", members=16, rmse=1.0, crps=0.4, crps_fair=0.4, spread=1.0)]
    json.dump({"predictions": rows}, open(f"{w}/fold{k}/eval.json", "w"))
rows[0]["members"] = 1
os.makedirs(f"{w}/one")
json.dump({"predictions": rows}, open(f"{w}/one/eval.json", "w"))
PY

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
out="$("$PY" "$SRC/scripts/eval_folds.py" --leave-one-out "$work"/fold{1,2,3}/eval.json)"
echo "$out"
has() { grep -F -- "$1" >/dev/null <<<"$out" || fail "the summary lacks '$1'"; }
# spread/RMSE per fold: 0.5, 0.8, 0.5 -> mean 0.6, inflation 1 / 0.6 = 1.667
has "1.0000 ± 0.2000"                    # RMSE over the folds
has "0.6000 ± 0.1732"                    # spread/RMSE
has "1.2500 ± 0.2500"                    # RMSE / regression_local (the best regression row)
has "1.0000 ± 0.5000"                    # CRPS / noise_spectral's 0.4
has "= 1.667"
# fold 1's inflation from folds 2 and 3: 2 / (0.8 + 0.5) = 1.538, times its 0.5 = 0.769
has "fold1: inflation 1.538 (fitted on the other folds' 2 report(s)), spread/RMSE with it 0.769"
has "fold2: inflation 2.000 (fitted on the other folds' 2 report(s)), spread/RMSE with it 1.600"
# Two seeds of one fold (the same --hold-out and --region) are left out together: fold 1's second
# seed (spread/RMSE 0.7) does not enter fold 1's inflation, and fold 2's comes from fold 1's two.
"$PY" - "$work" <<'PY'
import json, os, sys
w = sys.argv[1]
for k, seed, (r, s) in [(1, "a", (0.8, 0.4)), (1, "b", (1.0, 0.7)), (2, "a", (1.0, 0.8))]:
    os.makedirs(f"{w}/f{k}{seed}")
    rep = json.load(open(f"{w}/fold{k}/eval.json"))
    rep["predictions"][0].update(rmse=r, spread=s)
    rep["meta"] = {"hold_out": f"0,10,{k},{k + 1};0,10,50,60", "region": f"0,10,{k},{k + 1}"}
    json.dump(rep, open(f"{w}/f{k}{seed}/eval.json", "w"))
PY
out="$("$PY" "$SRC/scripts/eval_folds.py" --leave-one-out "$work"/f1a/eval.json "$work"/f1b/eval.json "$work"/f2a/eval.json)"
echo "$out"
# f1a: inflation from f2a only, 1 / 0.8 = 1.25, times 0.5 = 0.625; f2a: 2 / (0.5 + 0.7) = 1.667, x 0.8
has "f1a: inflation 1.250 (fitted on the other folds' 1 report(s)), spread/RMSE with it 0.625"
has "f1b: inflation 1.250 (fitted on the other folds' 1 report(s)), spread/RMSE with it 0.875"
has "f2a: inflation 1.667 (fitted on the other folds' 2 report(s)), spread/RMSE with it 1.333"
msg="$("$PY" "$SRC/scripts/eval_folds.py" --leave-one-out "$work"/f1a/eval.json "$work"/f1b/eval.json 2>&1)" &&
  fail "--leave-one-out accepted two seeds of one fold"
grep -F "at least 2 folds, got 2 report(s) of 1" >/dev/null <<<"$msg" || fail "the refusal is unclear: $msg"
msg="$("$PY" "$SRC/scripts/eval_folds.py" "$work/one/eval.json" 2>&1)" && fail "a one-member model was accepted"
grep -F "one/eval.json: the model has 1 member(s)" >/dev/null <<<"$msg" || fail "the refusal does not name the file: $msg"
exit $((failures > 0))
