#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/add_regression_rows.py on synthetic finecast-eval reports whose answers are known: the
# regression rows of a report on another interpolant join the first as <row>_<interpolant> after
# its own regression rows, its noise references after the first's; eval_summary.py's
# best_regression and stronger noise reference then pick the added rows where they are the lower; run again, the rows are replaced, not doubled; a
# report of another scoring (another hold-out) or of the same interpolant is refused, naming the
# key, and the report is left as it was.
set -euo pipefail

SRC="${FINECAST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PY=/usr/bin/python3
[[ -x $PY ]] || { echo "skipped: no $PY"; exit 77; }
work="$(mktemp -d "${TMPDIR:-/tmp}/finecast-addreg-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT

"$PY" - "$work" <<'PY'
import json, sys
w = sys.argv[1]
def row(name, rmse, members=1, spread=None):
    return dict(name=name, members=members, rmse=rmse, crps=rmse / 2, crps_fair=rmse / 2, spread=spread,
                std_ratio=1.0, upper_energy_ratio=1.0)
meta = dict(truth="t.nc", pred="p.nc", var="tas", truth_var="tas", block="16", hold_out="-90,90,0,10",
            region="all", regression_fit_on="the blocks not held out", regression_interpolant="bicubic")
main = dict(meta=meta, predictions=[row("model", 0.50, 16, 0.4), row("bicubic_cons", 1.0), row("bspline_cons", 0.9),
                                    row("regression_cons", 0.60), row("regression_local", 0.55),
                                    row("noise_white", 0.7, 16, 0.7), row("noise_spectral", 0.7, 16, 0.7)])
json.dump(main, open(f"{w}/eval.json", "w"))
other = dict(meta=dict(meta, regression_interpolant="bspline", noise_base="regression_local"),
             predictions=[row("model", 0.50, 16, 0.4), row("regression_cons", 0.58), row("regression_local", 0.52),
                          row("noise_white", 0.66, 16, 0.66), row("noise_spectral", 0.64, 16, 0.64)])
json.dump(other, open(f"{w}/other.json", "w"))
json.dump(dict(other, meta=dict(other["meta"], hold_out="-90,90,10,20")), open(f"{w}/elsewhere.json", "w"))
json.dump(dict(other, meta=dict(meta)), open(f"{w}/same.json", "w"))
PY

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
names() { "$PY" -c "import json, sys; print(' '.join(r['name'] for r in json.load(open(sys.argv[1]))['predictions']))" "$1"; }
expected="model bicubic_cons bspline_cons regression_cons regression_local regression_cons_bspline regression_local_bspline noise_white noise_spectral noise_white_bspline noise_spectral_bspline"

"$PY" "$SRC/scripts/add_regression_rows.py" --json "$work/eval.json" --from "$work/other.json" || fail "the rows were not added"
[[ "$(names "$work/eval.json")" == "$expected" ]] || fail "rows after adding: $(names "$work/eval.json")"
summary="$("$PY" "$SRC/scripts/eval_summary.py" --json "$work/eval.json" --factor 0.97 --against best_regression)"
grep -F -- "--against best_regression: regression_local_bspline" >/dev/null <<<"$summary" ||
  fail "best_regression is not the added, lower row: $summary"
grep -F -- "the stronger noise reference's (noise_spectral_bspline 0.32" >/dev/null <<<"$summary" ||
  fail "the stronger noise reference is not the added, lower one: $summary"
grep -F -- "noise_spectral_bspline (regression_local_bspline + noise)" >/dev/null <<<"$summary" ||
  fail "the added noise row does not name its base: $summary"
"$PY" "$SRC/scripts/add_regression_rows.py" --json "$work/eval.json" --from "$work/other.json" > /dev/null ||
  fail "running it again failed"
[[ "$(names "$work/eval.json")" == "$expected" ]] || fail "rows after a second run: $(names "$work/eval.json")"

cp "$work/eval.json" "$work/before.json"
msg="$("$PY" "$SRC/scripts/add_regression_rows.py" --json "$work/eval.json" --from "$work/elsewhere.json" 2>&1)" &&
  fail "a report of another hold-out was accepted"
grep -F "elsewhere.json: scores another thing than" <<<"$msg" | grep -F "meta 'hold_out'" >/dev/null ||
  fail "the refusal does not name the file and key: $msg"
msg="$("$PY" "$SRC/scripts/add_regression_rows.py" --json "$work/eval.json" --from "$work/same.json" 2>&1)" &&
  fail "a report on the same interpolant was accepted"
grep -F "same.json: its regressions are on bicubic" >/dev/null <<<"$msg" || fail "the refusal does not say why: $msg"
cmp -s "$work/eval.json" "$work/before.json" || fail "a refused run changed the report"
ls "$work" | grep -q '\.tmp' && fail "a temporary file was left behind"
exit $((failures > 0))
