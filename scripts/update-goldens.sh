#!/usr/bin/env bash
# Regenerates (or, with --check, compares) the golden files of the tests, one function per area.
#   scripts/update-goldens.sh [--check] [--kdlc PATH] [AREA...]      AREA: diagnostics, list, emit
#   (default: every area)      KDL_SHARED_DIR: the shared folder with spec/examples (default ../shared)
# Review the diff (git diff tests/golden) before committing regenerated goldens.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODE=update
KDLC="${KDLC:-}"
AREAS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --check) MODE=check ;;
    --kdlc) KDLC="$2"; shift ;;
    --kdlc=*) KDLC="${1#--kdlc=}" ;;
    -h|--help) sed -n '2,4p' "$0"; exit 0 ;;
    *) AREAS+=("$1") ;;
  esac
  shift
done
if [ -z "$KDLC" ]; then
  for c in "$ROOT"/build/kdlc "$ROOT"/build-*/kdlc; do [ -x "$c" ] && KDLC="$c" && break; done
fi
[ -x "$KDLC" ] || { echo "update-goldens: no kdlc found; pass --kdlc PATH" >&2; exit 2; }
[ ${#AREAS[@]} -gt 0 ] || AREAS=(diagnostics list emit)
KDL_SHARED_DIR="${KDL_SHARED_DIR:-$ROOT/../shared}"
FAILED=0

# ---- emit: the files `kdlc emit` writes for every sample spec (samples/kernels/*.kdl, with --torch: the
# PyTorch extension too), every sm90a test spec (tests/golden/sm90a/*.kdl, into sm90a_<name>), every
# torch test spec (tests/golden/torch/*.kdl with --torch, into torch_<name>), every convolution test spec
# (tests/golden/conv/*.kdl, into conv_<name>; without --torch: tests/golden/torch/conv_ops.kdl pins the conv
# ops) and the shared convolution example (spec/examples/conv_fprop.kdl, into examples_conv_fprop) ----
goldens_emit() {
  local tmp; tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' RETURN
  (cd "$ROOT" && for spec in samples/kernels/*.kdl tests/golden/sm90a/*.kdl tests/golden/torch/*.kdl \
                            tests/golden/conv/*.kdl "$KDL_SHARED_DIR/spec/examples/conv_fprop.kdl"; do
     local stem; stem="$(basename "$spec" .kdl)"
     local torch=--torch
     case "$spec" in
       tests/golden/sm90a/*) stem="sm90a_$stem"; torch= ;;
       tests/golden/torch/*) stem="torch_$stem" ;;
       tests/golden/conv/*) stem="conv_$stem"; torch= ;;
       "$KDL_SHARED_DIR"/*) stem="examples_$stem"; torch= ;;
     esac
     "$KDLC" emit "$spec" -o "$tmp/$stem" $torch --color=never 2>"$tmp/$stem.log" || { cat "$tmp/$stem.log" >&2; exit 1; }
   done) || { FAILED=1; return; }
  if [ "$MODE" = check ]; then
    if diff -ru "$ROOT/tests/golden/emit" "$tmp" -x '*.log'; then
      echo "emit goldens: match"
    else
      echo "emit goldens: differ (run scripts/update-goldens.sh emit and review the diff)" >&2
      FAILED=1
    fi
  else
    rm -rf "$ROOT/tests/golden/emit"
    mkdir -p "$ROOT/tests/golden/emit"
    for d in "$tmp"/*/; do cp -r "$d" "$ROOT/tests/golden/emit/"; done
    echo "emit goldens: regenerated in tests/golden/emit"
  fi
}

# ---- diagnostics: the `// CHECK:` block at the end of each tests/diagnostics/*/*.kdl ----
goldens_diagnostics() {
  local flag=--update; [ "$MODE" = check ] && flag=
  python3 "$ROOT/tests/diagnostics/run.py" --kdlc "$KDLC" $flag | grep -v '^PASS' || true
  python3 "$ROOT/tests/diagnostics/run.py" --kdlc "$KDLC" >/dev/null || FAILED=1
  python3 "$ROOT/tests/diagnostics/run.py" --coverage | grep '^error' && FAILED=1 || true
}

# ---- list: tests/list/expected/ (`kdlc list` and `--json` of the shared examples and tests/list/*.kdl) ----
goldens_list() {
  local flag=--update; [ "$MODE" = check ] && flag=
  python3 "$ROOT/tests/list/run.py" --kdlc "$KDLC" --shared "$KDL_SHARED_DIR" $flag | grep -v '^PASS' || true
  python3 "$ROOT/tests/list/run.py" --kdlc "$KDLC" --shared "$KDL_SHARED_DIR" >/dev/null || FAILED=1
}

for area in "${AREAS[@]}"; do
  if declare -F "goldens_$area" >/dev/null; then "goldens_$area"; else echo "update-goldens: unknown area $area" >&2; exit 2; fi
done
exit $FAILED
