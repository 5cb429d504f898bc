#!/usr/bin/env python3
"""The sm90a epilogue's vector width against ptxas (codegen/lower_sm90.cpp, lowerSm90Epilogue).

Builds tests/nvcc/sm90a_epilogue_registers.kdl (heavy epilogues on the largest sm90a tiles, clusters,
split-K, fp8 promotion) with `kdlc build` and the real nvcc, so that ptxas's gate (no spills) judges
every kernel at the width lowering picked; checks that `kdlc list --plan` names that width and why,
that the plain epilogue keeps 8 columns per call (16-byte stores) while the heaviest one is narrowed
(so the narrowed staged epilogue is compiled and gated too). Compiles through kdlc's compile cache ($KDL_CACHE_DIR
or the default), so a second run with unchanged headers costs little; a cached object's ptxas report
is gated like a fresh one.
Usage: epilogue_registers.py --kdlc KDLC --include INCLUDE_DIR --spec SPEC [-j N]
Exits 77 with "SKIP: ..." when nvcc is missing.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
PLAIN = "e_plain_c21"    # the default epilogue (alpha * acc + beta * C): must stay at 8 columns
NARROWED = "e_wide_c21"  # more values per column than 8 columns leave room for


def find_nvcc():
    for c in (os.environ.get("KDL_NVCC"), os.environ.get("CUDACXX"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def widths(kdlc, spec):
    """Each kernel's epilogue vector width and its reason, from `kdlc list --plan --json`."""
    r = run([kdlc, "list", "--plan", "--json", spec])
    if r.returncode != 0:
        raise SystemExit("FAIL: kdlc list --plan --json:\n" + r.stderr)
    out = {}
    for p in json.loads(r.stdout)["plans"]:
        d = [x for x in p["decisions"] if x["what"] == "epilogue V"]
        if len(d) != 1:
            raise SystemExit("FAIL: %s: no single `epilogue V` decision in its plan" % p["name"])
        m = re.match(r"(\d+) columns per Epilogue::apply call", d[0]["value"])
        if not m:
            raise SystemExit("FAIL: %s: epilogue vector `%s`" % (p["name"], d[0]["value"]))
        out[p["name"]] = (int(m.group(1)), d[0]["why"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kdlc", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--spec", required=True)
    ap.add_argument("-j", type=int, default=2)
    a = ap.parse_args()
    nvcc = find_nvcc()
    if not nvcc:
        print("SKIP: nvcc not found ($KDL_NVCC, $CUDACXX, PATH, /usr/local/cuda/bin/nvcc)")
        return SKIP
    failures = []
    w = widths(a.kdlc, a.spec)
    for name, (v, why) in sorted(w.items()):
        print("%-26s V = %d  (%s)" % (name, v, why))
    if w.get(PLAIN, (0,))[0] != 8:
        failures.append("%s: the plain epilogue must keep 8 columns per call (16-byte stores), got %s" % (PLAIN, w.get(PLAIN)))
    if w.get(NARROWED, (8,))[0] >= 8:
        failures.append("%s: the heaviest epilogue was not narrowed" % NARROWED)
    for name, (v, why) in w.items():
        if v < 8 and "registers" not in why:
            failures.append("%s: the plan does not say why the width is %d: %s" % (name, v, why))

    tmp = tempfile.mkdtemp(prefix="kdl-epilogue-registers-")
    try:
        # Every kernel at the width lowering picked, through the gate (a spill fails the build).
        out = os.path.join(tmp, "out")
        r = run([a.kdlc, "build", a.spec, "-o", out, "--nvcc", nvcc, "-j%d" % a.j])
        sys.stdout.write(r.stderr)
        if r.returncode != 0:
            failures.append("kdlc build refused a kernel at lowering's epilogue width (exit %d): see above" % r.returncode)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL: " + f)
    print("%d kernels built through the ptxas gate: %s" % (len(w), "FAILED" if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
