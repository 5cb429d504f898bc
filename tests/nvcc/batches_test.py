#!/usr/bin/env python3
"""compile_emitted.batches (several kernels per nvcc run) on made-up kernels, no nvcc: every kernel's
headers include those of every kernel before it in its batch; a batch holds one gencode, distinct
names and at most `size` kernels; every kernel lands in exactly one batch."""
import os, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compile_emitted import batches, header_set  # noqa: E402

KERNELS = [  # name, headers of its .h, headers of its .cu, gencode
    ("a", ["cuda_bf16.h"], ["kdl/gemm_sm90.cuh"], "sm_90a"),
    ("b", ["cuda_bf16.h", "cuda_fp8.h"], ["kdl/gemm_sm90.cuh"], "sm_90a"),
    ("c", ["cuda_fp16.h"], ["kdl/gemm_sm90.cuh"], "sm_90a"),
    ("d", ["cuda_bf16.h"], ["kdl/gemm_sm90.cuh"], "sm_90a"),
    ("e", ["cuda_bf16.h"], ["kdl/gemm_sm90.cuh"], "sm_80"),
    ("f", ["cuda_bf16.h", "cuda_fp16.h"], ["kdl/gemm_sm90.cuh"], "sm_90a"),
    ("g", ["cuda_bf16.h"], ["kdl/gemm_sm90.cuh", "kdl/conv_sm90.cuh"], "sm_90a"),
    ("a", ["cuda_bf16.h"], ["kdl/gemm_sm90.cuh"], "sm_90a"),  # a second spec's kernel of the same name
    ("h", ["cuda_bf16.h"], ["kdl/gemm_sm90.cuh"], "sm_90a"),
    ("i", ["cuda_bf16.h"], ["kdl/gemm_sm90.cuh"], "sm_90a"),
]


def main():
    tmp = tempfile.mkdtemp(prefix="kdl-batches-")
    jobs = []
    for i, (name, h, cu, arch) in enumerate(KERNELS):
        d = os.path.join(tmp, str(i))
        os.makedirs(d)
        with open(os.path.join(d, name + ".h"), "w") as f:
            f.writelines(f"#include <{x}>\n" for x in h)
        with open(os.path.join(d, name + ".cu"), "w") as f:
            f.write(f'#include "{name}.h"\n' + "".join(f"#include <{x}>\n" for x in cu))
        src = os.path.join(d, name + ".cu")
        jobs.append((f"{i}/{name}", src, [f"-gencode=arch=compute_x,code={arch}"], name, src))
    failures = []
    if header_set(jobs[1][4]) != frozenset(["cuda_bf16.h", "cuda_fp8.h", "kdl/gemm_sm90.cuh"]):
        failures.append(f"header_set of b: {sorted(header_set(jobs[1][4]))}")
    size = 3
    out = batches(jobs, size)
    labels = sorted(j[0] for b in out for j in b)
    if labels != sorted(j[0] for j in jobs):
        failures.append(f"kernels not each in one batch: {labels}")
    for b in out:
        if len(b) > size:
            failures.append(f"batch over {size}: {[j[0] for j in b]}")
        if len({tuple(j[2]) for j in b}) != 1:
            failures.append(f"batch mixes gencodes: {[j[0] for j in b]}")
        if len({j[3] for j in b}) != len(b):
            failures.append(f"batch repeats a name: {[j[0] for j in b]}")
        for k in range(1, len(b)):
            if not header_set(b[k - 1][4]) <= header_set(b[k][4]):
                failures.append(f"{b[k][0]} lacks a header of {b[k - 1][0]} before it: {[j[0] for j in b]}")
    if len(out) >= len(jobs):
        failures.append("no two kernels share a batch")
    for b in out:
        print("batch:", ", ".join(j[0] for j in b))
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
