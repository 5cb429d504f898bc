// kdl/split_k.h -- the serial split-K slice count a kernel runs when its Arguments::split_k is 0.
//
// A kernel with `split_k = serial(N)` runs 1..N slices per output tile; 0 asks the kernel to choose
// for the problem and the device. The choice is a wave count: `units` = tiles x slices are spread
// over the CTAs the device holds at once (`slots`), so 18 tiles in 8 slices on 132 SMs take two
// waves of 1/8 of K each, 7 slices one wave of 1/7 (docs/perf-notes.md v25: the sm90a wgrad of
// the benchmark's first shape, 0.30 against 0.17 ms). Estimated time of S slices, in k-tiles:
//
//   max(waves(S) x (ceil(ktiles / S) + kReduceKtiles x (S - 1)),  memory(S)),
//   waves(S) = ceil(tiles x S / slots)
//
// where the first term's second part is the last slice adding the others' f32 partial tiles, and
// memory(S) is the time DRAM needs for the problem's bytes (each operand read once, the output written
// once, plus the partial tiles of S - 1 slices), in the same k-tiles: bytes x ridge / (slots x a
// k-tile's FLOP), `ridge` being the device's tensor FLOP/s over its DRAM bytes/s for the kernel's MMA
// (SplitKMemory; left out, 0, where the device's rates are not known here). A problem that DRAM bounds
// gains nothing from more slices: 128 x 8192 x 8192 on a 128 x 128 serial(4) sm90a kernel, 64 tiles on
// 132 SMs, ran 1 slice in 0.055 ms and 2 in 0.058 (docs/perf-notes.md v26). A larger S is taken only
// when it is at least 3 % faster than the best smaller one. A persistent kernel (GemmSm90: each
// CTA walks its units in turn, and a tile's last slice waits for the others) takes only splits that
// fit one wave: with two, a CTA whose unit waits for a slice of the second wave idles for a whole
// unit (the sm90a wgrad in 128 x 128 tiles, 36 of them on 132 SMs: 3 slices 0.20 ms, 7 slices in two
// waves 0.26 ms; the sm80 kernels, one CTA per unit, run 7 in 0.48 ms against 3 in 0.56).
// Deterministic: the same problem on the same device always gets the same count (and so the same
// summation order).
#pragma once

