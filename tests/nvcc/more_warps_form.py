#!/usr/bin/env python3
"""The 8-warp form of the multistage kernels (`kdlc build`'s last try, codegen/lower_tiling.cpp: moreWarpsForm).

For every kernel of SPEC, `kdlc list --plan --json` says whether it has an 8-warp form (the decision "more warps",
or the fallback's "if ptxas spills"); --expect N fails unless exactly N do. Every kernel is emitted, and each
one with a form is compiled to PTX twice, without and with -DKDL_MULTISTAGE_MORE_WARPS: every multistage entry
(kdl::GemmSm80 / GemmSm80Tma) must launch 128 threads (.maxntid) without it and 256 with it, and a kernel
without a form must not change. Then `kdlc build` of the whole spec with KDL_NVCC_FLAGS=-DKDL_MULTISTAGE_MORE_WARPS
(every form compiled as if the 4-warp kernel had spilled, for its own targets) must pass ptxas's gate at its
first try: no spill, no later try. Exits 77 with "SKIP: ..." when nvcc is missing.
Usage: more_warps_form.py --kdlc KDLC --include INCLUDE_DIR --spec SPEC [--expect N] [-j N]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compile_emitted import find_nvcc  # noqa: E402

MACRO = "KDL_MULTISTAGE_MORE_WARPS"
ENTRY = re.compile(r"\.entry\s+(\S+)\(")
MAXNTID = re.compile(r"\.maxntid\s+(\d+),")


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def multistage_threads(ptx):
    """{entry name: .maxntid x} of the multistage entries (kdl::gemm_sm80*_kernel) in a PTX file."""
    out, entry = {}, None
    for line in ptx.splitlines():
        m = ENTRY.search(line)
        if m:
            entry = m.group(1)
            continue
        m = MAXNTID.search(line)
        if m and entry and "gemm_sm80" in entry:
            out[entry] = int(m.group(1))
            entry = None
    return out


def ptx_arch(gencode):
    """The first virtual architecture of a kernel's -gencode flags (compute_80, compute_90a, ...)."""
    for g in gencode:
        m = re.search(r"arch=(compute_\w+)", g)
        if m:
            return m.group(1)
    fail(f"no arch in {gencode}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kdlc", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--expect", type=int)
    ap.add_argument("-j", type=int, default=2)
    a = ap.parse_args()
    nvcc = find_nvcc()
    if not nvcc:
        print("SKIP: nvcc not found")
        return 77

    plans = json.loads(subprocess.run([a.kdlc, "list", "--plan", "--json", a.spec], capture_output=True, text=True,
                                      check=True).stdout)["plans"]
    forms = {}
    for p in plans:
        texts = [d["value"] for d in p["decisions"] if d["what"] == "more warps"]
        texts += [d["value"] for d in p["decisions"] if d["what"] == "fallback" and "if ptxas spills" in d["value"]]
        forms[p["name"]] = bool(texts)
    with_form = sorted(n for n, f in forms.items() if f)
    print(f"{len(with_form)} of {len(forms)} kernels have an 8-warp form: {', '.join(with_form)}")
    if a.expect is not None and len(with_form) != a.expect:
        fail(f"expected {a.expect} kernels with an 8-warp form, found {len(with_form)}")

    with tempfile.TemporaryDirectory(prefix="kdl-more-warps-") as tmp:
        out = os.path.join(tmp, "emit")
        subprocess.run([a.kdlc, "emit", a.spec, "-o", out], capture_output=True, text=True, check=True)
        with open(os.path.join(out, "manifest.json")) as f:
            manifest = {k["name"]: k for k in json.load(f)["kernels"]}
        for name, has_form in sorted(forms.items()):
            src = os.path.join(out, name + ".cu")
            with open(src) as f:
                offered = f"#ifdef {MACRO}" in f.read()
            if offered != has_form:
                fail(f"{name}: the plan says {'an' if has_form else 'no'} 8-warp form, {name}.cu {'has' if offered else 'has none'}")
            arch = ptx_arch(manifest[name]["gencode"])
            threads = []
            for defs in ([], ["-D" + MACRO]):
                r = subprocess.run([nvcc, "-std=c++17", f"-arch={arch}", "-I" + a.include, *defs, "-ptx", src, "-o", "-"],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    fail(f"{name}: nvcc -ptx {' '.join(defs)} failed:\n{r.stderr[-3000:]}")
                threads.append(multistage_threads(r.stdout))
            if not threads[0]:
                fail(f"{name}: no multistage entry in its PTX")
            plain, more = sorted(threads[0].values()), sorted(threads[1].values())
            want = [256] * len(plain) if has_form else plain
            print(f"{name}: {arch}, multistage entries launch {plain} threads, {more} with -D{MACRO}")
            if plain != [128] * len(plain) and has_form:
                fail(f"{name}: the 4-warp form launches {plain} threads")
            if more != want:
                fail(f"{name}: with -D{MACRO} the multistage entries launch {more} threads, expected {want}")

        # Every 8-warp form through kdlc build's ptxas gate, for the kernels' own targets, at the first try.
        lib = os.path.join(tmp, "lib")
        env = dict(os.environ, KDL_NVCC_FLAGS="-D" + MACRO, KDL_NVCC=nvcc, KDL_INCLUDE_DIR=os.path.abspath(a.include))
        r = subprocess.run([a.kdlc, "build", a.spec, "-o", lib, "--no-cache", f"-j{a.j}"],
                           capture_output=True, text=True, env=env)
        print(r.stderr.strip())
        if r.returncode != 0:
            fail(f"kdlc build with -D{MACRO}: exit {r.returncode}")
        if "kdlc: note:" in r.stderr:
            fail(f"kdlc build with -D{MACRO}: a kernel needed a later try (its 8-warp form is not clean at once)")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
