// include/kdl/runtime.h and include/kdl/per_device.h on the CPU (no GPU needed): the default
// driver provider compiles and links without libcuda, a host framework's provider replaces it and
// can be reset, the argument and shared-memory checks say what is wrong, and per-device set-up runs
// once per device from many threads.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kdl/conv_problem.h"
#include "kdl/fast_div.h"
#include "kdl/gemm_transposed.h"
#include "kdl/per_device.h"
#include "kdl/runtime.h"
#include "kdl/split_k.h"

namespace {
struct FakeDriver {
  std::vector<std::string> asked;  // "symbol@version user-ok"
  int encode = 0, error_string = 0, encode_im2col = 0;  // their addresses stand for the driver functions
};
FakeDriver g_driver;
void* fakeProvider(const char* symbol, unsigned int version, void* user) {
  auto* d = static_cast<FakeDriver*>(user);
  g_driver.asked.push_back(std::string(symbol) + "@" + std::to_string(version) + (d == &g_driver ? " user-ok" : " user-WRONG"));
  if (std::strcmp(symbol, "cuTensorMapEncodeTiled") == 0) return &d->encode;
  if (std::strcmp(symbol, "cuGetErrorString") == 0) return &d->error_string;
  if (std::strcmp(symbol, "cuTensorMapEncodeIm2col") == 0) return &d->encode_im2col;
  return nullptr;
}
}  // namespace

// kdl/fast_div.h: the sm90a kernel places its units with these divisions; any wrong quotient would put a
// tile in the wrong place. Every divisor up to 70000 against edge and random dividends, then random pairs
// over the whole int range.
TEST_CASE("FastDiv divides every non-negative int exactly") {
  std::mt19937 rng(20261125);
  long checked = 0, wrong = 0;
  auto check = [&](int d, int n) {
    const kdl::FastDiv f(d);
    int q = -1, r = -1;
    f.divmod(n, q, r);
    ++checked;
    if (q != n / d || r != n % d) {
      if (wrong++ < 5) FAIL_CHECK("n " << n << " / d " << d << ": got " << q << " rem " << r);
    }
  };
  for (int d = 1; d <= 70000; ++d) {
    for (long long n : {0LL, 1LL, d - 1LL, (long long)d, d + 1LL, 2LL * d - 1, 2LL * d, 2147483647LL - d, 2147483646LL, 2147483647LL})
      if (n >= 0 && n <= 2147483647LL) check(d, int(n));
    for (int i = 0; i < 8; ++i) check(d, int(rng() & 0x7fffffffu));
  }
  for (int i = 0; i < 1000000; ++i) {
    const int d = int(rng() & 0x7fffffffu);
    check(d < 1 ? 1 : d, int(rng() & 0x7fffffffu));
  }
  CHECK(wrong == 0);
  CHECK(checked > 2000000);
  // a divisor below 1 is taken as 1 (the host never passes one; the quotient stays defined)
  CHECK(kdl::FastDiv(0).div(12345) == 12345);
}

