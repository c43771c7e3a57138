#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/evaluate.sh refuses bad arguments before any data work, naming what was expected:
# --hold-out (a region of one's own in place of a spatial case's test split) with a malformed box,
# a mask file that cannot be read, on a case split in time, or with --fold or --split val; --fold
# on a case or split without folds; output or build folders the YAML configs cannot hold; --help
# documents --hold-out and --threads.
set -euo pipefail

SRC="${FINECAST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
EV="$SRC/scripts/evaluate.sh"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
refused() {  # refused EXPECTED_TEXT ARGS...: exit status 2 and the text on stderr
  local want=$1 msg rc=0
  shift
  msg="$(bash "$EV" "$@" 2>&1 >/dev/null)" || rc=$?
  [[ $rc == 2 ]] || fail "evaluate.sh $* exited $rc, expected 2"
  grep -qF -- "$want" <<<"$msg" || fail "evaluate.sh $*: no '$want' in: $msg"
}
refused "--hold-out takes lat0,lat1,lon0,lon1 in degrees" icon --hold-out 0,90,0
refused "got '0,90,0,x'" icon --hold-out 0,90,0,x
refused "--hold-out takes lat0,lat1,lon0,lon1" icon --hold-out '0,90,0,90;1,2'
refused "--hold-out is for the spatial cases (eur11, icon, afr22, hsurf), not tas_months" tas_months --hold-out 0,90,0,90
refused "--hold-out /nonexistent/mask.nc:m: the mask file /nonexistent/mask.nc cannot be read" hsurf --hold-out /nonexistent/mask.nc:m
refused "or FILE:VAR, got 'mask.nc:'" eur11 --hold-out mask.nc:
refused "no --split val, no --fold" icon --fold 1/4 --hold-out 0,90,0,90
refused "the folder 'out/eval/t=-30,30' (--out or --build) goes into the YAML configs" icon --out out/eval/t=-30,30
refused "the folder 'my build' (--out or --build) goes into the YAML configs" eur11 --build 'my build'
refused "no --split val, no --fold" icon --split val --hold-out 0,90,0,90
refused "no --split val, no --fold" eur11 --fold 2/4 --hold-out 0,90,0,90
refused "no --split val, no --fold" afr22 --split val --fold 1/3 --hold-out 0,90,0,90
# the orography cases' folds split their training half only: the test split stays one strip
refused "afr22: --fold is for --split val" afr22 --fold 1/3
refused "hsurf --split val needs --fold I/K" hsurf --split val
refused "--fold is for the eur11, icon, afr22 and hsurf cases" etopo5 --fold 1/3
help="$(bash "$EV" --help)"
grep -q -- "--hold-out BOX" <<<"$help" || fail "--help does not document --hold-out"
grep -q "train.threads=N" <<<"$help" || fail "--help does not say that --threads sets the training's threads"
exit $((failures > 0))
