#!/usr/bin/env python3
"""The SM clock and board power while kdl's and cuDNN's fprop kernels alternate in batches of 200 launches
(docs/perf-notes.md v46): nvidia-smi sampled every 5 ms in the background, the samples inside each batch taken as that
batch's. For the first shape and K512 with the sm90a kernels of v44's table (bench/conv_overhead.py's BEST), 4 s of
alternation each; prints each kernel's median time per launch, median SM clock and power over its batches, and writes
$OUT/trace_C256.csv and trace_C512.csv (mark,NAME,T0,T1,MS_PER_LAUNCH and smi,T,MHZ,WATTS lines).

  python3 bench/conv_clock_trace.py      (on the GPU machine, after bench/conv_run.sh's build)
"""
import datetime
import os
import statistics
import subprocess
import time

import conv_bench as cb  # beside this script; it puts tests/gpu/conv on the path for conv_abi
import conv_overhead as co
import torch

ca = cb.ca
ROOT = cb.ROOT


def main():
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.benchmark_limit = 0
    kernels, _ = ca.discover(os.path.join(ROOT, ".carry", "gpu"), ["bench.list"])
    out = os.environ.get("OUT", ".")
    for op, pr in [cb.CASES[0], cb.CASES[2]]:
        kdl, cudnn, why = co.best_launches(kernels, op, pr)
        if why is not None:
            raise SystemExit(f"{pr.label}: {why}")
        for f in (kdl, cudnn):
            for _ in range(50):
                f()
        ca.synchronize()
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw", "--format=csv,noheader,nounits",
                                "-lms", "5"], stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        marks = []
        t_end = time.time() + 4
        while time.time() < t_end:
            for name, f in (("kdl", kdl), ("cudnn", cudnn)):
                ca.synchronize()
                t0 = time.time()
                ms = cb.batch_ms(f, 200)
                marks.append((name, t0, time.time(), ms))
        time.sleep(0.2); smi.terminate()
        lines = smi.stdout.read().strip().splitlines()
        samples = []
        for l in lines:
            try:
                ts, clk, pw = [x.strip() for x in l.split(",")]
                t = datetime.datetime.strptime(ts, "%Y/%m/%d %H:%M:%S.%f").timestamp()
                samples.append((t, float(clk), float(pw)))
            except Exception:
                pass
        print(f"{pr.label}: {len(samples)} nvidia-smi samples over {len(marks)} batches of 200")
        for name in ("kdl", "cudnn"):
            clks, pws, mss = [], [], []
            for n, t0, t1, ms in marks[2:]:
                if n != name: continue
                mss.append(ms)
                clks += [c for t, c, p in samples if t0 + 0.005 <= t <= t1 - 0.002]
                pws += [p for t, c, p in samples if t0 + 0.005 <= t <= t1 - 0.002]
            print(f"  {name}: {statistics.median(mss)*1e3:.1f} us per launch; SM clock median {statistics.median(clks) if clks else 0:.0f} MHz "
                  f"(min {min(clks) if clks else 0:.0f}, {len(clks)} samples); power median {statistics.median(pws) if pws else 0:.0f} W")
        with open(os.path.join(out, f"trace_{pr.label.split()[1]}.csv"), "w") as fo:
            for m in marks: fo.write("mark,%s,%.4f,%.4f,%.5f\n" % m)
            for s in samples: fo.write("smi,%.4f,%.0f,%.1f\n" % s)
        del kdl
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
