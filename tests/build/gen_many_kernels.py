#!/usr/bin/env python3
"""Prints a spec with N sm80 GEMM kernels (default 100) that differ in element type, layouts, tile and
stages, for timing `kdlc build` on a large library (docs/building.md):
  tests/build/gen_many_kernels.py 100 > many.kdl && kdlc build many.kdl -o out -j2 --no-cache"""
import itertools, sys


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    dtypes = ["f16", "bf16"]
    layouts = [("row", "col"), ("row", "row"), ("col", "col"), ("col", "row")]
    tiles = [(64, 64, 64), (128, 64, 32), (64, 128, 32), (128, 128, 32)]
    stages = [3, 4]
    combos = itertools.cycle(itertools.product(dtypes, layouts, tiles, stages))
    print(f"// {n} generated kernels (tests/build/gen_many_kernels.py)")
    for i in range(n):
        dt, (la, lb), (tm, tn, tk), st = next(combos)
        print(f"kernel gemm_{i:03d}_{dt}_{la[0]}{lb[0]} {{\n  op = gemm; arch = sm80;\n"
              f"  A : {dt} {la}; B : {dt} {lb}; D : {dt} row;\n"
              f"  tile = ({tm}, {tn}, {tk}); stages = {st};\n}}\n")


if __name__ == "__main__":
    main()
