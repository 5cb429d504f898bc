#!/usr/bin/env python3
"""Golden tests of `kdlc list` (text and --json).

Inputs: every spec/examples/*.kdl of the shared folder (run with the examples folder as the working
directory, so paths in the output read `gemm_basic.kdl:5:3`), and every tests/list/*.kdl (run from
tests/list). Expectations: tests/list/expected/[examples/]NAME.txt and NAME.json, which
`scripts/update-goldens.sh list` rewrites. Besides the goldens, the JSON must parse as an object with
a `kernels` array whose items have a `name`, and the kernel names must be the ones the file promises:
for the examples, the list below (from their comments); for tests/list/*.kdl, a `// KERNELS: a b c` line.
A tests/list/*.kdl with a `// PLAN` line also has `kdlc list --plan` compared with expected/NAME.plan.txt
(every decision of lowering with its reason).

    run.py --kdlc PATH --shared DIR [--update] [CASE...]     CASE: examples/gemm_basic or templates
"""
import argparse
import difflib
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "expected")

def _sweep():
    names = []
    for dt in ("bf16", "e4m3"):
        for t in ((128, 256, 64), (128, 128, 64), (64, 256, 64)):
            tile = (t[0], t[1], t[2] * 2) if dt == "e4m3" else t
            for c in (1, 2):
                names.append(f"gemm_{dt}_{tile[0]}x{tile[1]}x{tile[2]}_c{c}")
    return names

# What the examples' comments promise (LANGUAGE.md: "must be accepted and mean what its comments say").
EXAMPLE_KERNELS = {
    "gemm_basic": ["gemm_bf16_tn"],
    "gemm_epilogues": ["gemm_f16_bias_relu", "gemm_f16_scale_gelu", "gemm_f32_tf32_aux"],
    "gemm_sweep": _sweep(),
    "conv_fprop": ["conv_fprop_f16_relu"],
}


def cases(shared):
    out = []
    ex = os.path.join(shared, "spec", "examples")
    if os.path.isdir(ex):
        for f in sorted(os.listdir(ex)):
            if f.endswith(".kdl"):
                out.append(("examples/" + f[:-4], ex, f))
    for f in sorted(os.listdir(HERE)):
        if f.endswith(".kdl") and not f.startswith("_"):
            out.append((f[:-4], HERE, f))
    return out


def absent_examples(shared):
    """Example cases with goldens but no spec in the shared folder (missing or partial): failures,
    never cases quietly left out."""
    ex, gold = os.path.join(shared, "spec", "examples"), os.path.join(EXPECTED, "examples")
    names = sorted({f[:-4] for f in os.listdir(gold) if f.endswith(".txt")}) if os.path.isdir(gold) else []
    return ["examples/" + n for n in names if not os.path.isfile(os.path.join(ex, n + ".kdl"))]


def promised(case, cwd, f):
    if case.startswith("examples/"):
        return EXAMPLE_KERNELS.get(case[len("examples/"):])
    with open(os.path.join(cwd, f), encoding="utf-8") as fh:
        for line in fh:
            m = re.match(r"^\s*//\s*KERNELS:\s*(.*)$", line)
            if m:
                return m.group(1).split()
    return None


def run(kdlc, cwd, args):
    p = subprocess.run([kdlc] + args, cwd=cwd, capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "backslashreplace"), p.stderr.decode("utf-8", "backslashreplace")


def wants_plan(case, cwd, f):
    if case.startswith("examples/"):
        return False
    with open(os.path.join(cwd, f), encoding="utf-8") as fh:
        return any(re.match(r"^\s*//\s*PLAN\s*$", line) for line in fh)


def check_case(kdlc, case, cwd, f, update):
    problems = []
    modes = [(".txt", []), (".json", ["--json"])]
    if wants_plan(case, cwd, f):
        modes.append((".plan.txt", ["--plan"]))
    for suffix, extra in modes:
        rc, out, err = run(kdlc, cwd, ["list", f] + extra)
        if rc != 0 or err:
            problems.append(f"`kdlc list {f} {' '.join(extra)}` (in {cwd}) exits {rc}:\n{err[-4000:]}")
            continue
        golden = os.path.join(EXPECTED, case + suffix)
        if suffix == ".json":
            try:
                doc = json.loads(out)
            except ValueError as e:
                problems.append(f"`kdlc list --json {f}` is not valid JSON: {e}")
                doc = None
            if doc is not None:
                if not isinstance(doc, dict) or not isinstance(doc.get("kernels"), list):
                    problems.append("`kdlc list --json`: expected a top-level object with a `kernels` array")
                else:
                    names = [k.get("name") if isinstance(k, dict) else None for k in doc["kernels"]]
                    if any(not isinstance(n, str) for n in names):
                        problems.append("`kdlc list --json`: a kernel without a string `name`")
                    want = promised(case, cwd, f)
                    if want is not None and names != want:
                        problems.append(f"kernels {names} ({len(names)}), but the file promises {want} ({len(want)})")
        if update:
            os.makedirs(os.path.dirname(golden), exist_ok=True)
            with open(golden, "w", encoding="utf-8") as fh:
                fh.write(out)
            continue
        if not os.path.exists(golden):
            problems.append(f"no golden {os.path.relpath(golden, HERE)} (scripts/update-goldens.sh list writes it)")
            continue
        with open(golden, encoding="utf-8") as fh:
            want_text = fh.read()
        if want_text != out:
            diff = "\n".join(difflib.unified_diff(want_text.splitlines(), out.splitlines(), "expected", "actual", lineterm=""))
            problems.append(f"`kdlc list {' '.join(extra)}` differs from {os.path.relpath(golden, HERE)} "
                            f"(scripts/update-goldens.sh list rewrites it):\n{diff[:20000]}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kdlc", required=True)
    ap.add_argument("--shared", default=os.path.join(HERE, "..", "..", "..", "shared"))
    ap.add_argument("--update", action="store_true")
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args()
    kdlc = os.path.abspath(a.kdlc)
    all_cases = cases(os.path.abspath(a.shared))
    absent = absent_examples(os.path.abspath(a.shared))
    if a.cases:
        all_cases = [c for c in all_cases if c[0] in a.cases]
        absent = [c for c in absent if c in a.cases]
        missing = set(a.cases) - {c[0] for c in all_cases} - set(absent)
        if missing:
            print(f"error: no such case: {', '.join(sorted(missing))} (shared folder: {a.shared})")
            return 1
    for case in absent:
        print(f"FAIL: {case}\nthe shared folder ({a.shared}) has no spec/{case}.kdl, which "
              f"expected/{case}.txt expects: put the shared folder beside the checkout or pass --shared DIR")
    failed = len(absent)
    for case, cwd, f in all_cases:
        problems = check_case(kdlc, case, cwd, f, a.update)
        failed += bool(problems)
        print(f"{'FAIL' if problems else 'PASS'}{' (updated)' if a.update else ''}: {case}")
        for p in problems:
            print(p)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
