#!/usr/bin/env python3
"""dsl/check/cpp_header_macros.txt lists every macro of the headers generated code includes, so that `kdlc
check` refuses kernel and epilogue names that no qualification in the generated C++ can save (a
kernel named `NULL` or `EOF`; dsl/check/cpp_names.h). This regenerates that list from the installed CUDA
with `nvcc -E -Xcompiler -dM -x cu` over the headers the emitted code includes (CUDA's, stddef.h,
stdint.h) and every system header include/kdl's templates include, plus include/kdl itself, and fails
naming each macro missing from the committed table. Names C++ reserves (`__x`, `_X`) are left out:
kdlc refuses those by rule.

    header_macros.py --include DIR [--nvcc PATH] [--table FILE]            check (exit 1 on a missing macro)
    header_macros.py --include DIR [--nvcc PATH] [--table FILE] --update   rewrite the table
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TABLE = os.path.join(HERE, "..", "..", "dsl", "check", "cpp_header_macros.txt")
# What codegen/emit_kernel.cpp writes at the top of every NAME.h / NAME.cu besides <kdl/...>.
EMITTED = ["cuda_runtime_api.h", "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "stddef.h", "stdint.h"]
INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*<([^>]+)>', re.M)


# Headers of the PyTorch extension (`kdlc emit --torch`), not of the kernels: they need PyTorch's headers,
# whose macros this table does not cover.
TORCH_ONLY = {"torch_ops.h", "torch_conv_ops.h"}


def headers(include_dir):
    kdl = sorted(glob.glob(os.path.join(include_dir, "kdl", "*.h")) + glob.glob(os.path.join(include_dir, "kdl", "*.cuh")))
    kdl = [p for p in kdl if os.path.basename(p) not in TORCH_ONLY]
    system = set(EMITTED)
    for path in kdl:
        with open(path, encoding="utf-8") as fh:
            system.update(h for h in INCLUDE_LINE.findall(fh.read()) if not h.startswith("kdl/"))
    return sorted(system) + ["kdl/" + os.path.basename(p) for p in kdl]


def macros(nvcc, include_dir):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "all.cu")
        with open(src, "w") as fh:
            fh.write("".join(f"#include <{h}>\n" for h in headers(include_dir)))
        out = os.path.join(tmp, "macros.txt")
        p = subprocess.run([nvcc, "-std=c++17", "-E", "-Xcompiler", "-dM", "-x", "cu", "-I", include_dir, src, "-o", out],
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"FAIL: nvcc could not preprocess the headers:\n{p.stderr[-4000:]}")
        with open(out, encoding="utf-8", errors="replace") as fh:
            names = set(re.findall(r"^#define ([A-Za-z_][A-Za-z0-9_]*)", fh.read(), re.M))
    return {n for n in names if not re.match(r"^(__|_[A-Z])", n)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--include", required=True, help="the repository's include/ (holds kdl/)")
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--table", default=DEFAULT_TABLE)
    ap.add_argument("--update", action="store_true")
    a = ap.parse_args()
    if not os.access(a.nvcc, os.X_OK):
        print(f"SKIP: no nvcc at {a.nvcc}")
        return 0
    found = macros(a.nvcc, os.path.abspath(a.include))
    if a.update:
        with open(a.table, "w") as fh:
            fh.write("".join(n + "\n" for n in sorted(found)))  # byte order: kdlc binary-searches it
        print(f"wrote {len(found)} macros to {a.table}")
        return 0
    with open(a.table) as fh:
        table = [l.strip() for l in fh if l.strip()]
    problems = []
    if table != sorted(set(table)):
        problems.append(f"{a.table} is not sorted and unique (kdlc binary-searches it)")
    missing = sorted(found - set(table))
    if missing:
        problems.append(f"{len(missing)} macros of the included headers are missing from {a.table}: "
                        f"{', '.join(missing[:50])}{' ...' if len(missing) > 50 else ''}\n"
                        f"(rerun with --update, review the diff and commit it)")
    for pr in problems:
        print("FAIL: " + pr)
    if not problems:
        print(f"ok: the {len(found)} macros of {len(headers(a.include))} headers are all in the table "
              f"({len(table)} names)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