// kdl/split_k.h: the slices a serial(N) kernel runs for Arguments::split_k = 0.
TEST_CASE("split_k 0 chooses the slices by the wave count") {
  // The sm90a wgrad of the benchmark's first shape (256 x 2304 x 100352, 18 tiles of 256 x 128, 1568
  // k-tiles) on 132 SMs: 7 slices are one wave, 8 would be two.
  CHECK(kdl::choose_split_k(18, 1568, 8, 132) == 7);
  CHECK(kdl::choose_split_k(18, 1568, 16, 132) == 7);  // 14 is two waves of half the K: slower than 7
  CHECK(kdl::choose_split_k(18, 1568, 8, 144) == 8);   // a GPU with 144 SMs holds 8 in one wave
  CHECK(kdl::choose_split_k(18, 1568, 4, 132) == 4);   // capped by serial(N)
  // 36 tiles (128 x 128): 7 slices are two waves, which one-CTA-per-unit kernels (sm80) take and a
  // persistent one (sm90a) does not: its 3 slices fit one wave (0.20 against 0.26 ms measured).
  CHECK(kdl::choose_split_k(36, 1568, 8, 132) == 7);
  CHECK(kdl::choose_split_k(36, 1568, 8, 132, /*one_wave=*/true) == 3);
  CHECK(kdl::choose_split_k(18, 1568, 8, 132, true) == 7);
  CHECK(kdl::choose_split_k(200, 1568, 8, 132, true) == 1);  // more tiles than CTAs: no split fits
  // Problems that already fill the device do not split: 4096^3 in 128 x 256 tiles, 128 x 8192 x 8192
  // in 128 x 64 tiles.
  CHECK(kdl::choose_split_k(512, 64, 4, 132) == 1);
  CHECK(kdl::choose_split_k(128, 128, 4, 132) == 1);
  // Few tiles, long K: as many slices as allowed.
  CHECK(kdl::choose_split_k(4, 1024, 16, 132) == 16);
  // A short K pays for fewer partial sums: 40 k-tiles in 4 slices (10 + 3 x 2 partial adds), 2 or 3
  // k-tiles not at all.
  CHECK(kdl::choose_split_k(1, 40, 8, 132) == 4);
  CHECK(kdl::choose_split_k(1, 3, 8, 132) == 1);
  CHECK(kdl::choose_split_k(4, 2, 8, 132) == 1);
  // Nothing to choose from (no device: one slot; empty problems; serial(1)).
  CHECK(kdl::choose_split_k(18, 1568, 8, 1) == 1);
  CHECK(kdl::choose_split_k(0, 1568, 8, 132) == 1);
  CHECK(kdl::choose_split_k(18, 0, 8, 132) == 1);
  CHECK(kdl::choose_split_k(18, 1568, 1, 132) == 1);
  // Whatever the sizes, the choice is in range.
  for (long long tiles : {1LL, 7LL, 66LL, 133LL, 1000LL})
    for (long long kt : {1LL, 5LL, 64LL, 5000LL})
      for (int mx : {1, 2, 8, 64}) {
        const int s = kdl::choose_split_k(tiles, kt, mx, 132);
        CHECK(s >= 1);
        CHECK(s <= mx);
        CHECK(s <= kt);
        const int w = kdl::choose_split_k(tiles, kt, mx, 132, true);
        CHECK(w >= 1);
        CHECK(w <= mx);
        CHECK((w == 1 || tiles * w <= 132));
      }
}

