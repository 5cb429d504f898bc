// kdl/split_k.h -- the serial split-K slice count a kernel runs when its Arguments::split_k is 0.
//
// A kernel with `split_k = serial(N)` runs 1..N slices per output tile; 0 asks the kernel to choose
// for the problem and the device. The choice is a wave count: `units` = tiles x slices are spread
// over the CTAs the device holds at once (`slots`), so 18 tiles in 8 slices on 132 SMs take two
// waves of 1/8 of K each, 7 slices one wave of 1/7 (docs/perf-notes.md v25: the sm90a wgrad of
// the benchmark's first shape, 0.30 against 0.17 ms). Estimated time of S slices, in k-tiles:
//
//   waves(S) x (ceil(ktiles / S) + kReduceKtiles x (S - 1)),  waves(S) = ceil(tiles x S / slots)
//
// where the second term is the last slice adding the others' f32 partial tiles. A larger S is taken
// only when it is at least 3 % faster than the best smaller one. A persistent kernel (GemmSm90: each
// CTA walks its units in turn, and a tile's last slice waits for the others) takes only splits that
// fit one wave: with two, a CTA whose unit waits for a slice of the second wave idles for a whole
// unit (the sm90a wgrad in 128 x 128 tiles, 36 of them on 132 SMs: 3 slices 0.20 ms, 7 slices in two
// waves 0.26 ms; the sm80 kernels, one CTA per unit, run 7 in 0.48 ms against 3 in 0.56).
// Deterministic: the same problem on the same device always gets the same count (and so the same
// summation order). Not modelled: DRAM bandwidth. A shape bound by it can split where one slice is as
// fast (128 x 8192 x 8192 on a 128 x 128 serial(4) sm90a kernel: 2 slices 0.058 ms, 1 slice 0.055).
#pragma once

namespace kdl {

// Time of adding one partial tile, in k-tiles of the mainloop (a TileM x TileN f32 tile read from L2
// against a k-tile's loads and multiply-adds: about two).
inline constexpr double kSplitKReduceKtiles = 2.0;

// Slices (1..max_split, at most ktiles) for `tiles` output tiles (batch included) of `ktiles` k-tiles
// each on a device that runs `slots` CTAs of the kernel at once; one_wave: only splits whose units
// fit in one wave (persistent kernels). 1 when any size is not positive.
inline int choose_split_k(long long tiles, long long ktiles, int max_split, long long slots, bool one_wave = false) {
  if (tiles < 1 || ktiles < 1 || slots < 1 || max_split <= 1) return 1;
  auto cost = [&](long long s) {
    const long long waves = (tiles * s + slots - 1) / slots;
    return double(waves) * (double((ktiles + s - 1) / s) + kSplitKReduceKtiles * double(s - 1));
  };
  int best = 1;
  double best_cost = cost(1);
  for (int s = 2; s <= max_split && s <= ktiles; ++s) {
    if (tiles * s > 0x7fffffffLL) break;  // the kernels index units in 32 bits
    if (one_wave && tiles * s > slots) break;
    const double c = cost(s);
    if (c < 0.97 * best_cost) {
      best = s;
      best_cost = c;
    }
  }
  return best;
}

}  // namespace kdl