namespace kdl {

// Time of adding one partial tile, in k-tiles of the mainloop (a TileM x TileN f32 tile read from L2
// against a k-tile's loads and multiply-adds: about two).
inline constexpr double kSplitKReduceKtiles = 2.0;

// The memory term of choose_split_k. bytes: the problem's unique DRAM bytes (operands read once, the
// output written once; a convolution counts its tensors, not the implicit GEMM's im2col view, which
// repeats X r x s times); partial_bytes: what each slice beyond the first adds (an f32 partial tile per
// output tile, written and read); ktile_flops: 2 x TileM x TileN x TileK; ridge: the device's tensor
// FLOP/s over its DRAM bytes/s for the kernel's MMA (tensor_flops_per_clock_per_sm, kdl/per_device.h's
// tensor_ridge_on_device), 0 for no memory term. split_k_memory builds one for a kernel's tiles.
struct SplitKMemory {
  double bytes = 0, partial_bytes = 0, ktile_flops = 0, ridge = 0;
};

// The memory term of a kernel with TileM x TileN x TileK tiles: `tiles` output tiles, each slice beyond
// the first adding an f32 partial tile per output tile, written and read.
inline SplitKMemory split_k_memory(double bytes, long long tiles, int tile_m, int tile_n, int tile_k, double ridge) {
  SplitKMemory m;
  m.bytes = bytes;
  m.partial_bytes = 2.0 * double(tiles) * tile_m * tile_n * 4;
  m.ktile_flops = 2.0 * tile_m * tile_n * tile_k;
  m.ridge = ridge;
  return m;
}

// Dense tensor-core FLOP per clock and SM of an MMA on a device of compute capability major.minor
// (operand_bits: 16 for f16 / bf16, 8 for fp8 / s8, 32 for tf32); 0 where not known here (the
// memory term is then left out). The mma.sync figures on 9.0 are the sm80 rates: H100 runs mma.sync
// faster than that, but not at wgmma's rate, and a lower rate only makes the split count less cautious.
inline double tensor_flops_per_clock_per_sm(int major, int minor, bool wgmma, int operand_bits) {
  const int shift = operand_bits == 8 ? 1 : operand_bits == 16 ? 0 : operand_bits == 32 ? -1 : 99;
  if (shift == 99) return 0;
  double base = 0;  // 16-bit operands
  if (major == 9 && minor == 0) base = wgmma ? 4096 : 2048;
  else if (major == 8 && minor == 0 && !wgmma) base = 2048;
  return shift >= 0 ? base * (1 << shift) : base / 2;
}

// The device's tensor FLOP/s over DRAM bytes/s: SMs x clock x rate over memory clock x 2 (DDR) x bus
// bytes; 0 when any of them is unknown.
inline double tensor_ridge(double flops_per_clock_per_sm, int sms, double clock_khz, double mem_clock_khz,
                           int bus_bits) {
  if (flops_per_clock_per_sm <= 0 || sms <= 0 || clock_khz <= 0 || mem_clock_khz <= 0 || bus_bits <= 0) return 0;
  return flops_per_clock_per_sm * sms * clock_khz / (mem_clock_khz * 2.0 * (bus_bits / 8.0));
}

// A GEMM's unique bytes: A (m x k), B (k x n) read once, D (m x n) written once, per batch.
inline double gemm_unique_bytes(long long m, long long n, long long k, long long batch, int a_bytes, int b_bytes,
                                int d_bytes) {
  return double(batch) * (double(m) * k * a_bytes + double(k) * n * b_bytes + double(m) * n * d_bytes);
}

// Whether a persistent kernel should take its tiles in run-time order (an atomic ticket per tile) rather
// than a fixed walk: when the problem is DRAM-bound -- flops / bytes below half the device's ridge (tensor
// FLOP/s over DRAM bytes/s) -- the SMs move bytes at different rates and a fixed walk leaves the faster ones
// idle at the end; and when each of the `walkers` CTAs has at least 4 of the `tiles` to walk (with fewer
// there is nothing to even out, and the counter's reset and the first ticket cost 2-4 % of a short launch:
// 128 x 8192 x 8192 in 128 tiles). kdl::GemmSm90; docs/perf-notes.md v30. False when a figure is not positive.
inline bool dynamic_order_pays(double flops, double bytes, double ridge, long long tiles, long long walkers) {
  return flops > 0 && bytes > 0 && ridge > 0 && walkers > 0 && tiles >= 4 * walkers && flops < 0.5 * ridge * bytes;
}

// Slices (1..max_split, at most ktiles) for `tiles` output tiles (batch included) of `ktiles` k-tiles
// each on a device that runs `slots` CTAs of the kernel at once; one_wave: only splits whose units
// fit in one wave (persistent kernels); mem: the memory term (none by default). 1 when any size is
// not positive.
inline int choose_split_k(long long tiles, long long ktiles, int max_split, long long slots, bool one_wave = false,
                          const SplitKMemory& mem = SplitKMemory{}) {
  if (tiles < 1 || ktiles < 1 || slots < 1 || max_split <= 1) return 1;
  const bool memory = mem.ridge > 0 && mem.ktile_flops > 0 && mem.bytes > 0;
  auto cost = [&](long long s) {
    const long long waves = (tiles * s + slots - 1) / slots;
    const double compute = double(waves) * (double((ktiles + s - 1) / s) + kSplitKReduceKtiles * double(s - 1));
    if (!memory) return compute;
    const double bytes = mem.bytes + double(s - 1) * mem.partial_bytes;
    const double dram = bytes * mem.ridge / (double(slots) * mem.ktile_flops);
    return compute > dram ? compute : dram;
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