// The memory term: a problem DRAM bounds does not split (kdl/split_k.h, SplitKMemory).
TEST_CASE("split_k 0 does not split a problem that DRAM bounds") {
  // Tensor rates known here: sm_90 (wgmma, and mma.sync at sm_80's rate) and sm_80; others leave the term out.
  CHECK(kdl::tensor_flops_per_clock_per_sm(9, 0, true, 16) == 4096);
  CHECK(kdl::tensor_flops_per_clock_per_sm(9, 0, true, 8) == 8192);
  CHECK(kdl::tensor_flops_per_clock_per_sm(9, 0, true, 32) == 2048);
  CHECK(kdl::tensor_flops_per_clock_per_sm(9, 0, false, 16) == 2048);
  CHECK(kdl::tensor_flops_per_clock_per_sm(8, 0, false, 32) == 1024);
  CHECK(kdl::tensor_flops_per_clock_per_sm(8, 0, true, 16) == 0);   // no wgmma on sm_80
  CHECK(kdl::tensor_flops_per_clock_per_sm(8, 6, false, 16) == 0);  // not known here
  CHECK(kdl::tensor_flops_per_clock_per_sm(9, 0, true, 4) == 0);
  // An H100 SXM as the CUDA runtime describes it: 132 SMs at 1980 MHz, HBM3 at 2619 MHz on 5120 bits.
  const double ridge = kdl::tensor_ridge(4096, 132, 1980000, 2619000, 5120);
  CHECK(ridge > 315);
  CHECK(ridge < 325);
  CHECK(kdl::tensor_ridge(0, 132, 1980000, 2619000, 5120) == 0);
  CHECK(kdl::tensor_ridge(4096, 132, 1980000, 0, 5120) == 0);
  auto mem = [&](double bytes, long long tiles, int tm, int tn, int tk) {
    return kdl::split_k_memory(bytes, tiles, tm, tn, tk, ridge);
  };
  const kdl::SplitKMemory m = kdl::split_k_memory(1e6, 64, 128, 128, 64, ridge);
  CHECK(m.partial_bytes == 2.0 * 64 * 128 * 128 * 4);
  CHECK(m.ktile_flops == 2.0 * 128 * 128 * 64);
  // 128 x 8192 x 8192 bf16 on a 128 x 128 x 64 serial(4) sm90a kernel: 64 tiles of 128 k-tiles. The wave
  // count alone takes 2 slices; reading B (128 MB) bounds it, and 1 slice measured faster (0.055
  // against 0.058 ms).
  const double small_m = kdl::gemm_unique_bytes(128, 8192, 8192, 1, 2, 2, 2);
  CHECK(small_m == 2.0 * (128.0 * 8192 + 8192.0 * 8192 + 128.0 * 8192));
  CHECK(kdl::choose_split_k(64, 128, 4, 132, true) == 2);
  CHECK(kdl::choose_split_k(64, 128, 4, 132, true, mem(small_m, 64, 128, 128, 64)) == 1);
  // The wgrad of the conv benchmark (N32 C256 56x56 K256 3x3, 18 tiles of 128 x 256, 1568 k-tiles):
  // its tensors are 104 MB (the im2col view would say 514), far under the multiply-adds; still 7.
  kdl::Conv2dProblem w{};
  w.n = 32, w.h = 56, w.w = 56, w.c = 256, w.k = 256, w.r = 3, w.s = 3, w.p = 56, w.q = 56;
  const double wgrad = kdl::conv_unique_bytes(w, 2);
  CHECK(wgrad == 2.0 * (32.0 * 56 * 56 * 256 * 2 + 256.0 * 9 * 256));
  CHECK(kdl::choose_split_k(18, 1568, 8, 132, true, mem(wgrad, 18, 128, 256, 64)) == 7);
  // Compute-bound with few tiles (1024 x 1024 x 16384 in 128 x 128 tiles: 64 tiles, 256 k-tiles): splits
  // as before.
  const double long_k = kdl::gemm_unique_bytes(1024, 1024, 16384, 1, 2, 2, 2);
  CHECK(kdl::choose_split_k(64, 256, 4, 132, true, mem(long_k, 64, 128, 128, 64)) == 2);
  CHECK(kdl::choose_split_k(64, 256, 8, 132, false, mem(long_k, 64, 128, 128, 64)) ==
        kdl::choose_split_k(64, 256, 8, 132, false));
  // No ridge (a device whose rates are not known): the wave count alone.
  kdl::SplitKMemory none = mem(small_m, 64, 128, 128, 64);
  none.ridge = 0;
  CHECK(kdl::choose_split_k(64, 128, 4, 132, true, none) == 2);
}

