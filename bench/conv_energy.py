#!/usr/bin/env python3
"""Energy per launch of the sm90a fprop kernels beside cuDNN's (docs/perf-notes.md v51): does a kernel that needs
fewer SM cycles run slower at the card's power cap because it spends more energy per launch?

For each fprop case of bench/conv_bench.py (or those named by --case), every sm90a candidate of the bench libraries
that runs the case, and cuDNN (autotuned), each run in windows of `--seconds` of back-to-back batches of 20 launches,
the launchers alternating window by window for `--rounds` rounds. Per window, NVML's total-energy counter (mJ) is
read before and after, and the SM clock is sampled after every batch. Per launcher, printed: median us per launch
of its batches, mJ per launch (all its windows' energy over their launches), mean board power (energy over time),
median SM clock, and the cycles per launch at that clock (us x MHz: the work in SM cycles, if the clock NVML reports
is the clock the SMs ran at). Results against cuDNN's as ratios.

  python3 bench/conv_energy.py [--carry .carry/gpu] [--case SUBSTRING]... [--seconds 1.0] [--rounds 3]
  (on the GPU machine, after tests/gpu/prepare.sh's kernels are built: bench/conv_run.sh builds them)
"""
import argparse
import ctypes
import os
import statistics
import time

import conv_bench as cb  # beside this script; it puts tests/gpu/conv on the path for conv_abi
import torch

ca = cb.ca
NVML_CLOCK_SM = 1


class Nvml:
    """The two NVML readings this needs, through libnvidia-ml by ctypes (no pynvml on the GPU machine)."""

    def __init__(self, index=0):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        if self.lib.nvmlInit_v2() != 0:
            raise SystemExit("nvmlInit_v2 failed")
        self.h = ctypes.c_void_p()
        if self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.h)) != 0:
            raise SystemExit(f"no NVML device {index}")

    def energy_mj(self):
        e = ctypes.c_ulonglong()
        if self.lib.nvmlDeviceGetTotalEnergyConsumption(self.h, ctypes.byref(e)) != 0:
            raise SystemExit("nvmlDeviceGetTotalEnergyConsumption failed (not supported on this GPU?)")
        return e.value

    def sm_mhz(self):
        c = ctypes.c_uint()
        self.lib.nvmlDeviceGetClockInfo(self.h, NVML_CLOCK_SM, ctypes.byref(c))
        return c.value


def window(nv, launch, seconds, iters=20):
    """Back-to-back batches of `iters` launches for `seconds`: (batch ms per launch list, launches, mJ, seconds,
    SM clock samples)."""
    ca.synchronize()
    e0, t0 = nv.energy_mj(), time.time()
    ms, clocks, n = [], [], 0
    while time.time() - t0 < seconds:
        ms.append(cb.batch_ms(launch, iters))  # ends with a synchronize
        n += iters
        clocks.append(nv.sm_mhz())
    ca.synchronize()
    return ms, n, nv.energy_mj() - e0, time.time() - t0, clocks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--carry", default=os.path.join(cb.ROOT, ".carry", "gpu"))
    ap.add_argument("--case", action="append", default=[], help="a substring of the cases' labels (default: all fprop)")
    ap.add_argument("--seconds", type=float, default=1.0, help="length of one window")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    cc = ca.device_capability()
    nv = Nvml()
    print(f"conv_energy: {ca.device_name()} (sm_{cc}), torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    kernels, _ = ca.discover(a.carry, ["bench.list"])
    torch.backends.cudnn.benchmark = True
    for op, pr in cb.CASES:
        if op != "conv2d_fprop" or (a.case and not any(s in pr.label for s in a.case)):
            continue
        inputs, out_dims, cudnn = cb.case_operands(op, pr)
        launchers = [("cuDNN", cudnn)]
        for k in kernels:
            if k.arch != "sm90a" or not cb.fits(k, op, pr, cc):
                continue
            launch = cb.KdlLaunch(k, pr, 1, inputs, out_dims)
            if launch.can_implement() is None:
                launchers.append((k.name, launch))
        for _, f in launchers:
            for _ in range(20):
                f()
        ca.synchronize()
        got = {name: ([], 0, 0, 0.0, []) for name, _ in launchers}
        for _ in range(a.rounds):
            for name, f in launchers:
                ms, n, mj, s, clk = window(nv, f, a.seconds)
                o = got[name]
                got[name] = (o[0] + ms[len(ms) // 4:], o[1] + n, o[2] + mj, o[3] + s, o[4] + clk)
        print(f"== fprop {pr.label}: {a.rounds} rounds of {a.seconds:.1f} s windows per launcher, batches of 20")
        base = None
        for name, _ in launchers:
            ms, n, mj, s, clk = got[name]
            us = statistics.median(ms) * 1e3
            mj_per = mj / max(n, 1)
            mhz = statistics.median(clk) if clk else 0
            row = (us, mj_per, mj / 1e3 / max(s, 1e-9), mhz, us * mhz / 1e3)
            if base is None:
                base = row
            print(f"   {name:36s} {us:7.1f} us  {mj_per:6.1f} mJ/launch  {row[2]:5.0f} W  {mhz:5.0f} MHz  "
                  f"{row[4]:6.1f} k cycles   vs cuDNN: time {base[0] / us:.3f}x, energy {base[1] / mj_per:.3f}x, "
                  f"cycles {base[4] / max(row[4], 1e-9):.3f}x", flush=True)
        del launchers
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
