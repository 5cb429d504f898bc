#!/usr/bin/env python3
"""The sm90a epilogue's vector width against ptxas (codegen/lower_sm90.cpp, lowerSm90Epilogue).

Compiles tests/nvcc/sm90a_epilogue_registers.kdl (heavy epilogues on the largest sm90a tiles, clusters,
split-K, fp8 promotion) with the real nvcc and `kdlc build`'s flags, so that ptxas's report judges every
kernel at the width lowering picked; checks that `kdlc list --plan` names that width and why, that the
plain epilogue keeps 8 columns per call (16-byte stores) while the heaviest one is narrowed (so the
narrowed staged epilogue is compiled and gated too).

Each kernel's device code is compiled alone (nvcc -cubin with kdlc build's flags: the same cicc and
ptxas runs as `kdlc build`'s first compile, without the host compile, a fifth of the time); a kernel
ptxas reports spilling or losing performance is then built with `kdlc build --kernel`, whose gate and
lighter retries must accept it. So the test fails exactly when `kdlc build` would refuse a kernel. (Not
several kernels per translation unit: cicc then inlines differently, and e_heavy_c21 spilled 4 bytes
in such a batch while alone it does not.) The `kdlc build` step goes through kdlc's compile cache
($KDL_CACHE_DIR or the default).
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
from concurrent.futures import ThreadPoolExecutor

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


ENTRY = re.compile(r"^ptxas info\s*: Compiling entry function '([^']+)'")
SPILLS = re.compile(r"^\s+\d+ bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
LOSS = ("Potential Performance Loss", "'setmaxnreg' ignored", "wgmma.mma_async instructions are serialized")


def kernel_of(mangled, names):
    """The kernel whose namespace (kdl_kernels::NAME) a mangled function name holds, or None."""
    hits = [n for n in names if "11kdl_kernels%d%s" % (len(n), n) in mangled]
    return hits[0] if len(hits) == 1 else None


def ptxas_problems(log, names):
    """(kernels to send to kdlc build, kernels whose entry ptxas reported) from ptxas -v's report of
    the kernels `names`: spills (by the function the report lines follow) and performance-loss lines; a
    problem that names no single one of them sends every one."""
    bad, entries, current = set(), set(), None
    for line in log.splitlines():
        m = ENTRY.search(line)
        if m:
            current = kernel_of(m.group(1), names)
            if current:
                entries.add(current)
            continue
        if line.startswith("ptxas info") and "Function properties for" in line:
            current = kernel_of(line, names)
            continue
        m = SPILLS.search(line)
        if m and (int(m.group(1)) or int(m.group(2))):
            bad |= {current} if current else set(names)
        elif line.startswith("ptxas") and any(x in line for x in LOSS):
            who = kernel_of(line, names)
            bad |= {who} if who else set(names)
    return bad, entries


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
        out = os.path.join(tmp, "out")
        r = run([a.kdlc, "emit", a.spec, "-o", out, "--color=never"])
        if r.returncode != 0:
            raise SystemExit("FAIL: kdlc emit:\n" + r.stderr)
        manifest = json.load(open(os.path.join(out, "manifest.json")))
        kernels = manifest["kernels"]

        def compile_one(k):
            cu = os.path.join(out, k["files"]["source"])
            # kdlc build's flags (codegen/build.cpp, nvccFlagsFor) with ptxas's report; device code only.
            cmd = [nvcc, "-std=c++17", "-O3", "-Xcompiler", "-fPIC", *k["gencode"], "-Xptxas", "-v",
                   "-I" + a.include, "-cubin", cu, "-o", cu + ".cubin"]
            return k["name"], run(cmd)

        suspects, reported = set(), set()
        with ThreadPoolExecutor(max_workers=max(1, a.j)) as ex:
            for name, r in ex.map(compile_one, kernels):
                if r.returncode != 0:
                    failures.append("nvcc failed on %s:\n%s%s" % (name, r.stdout, r.stderr))
                    continue
                bad, entries = ptxas_problems(r.stdout + r.stderr, [name])
                reported |= entries
                suspects |= bad
                print("compiled %-26s %s" % (name, "ptxas reports a loss: to kdlc build" if bad else "no spills, no losses"),
                      flush=True)
        missing = sorted(set(w) - reported)
        if missing:
            failures.append("ptxas reported no entry function of %s" % ", ".join(missing))
        if suspects:
            # The kernels ptxas flagged go through kdlc build's gate, with its lighter retries.
            cmd = [a.kdlc, "build", a.spec, "-o", os.path.join(tmp, "built"), "--nvcc", nvcc, "-j%d" % a.j]
            for name in sorted(suspects):
                cmd += ["--kernel", name]
            r = run(cmd)
            sys.stdout.write(r.stderr)
            if r.returncode != 0:
                failures.append("kdlc build refused a kernel at lowering's epilogue width (exit %d): see above" % r.returncode)
            else:
                print("kdlc build accepted %s" % ", ".join(sorted(suspects)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL: " + f)
    print("%d kernels built through the ptxas gate: %s" % (len(w), "FAILED" if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