// Tiles in run-time order (kdl::GemmSm90's tickets) where DRAM bounds the problem: below half the ridge.
TEST_CASE("dynamic tile order only where DRAM bounds the problem") {
  const double ridge = kdl::tensor_ridge(4096, 132, 1980000, 2619000, 5120);  // the H100 above, ~320 FLOP/byte
  auto conv = [](int n, int c, int hw, int k, int rs) {
    kdl::Conv2dProblem p{};
    p.n = n, p.h = hw, p.w = hw, p.c = c, p.k = k, p.r = rs, p.s = rs, p.p = hw, p.q = hw;
    return p;
  };
  auto flops = [](const kdl::Conv2dProblem& p) { return 2.0 * p.n * p.p * p.q * p.k * p.r * p.s * p.c; };
  // The conv benchmark's 1x1 (N64 C128 112x112 K128): 64 FLOP per byte, its SMs ended 80-154 us apart.
  const kdl::Conv2dProblem pw = conv(64, 128, 112, 128, 1);
  CHECK(kdl::dynamic_order_pays(flops(pw), kdl::conv_unique_bytes(pw, 2), ridge, 3136, 132));
  // N128 C64 56x56 K64 3x3: 288 FLOP per byte, near the ridge: the fixed walk (tickets measured 0-3 % slower).
  const kdl::Conv2dProblem k64 = conv(128, 64, 56, 64, 3);
  CHECK_FALSE(kdl::dynamic_order_pays(flops(k64), kdl::conv_unique_bytes(k64, 2), ridge, 1568, 132));
  // ... which its implicit GEMM's bytes (X read r x s times) would have called DRAM-bound: GemmProblem::unique_bytes.
  CHECK(kdl::dynamic_order_pays(flops(k64), kdl::gemm_unique_bytes(128 * 56 * 56, 64, 9 * 64, 1, 2, 2, 2), ridge, 1568, 132));
  const kdl::Conv2dProblem big = conv(32, 256, 56, 256, 3);
  CHECK_FALSE(kdl::dynamic_order_pays(flops(big), kdl::conv_unique_bytes(big, 2), ridge, 784, 132));
  CHECK_FALSE(kdl::dynamic_order_pays(2.0 * 4096 * 4096 * 4096, kdl::gemm_unique_bytes(4096, 4096, 4096, 1, 2, 2, 2), ridge, 512, 132));
  // 128 x 8192 x 8192 is DRAM-bound, but in 128 x 64 tiles it is one wave (128 tiles): nothing to even out
  // (tickets measured 0.966x against 1.003x cuBLASLt); the same bytes in 1024 tiles would take them.
  const double small_m = kdl::gemm_unique_bytes(128, 8192, 8192, 1, 2, 2, 2);
  CHECK_FALSE(kdl::dynamic_order_pays(2.0 * 128 * 8192 * 8192, small_m, ridge, 128, 132));
  CHECK_FALSE(kdl::dynamic_order_pays(2.0 * 128 * 8192 * 8192, small_m, ridge, 527, 132));
  CHECK(kdl::dynamic_order_pays(2.0 * 128 * 8192 * 8192, small_m, ridge, 528, 132));
  // Unknown rates or an empty problem: the fixed walk.
  CHECK_FALSE(kdl::dynamic_order_pays(flops(pw), kdl::conv_unique_bytes(pw, 2), 0, 3136, 132));
  CHECK_FALSE(kdl::dynamic_order_pays(0, 1e6, ridge, 3136, 132));
  CHECK_FALSE(kdl::dynamic_order_pays(1e6, 0, ridge, 3136, 132));
  CHECK_FALSE(kdl::dynamic_order_pays(flops(pw), kdl::conv_unique_bytes(pw, 2), ridge, 3136, 0));
}

TEST_CASE("the default provider is cudaGetDriverEntryPointByVersion") {
  // Without a GPU (or driver) the lookup fails cleanly with nullptr; with one it finds the symbol.
  void* fn = kdl::default_driver_entry_point("cuDefinitelyNotADriverFunction", 12000, nullptr);
  CHECK(fn == nullptr);
}

TEST_CASE("a replaced provider is asked for each driver function and its answers are the table") {
  const kdl::DriverApi before = kdl::driver_api();  // the default provider's answers
  g_driver.asked.clear();
  kdl::set_driver_entry_point_provider(&fakeProvider, &g_driver);
  const kdl::DriverApi& api = kdl::driver_api();
  REQUIRE(g_driver.asked.size() == 3);
  CHECK(g_driver.asked[0] == "cuTensorMapEncodeTiled@12000 user-ok");
  CHECK(g_driver.asked[1] == "cuGetErrorString@12000 user-ok");
  CHECK(g_driver.asked[2] == "cuTensorMapEncodeIm2col@12000 user-ok");  // the sm90a conv's im2col loads
  CHECK(reinterpret_cast<void*>(api.cuTensorMapEncodeTiled) == &g_driver.encode);
  CHECK(reinterpret_cast<void*>(api.cuTensorMapEncodeIm2col) == &g_driver.encode_im2col);
  CHECK(reinterpret_cast<void*>(api.cuGetErrorString) == &g_driver.error_string);
  // resolved once per provider change, in every thread
  (void)kdl::driver_api();
  CHECK(g_driver.asked.size() == 3);
  void* seen_by_other_thread = nullptr;
  std::thread([&] { seen_by_other_thread = reinterpret_cast<void*>(kdl::driver_api().cuTensorMapEncodeTiled); }).join();
  CHECK(seen_by_other_thread == &g_driver.encode);

  // nullptr restores the default: the fake is not asked again and the table is the default's.
  const size_t asked = g_driver.asked.size();
  kdl::set_driver_entry_point_provider(nullptr);
  const kdl::DriverApi& restored = kdl::driver_api();
  CHECK(g_driver.asked.size() == asked);
  CHECK(reinterpret_cast<void*>(restored.cuTensorMapEncodeTiled) != &g_driver.encode);
  CHECK(reinterpret_cast<void*>(restored.cuGetErrorString) != &g_driver.error_string);
  CHECK(restored.cuTensorMapEncodeTiled == before.cuTensorMapEncodeTiled);
  CHECK(restored.cuGetErrorString == before.cuGetErrorString);
  CHECK(reinterpret_cast<void*>(restored.cuTensorMapEncodeTiled) ==
        kdl::default_driver_entry_point("cuTensorMapEncodeTiled", 12000, nullptr));
}

