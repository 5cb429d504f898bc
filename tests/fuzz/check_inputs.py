#!/usr/bin/env python3
"""Runs `kdlc check` over hostile inputs and checks that kdlc survives each: exit 0 or 1 (never a
signal, an internal error (3) or a sanitizer report), within a time limit. Not fuzzing: the inputs are
tests/fuzz/regressions/* (crashes the fuzzer found, plus small hostile files) and large hostile files
generated here (too big to commit).

    check_inputs.py --kdlc PATH [--dir tests/fuzz/regressions] [--timeout 30] [--no-generated]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL = b"kernel k { op = gemm; arch = sm80; A : f16 row; B : f16 col; D : f16 row; tile = (128, 128, 32); }\n"


def generated():
    """name -> bytes of inputs too large to keep in git."""
    mb = 1 << 20
    return {
        "gen_parens_1mb.kdl": b"let x = " + b"(" * mb + b"\n",
        "gen_parens_balanced_100k.kdl": b"let x = " + b"(" * 100000 + b"1" + b")" * 100000 + b";\n",
        "gen_minus_100k.kdl": b"let x = " + b"-" * 100000 + b"1;\n",
        "gen_not_100k.kdl": b"let x = " + b"!" * 100000 + b"true;\n",
        "gen_brackets_100k.kdl": b"let x = " + b"[" * 100000 + b"]" * 100000 + b";\n",
        "gen_braces_100k.kdl": b"if true {\n" * 100000 + b"}\n" * 100000,
        "gen_string_line_10mb.kdl": b'let s = "' + b"a" * (10 * mb) + b'";\n',
        "gen_comment_line_10mb.kdl": b"// " + b"x" * (10 * mb) + b"\n" + KERNEL,
        "gen_identifier_1mb.kdl": b"let " + b"a" * mb + b" = 1;\n",
        "gen_file_20mb.kdl": (b"let a = 1; // padding padding padding padding padding padding padding\n" * (20 * mb // 72 + 1)),
        "gen_syntax_errors_100k.kdl": b"let = ;\n" * 100000,
        "gen_eval_errors_10k.kdl": b"".join(b"let v%d = 1 / 0;\n" % i for i in range(10000)),
        "gen_lets_100k.kdl": b"".join(b"let v%d = %d;\n" % (i, i) for i in range(100000)),
        "gen_nul_1mb.kdl": b"\x00" * mb,
        "gen_random_bytes.kdl": bytes((i * 7919 + 13) % 256 for i in range(mb)),
        "gen_interpolation_nest.kdl": b'let s = "' + b"${\"" * 5000 + b"x" + b"\"}" * 5000 + b'";\n',
        "gen_kernel_1k_fields.kdl": b"kernel k {\n" + b"".join(b"  f%d = %d;\n" % (i, i) for i in range(1000)) + b"}\n",
    }


def check(kdlc, cwd, name, timeout):
    t0 = time.monotonic()
    try:
        p = subprocess.run([kdlc, "check", name, "--max-errors=20"], cwd=cwd, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"{name}: still running after {timeout} s"
    dt = time.monotonic() - t0
    err = p.stderr.decode("utf-8", "backslashreplace")
    bad = []
    if p.returncode not in (0, 1):
        bad.append(f"exit {p.returncode}" + (" (a signal)" if p.returncode < 0 else ""))
    for marker in ("internal error", "AddressSanitizer", "runtime error:", "LeakSanitizer"):
        if marker in err:
            bad.append(f"stderr says `{marker}`")
    if bad:
        return f"{name}: {', '.join(bad)} after {dt:.1f} s; run: cd {cwd} && {kdlc} check {name}\n{err[-3000:]}"
    print(f"ok   {name}: exit {p.returncode} in {dt:.2f} s")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kdlc", required=True)
    ap.add_argument("--dir", default=os.path.join(HERE, "regressions"))
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--no-generated", action="store_true")
    ap.add_argument("only", nargs="*", help="names of inputs to run (default: all)")
    a = ap.parse_args()
    kdlc = os.path.abspath(a.kdlc)
    failures = []
    names = sorted(f for f in os.listdir(a.dir) if os.path.isfile(os.path.join(a.dir, f)) and not f.endswith((".txt", ".md")))
    for n in names:
        if not a.only or n in a.only:
            r = check(kdlc, a.dir, n, a.timeout)
            if r:
                failures.append(r)
    if not a.no_generated:
        tmp = tempfile.mkdtemp(prefix="kdl-hostile-")
        try:
            for n, data in generated().items():
                if a.only and n not in a.only:
                    continue
                with open(os.path.join(tmp, n), "wb") as fh:
                    fh.write(data)
                r = check(kdlc, tmp, n, a.timeout)
                if r:
                    failures.append(r.replace(tmp, "<tmp> (regenerate with tests/fuzz/check_inputs.py)"))
                os.remove(os.path.join(tmp, n))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL " + f)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
