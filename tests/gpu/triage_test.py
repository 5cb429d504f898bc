#!/usr/bin/env python3
"""CPU test of tests/gpu/triage.py and of the GPU suite's and benchmark's specs (no GPU needed).

usage: tests/gpu/triage_test.py KDLC SOURCE_DIR

- every spec of tests/gpu/specs/ and bench/specs/ passes kdlc's front end (no SPECERROR: a spec that
  rots would otherwise only show as NOT BUILT on the GPU machine), and every one of its kernels is
  either built or listed NOT BUILT with a reason;
- a spec with a syntax error gives SPECERROR with its location, and no BUILD line;
- a kernel kdlc refuses as [unsupported] (a dgrad with a wgmma schedule) is NOTBUILT with kdlc's
  reason, while the GEMM beside it in the same file is BUILD.
Prints one line per check; exit 1 on any failure.
"""
import os
import subprocess
import sys
import tempfile

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures += 1


def triage(kdlc, src, spec):
    p = subprocess.run([sys.executable, os.path.join(src, "tests/gpu/triage.py"), kdlc, spec], capture_output=True,
                       text=True, timeout=300)
    return p.returncode, [line.split("\t") for line in p.stdout.splitlines() if line]


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    kdlc, src = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    specs = []
    for d in ("tests/gpu/specs", "bench/specs"):
        specs += [os.path.join(src, d, f) for f in sorted(os.listdir(os.path.join(src, d))) if f.endswith(".kdl")]
    for spec in specs:
        rc, rows = triage(kdlc, src, spec)
        name = os.path.relpath(spec, src)
        check(rc == 0, f"{name}: triage exits 0")
        check(not any(r[0] == "SPECERROR" for r in rows),
              f"{name}: passes the front end " + "; ".join(r[2] for r in rows if r[0] == "SPECERROR"))
        check(len(rows) > 0 and all(r[0] == "BUILD" or (r[0] == "NOTBUILT" and len(r) == 3 and r[2]) for r in rows),
              f"{name}: {len(rows)} kernels, each built or NOT BUILT with a reason")

    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "bad.kdl")
        with open(bad, "w") as f:
            f.write("kernel k {\n  op = gemm; arch = sm80;\n  A : bf16 row B : bf16 col;\n}\n")
        rc, rows = triage(kdlc, src, bad)
        err = [r for r in rows if r[0] == "SPECERROR"]
        check(rc == 0 and len(err) == 1 and "bad.kdl:3:" in err[0][2] and not any(r[0] == "BUILD" for r in rows),
              "a syntax error: SPECERROR located at bad.kdl:3, nothing built")

        mixed = os.path.join(tmp, "mixed.kdl")
        with open(mixed, "w") as f:
            f.write("kernel g {\n  op = gemm; arch = sm80;\n  A : bf16 row; B : bf16 col; D : bf16 row;\n"
                    "  accum = f32; tile = (128, 128, 32); stages = 3; schedule = multistage;\n}\n"
                    "kernel c {\n  op = conv2d_dgrad; arch = sm90a;\n  X : f16 nhwc; W : f16 krsc; Y : f16 nhwc;\n"
                    "  accum = f32; schedule = cooperative; stride = (2, 2);\n}\n")
        rc, rows = triage(kdlc, src, mixed)
        check(rc == 0 and ["BUILD", "g"] in rows, "the GEMM of a mixed spec: BUILD")
        conv = [r for r in rows if r[1] == "c"]
        check(len(conv) == 1 and conv[0][0] == "NOTBUILT" and "the sm90a dgrad is generated for unit stride" in conv[0][2],
              "the convolution of a mixed spec: NOTBUILT with kdlc's [unsupported] reason")
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