TEST_CASE("argument checks say what is wrong") {
  alignas(16) static char buf[64];
  CHECK(kdl::check_mainloop_operand<short>("k", "A", reinterpret_cast<short*>(buf), 64, 0, 8, 1) == nullptr);
  std::string m = kdl::check_mainloop_operand<short>("k", "A", reinterpret_cast<short*>(buf + 2), 64, 0, 8, 1);
  CHECK(m.find("16-byte aligned") != std::string::npos);
  m = kdl::check_mainloop_operand<short>("k", "A", reinterpret_cast<short*>(buf), 60, 0, 8, 1);
  CHECK(m.find("multiple of its alignment") != std::string::npos);
  m = kdl::check_mainloop_operand<short>("k", "A", reinterpret_cast<short*>(buf), 64, -8, 8, 2);
  CHECK(m == "k: batch_stride_A (-8) is negative");
  m = kdl::check_epilogue_tensor<float>("k", "D", nullptr, 8, 0, 4, 8, 1, false);
  CHECK(m == "k: D is null");
  CHECK(kdl::check_epilogue_tensor<float>("k", "C", nullptr, 8, 0, 4, 8, 1, true) == nullptr);
  // batches of a written tensor must not overlap; a read-only one may broadcast (stride 0)
  const float* f = reinterpret_cast<const float*>(buf);
  m = kdl::check_epilogue_tensor<float>("k", "D", f, 8, 0, 4, 8, 2, false, /*written=*/true);
  CHECK(m == "k: batch_stride_D (0) < (m-1)*ld + n = 32: the 2 batches of D would overwrite each other");
  CHECK(kdl::check_epilogue_tensor<float>("k", "D", f, 8, 32, 4, 8, 2, false, true) == nullptr);
  CHECK(kdl::check_epilogue_tensor<float>("k", "C", f, 8, 0, 4, 8, 2, true, false) == nullptr);
  m = kdl::check_epilogue_tensor<float>("k", "D", f, 8, INT64_MAX / 2, 4, 8, 3, false, true);
  CHECK(m.find("is too large: 3 batches overflow int64") != std::string::npos);
  // Column-major (m = 4 rows, n = 8 columns): ld >= m, one batch spans (n-1)*ld + m.
  m = kdl::check_epilogue_tensor<float>("k", "D", f, 3, 64, 4, 8, 1, false, true, /*col_major=*/true);
  CHECK(m == "k: ld of D (3) < m (4) for a column-major tensor");
  CHECK(kdl::check_epilogue_tensor<float>("k", "D", f, 4, 32, 4, 8, 2, false, true, true) == nullptr);
  m = kdl::check_epilogue_tensor<float>("k", "D", f, 4, 31, 4, 8, 2, false, true, true);
  CHECK(m == "k: batch_stride_D (31) < (n-1)*ld + m = 32: the 2 batches of D would overwrite each other");
  m = kdl::check_epilogue_tensor<float>("k", "D", f, 4, 8, 4, 8, 1, false, true, false);
  CHECK(m == "k: ld of D (4) < n (8) for a row-major tensor");
  CHECK(kdl::row_major_extent(3, 5, 8) == 21);
  CHECK(kdl::row_major_extent(3, 5, INT64_MAX / 2) == -1);
}

TEST_CASE("the shared-memory check names the kernel and both byte counts") {
  CHECK(kdl::smem_limit_message("big", 101376, 101376, 0) == nullptr);
  // an sm80 kernel with 147 KB on an sm86 GPU (99 KB opt-in)
  const std::string m = kdl::smem_limit_message("big", 150528, 101376, 1);
  CHECK(m == "big: needs 150528 bytes of shared memory per block; device 1 allows at most 101376");
}

TEST_CASE("per-device set-up runs once per device, from many threads, until it succeeds") {
  static kdl::PerDeviceOnce once;
  std::atomic<int> calls0{0}, calls1{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      const int dev = t % 2;
      for (int i = 0; i < 100; ++i) {
        const cudaError_t e = once.run(dev, [&] {
          (dev ? calls1 : calls0).fetch_add(1);
          return cudaSuccess;
        });
        CHECK(e == cudaSuccess);
      }
    });
  for (std::thread& t : threads) t.join();
  CHECK(calls0 == 1);  // device 0 set up once
  CHECK(calls1 == 1);  // and device 1 separately, not skipped because device 0 was done

  // a failure is returned and retried
  kdl::PerDeviceOnce flaky;
  int tries = 0;
  CHECK(flaky.run(3, [&] { return ++tries == 1 ? cudaErrorInvalidValue : cudaSuccess; }) == cudaErrorInvalidValue);
  CHECK(flaky.run(3, [&] { return ++tries == 1 ? cudaErrorInvalidValue : cudaSuccess; }) == cudaSuccess);
  CHECK(flaky.run(3, [&] { return ++tries, cudaErrorInvalidValue; }) == cudaSuccess);
  CHECK(tries == 2);

  // answers are kept per device, both yes and no
  kdl::PerDeviceAnswer answer;
  int asked = 0;
  CHECK(answer.get(0, [&] { return ++asked, true; }));
  CHECK(!answer.get(1, [&] { return ++asked, false; }));
  CHECK(answer.get(0, [&] { return ++asked, false; }));
  CHECK(!answer.get(1, [&] { return ++asked, true; }));
  CHECK(asked == 2);
}

TEST_CASE("a column-major D's transposed problem, and the template's words in the caller's names") {
  kdl::GemmProblem p{};
  p.m = 3, p.n = 5, p.k = 7, p.batch = 2, p.split_k = 1;
  int a = 0, b = 0;
  const float sa = 0, sb = 0;
  p.A = &a, p.lda = 7, p.batch_stride_a = 21;
  p.B = &b, p.ldb = 8, p.batch_stride_b = 40;
  p.scale_a = &sa, p.ld_scale_a = 3, p.batch_stride_scale_a = 3;
  p.scale_b = &sb, p.ld_scale_b = 1, p.batch_stride_scale_b = 1;
  const kdl::GemmProblem t = kdl::transposed_problem(p);
  CHECK((t.m == 5 && t.n == 3 && t.k == 7 && t.batch == 2 && t.split_k == 1));
  CHECK((t.A == &b && t.lda == 8 && t.batch_stride_a == 40 && t.B == &a && t.ldb == 7 && t.batch_stride_b == 21));
  CHECK((t.scale_a == &sb && t.ld_scale_a == 1 && t.scale_b == &sa && t.ld_scale_b == 3));
  char out[160];
  kdl::caller_words("kdl gemm sm90: lda (56) < k (64) for row-major A", out, sizeof(out));
  CHECK(std::string(out) == "kdl gemm sm90: ldb (56) < k (64) for column-major B");
  kdl::caller_words("problem too large (m=5, n=3); batch_stride_A is 0, ld_scale_B < ceil(n / 128), AlignA", out,
                    sizeof(out));
  CHECK(std::string(out) == "problem too large (n=5, m=3); batch_stride_B is 0, ld_scale_A < ceil(m / 128), AlignB");
  kdl::caller_words("must be a multiple of 16 bytes for TMA", out, sizeof(out));  // nothing to swap
  CHECK(std::string(out) == "must be a multiple of 16 bytes for TMA");
  kdl::caller_words("row-major A", out, 6);  // truncated to the buffer
  CHECK(std::string(out) == "colum");
}
