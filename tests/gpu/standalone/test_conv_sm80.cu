// Direct test of kdl::Conv2dSm80 (include/kdl/conv_sm80.cuh), without the generator: fprop, dgrad and
// wgrad on odd sizes, padding, strides, dilations, 1x1..7x7 filters, padded pixel / tap / image strides,
// serial split-K, against an fp64 CPU convolution. Inputs are small integers (exact in f16, products and
// sums exact in f32), so results must match exactly; outputs are poisoned (NaN) and the padding of
// padded strides must stay poisoned.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I include tests/gpu/standalone/test_conv_sm80.cu
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

#include "common.cuh"
#include "kdl/conv_sm80.cuh"
#ifdef KDL_TEST_SM90
#include "kdl/conv_sm90.cuh"
#endif

using kdl::ConvKind;
using Epi = TestEpilogue<float, float>;
template <ConvKind K, int FR = 0, int FS = 0, int SH = 0, int SW = 0, int TM = 128, int TN = 128, int WM = 2, int WN = 2>
using Conv = kdl::Conv2dSm80<K, half, 8, 8, float, TM, TN, 32, WM, WN, 3, FR, FS, SH, SW, Epi>;

struct Case {
  int n, h, w, c, k, r, s, ph, pw, sh, sw, dh, dw;
  bool padded;  // padded pixel / tap / image strides
  int split;
  bool channels_padded = false;  // padded pixel strides only (images back to back)
};

struct Tensors {
  // sizes
  int n, h, w, c, k, r, s, p, q;
  // strides (elements): activations pixel/image, filter tap/filter
  int64_t ldx, bsx, ldy, bsy, ldw, bsw;
  std::vector<float> X, Y, W;  // values (small integers), laid out with the strides
};

static float rnd(std::mt19937& g) { return (float)((int)(g() % 7) - 3); }

static std::vector<half> to_half(const std::vector<float>& v) {
  std::vector<half> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = __float2half(v[i]);
  return o;
}

template <class T>
static T* upload(const std::vector<T>& v) {
  T* d = nullptr;
  CK(cudaMalloc(&d, v.size() * sizeof(T) + 256));
  CK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// fp64 reference of the op's output, laid out with the output's strides (epilogue: + bias [channel] + residual).
template <ConvKind K>
static void reference(const Tensors& t, const Case& cs, const std::vector<float>& bias, const std::vector<float>& res,
                      std::vector<double>& out, int64_t ld, int64_t bs) {
  auto X = [&](int b, int y, int x, int ch) { return (double)t.X[b * t.bsx + ((int64_t)y * t.w + x) * t.ldx + ch]; };
  auto Y = [&](int b, int y, int x, int ch) { return (double)t.Y[b * t.bsy + ((int64_t)y * t.q + x) * t.ldy + ch]; };
  auto W = [&](int kk, int y, int x, int ch) { return (double)t.W[kk * t.bsw + ((int64_t)y * t.s + x) * t.ldw + ch]; };
  if (K == ConvKind::Fprop) {
    for (int b = 0; b < t.n; ++b)
      for (int p = 0; p < t.p; ++p)
        for (int q = 0; q < t.q; ++q)
          for (int kk = 0; kk < t.k; ++kk) {
            double a = 0;
            for (int r = 0; r < t.r; ++r)
              for (int s = 0; s < t.s; ++s) {
                const int y = p * cs.sh - cs.ph + r * cs.dh, x = q * cs.sw - cs.pw + s * cs.dw;
                if (y < 0 || y >= t.h || x < 0 || x >= t.w) continue;
                for (int ch = 0; ch < t.c; ++ch) a += X(b, y, x, ch) * W(kk, r, s, ch);
              }
            const int64_t o = b * bs + ((int64_t)p * t.q + q) * ld + kk;
            out[o] = a + bias[kk] + res[o];
          }
  } else if (K == ConvKind::Dgrad) {
    std::vector<double> acc((size_t)t.n * t.h * t.w * t.c, 0.0);
    for (int b = 0; b < t.n; ++b)
      for (int p = 0; p < t.p; ++p)
        for (int q = 0; q < t.q; ++q)
          for (int r = 0; r < t.r; ++r)
            for (int s = 0; s < t.s; ++s) {
              const int y = p * cs.sh - cs.ph + r * cs.dh, x = q * cs.sw - cs.pw + s * cs.dw;
              if (y < 0 || y >= t.h || x < 0 || x >= t.w) continue;
              for (int kk = 0; kk < t.k; ++kk) {
                const double dy = Y(b, p, q, kk);
                for (int ch = 0; ch < t.c; ++ch) acc[(((size_t)b * t.h + y) * t.w + x) * t.c + ch] += dy * W(kk, r, s, ch);
              }
            }
    for (int b = 0; b < t.n; ++b)
      for (int y = 0; y < t.h; ++y)
        for (int x = 0; x < t.w; ++x)
          for (int ch = 0; ch < t.c; ++ch) {
            const int64_t o = b * bs + ((int64_t)y * t.w + x) * ld + ch;
            out[o] = acc[(((size_t)b * t.h + y) * t.w + x) * t.c + ch] + bias[ch] + res[o];
          }
  } else {
    for (int kk = 0; kk < t.k; ++kk)
      for (int r = 0; r < t.r; ++r)
        for (int s = 0; s < t.s; ++s)
          for (int ch = 0; ch < t.c; ++ch) {
            double a = 0;
            for (int b = 0; b < t.n; ++b)
              for (int p = 0; p < t.p; ++p)
                for (int q = 0; q < t.q; ++q) {
                  const int y = p * cs.sh - cs.ph + r * cs.dh, x = q * cs.sw - cs.pw + s * cs.dw;
                  if (y < 0 || y >= t.h || x < 0 || x >= t.w) continue;
                  a += Y(b, p, q, kk) * X(b, y, x, ch);
                }
            const int64_t o = kk * ld + ((int64_t)r * t.s + s) * t.c + ch;
            out[o] = a + bias[kk] + res[o];
          }
  }
}

// The case with serial split-K: `slices`, at most the GEMM's k-tiles of `tile_k` output pixels (wgrad's K:
// can_implement refuses more slices than k-tiles).
static Case with_split(Case c, int slices, int tile_k) {
  const int p = (c.h + 2 * c.ph - c.dh * (c.r - 1) - 1) / c.sh + 1, q = (c.w + 2 * c.pw - c.dw * (c.s - 1) - 1) / c.sw + 1;
  c.split = std::min(slices, (c.n * p * q + tile_k - 1) / tile_k);
  return c;
}

template <ConvKind K, class C>
static bool run_case(const Case& cs, std::mt19937& g, const char* label) {
  Tensors t;
  t.n = cs.n; t.h = cs.h; t.w = cs.w; t.c = cs.c; t.k = cs.k; t.r = cs.r; t.s = cs.s;
  t.p = (cs.h + 2 * cs.ph - cs.dh * (cs.r - 1) - 1) / cs.sh + 1;
  t.q = (cs.w + 2 * cs.pw - cs.dw * (cs.s - 1) - 1) / cs.sw + 1;
  const int pad = cs.padded || cs.channels_padded ? 8 : 0;
  t.ldx = t.c + pad; t.bsx = (int64_t)t.h * t.w * t.ldx + (cs.padded ? 64 : 0);
  t.ldy = t.k + pad; t.bsy = (int64_t)t.p * t.q * t.ldy + (cs.padded ? 64 : 0);
  t.ldw = t.c + (K == ConvKind::Wgrad || C::kPackedFilterTaps ? 0 : pad); t.bsw = (int64_t)t.r * t.s * t.ldw + (cs.padded ? 16 : 0);
  t.X.assign((size_t)t.n * t.bsx, 0.f);
  t.Y.assign((size_t)t.n * t.bsy, 0.f);
  t.W.assign((size_t)t.k * t.bsw, 0.f);
  for (auto& v : t.X) v = rnd(g);
  for (auto& v : t.Y) v = rnd(g);
  for (auto& v : t.W) v = rnd(g);
  // The output and its strides.
  int64_t ld, bs;
  size_t out_elems;
  int channels;
  if (K == ConvKind::Fprop) { ld = t.ldy; bs = t.bsy; out_elems = (size_t)t.n * bs; channels = t.k; }
  else if (K == ConvKind::Dgrad) { ld = t.ldx; bs = t.bsx; out_elems = (size_t)t.n * bs; channels = t.c; }
  else { ld = t.bsw; bs = 0; out_elems = (size_t)t.k * t.bsw; channels = t.k; }
  std::vector<float> bias(channels), res(out_elems);
  for (auto& v : bias) v = rnd(g);
  for (auto& v : res) v = rnd(g);
  std::vector<double> want(out_elems, std::nan(""));
  reference<K>(t, cs, bias, res, want, ld, bs);

  half* dX = upload(to_half(t.X));
  half* dY = upload(to_half(t.Y));
  half* dW = upload(to_half(t.W));
  float* dBias = upload(bias);
  float* dRes = upload(res);
  std::vector<float> poison(out_elems);
  const uint32_t nan_bits = 0x7fc00001u;
  for (auto& v : poison) std::memcpy(&v, &nan_bits, 4);
  float* dOut = upload(poison);

  kdl::Conv2dProblem pr{};
  pr.n = t.n; pr.h = t.h; pr.w = t.w; pr.c = t.c; pr.k = t.k; pr.r = t.r; pr.s = t.s; pr.p = t.p; pr.q = t.q;
  pr.pad_h = cs.ph; pr.pad_w = cs.pw; pr.stride_h = cs.sh; pr.stride_w = cs.sw; pr.dil_h = cs.dh; pr.dil_w = cs.dw;
  pr.split_k = cs.split;
  pr.images_packed = cs.padded ? 0 : 1;  // the output and residual hold their images back to back unless padded
  if (K == ConvKind::Fprop) {
    pr.A = dX; pr.lda = t.ldx; pr.batch_stride_a = t.bsx;
    pr.B = dW; pr.ldb = t.ldw; pr.batch_stride_b = t.bsw;
  } else if (K == ConvKind::Dgrad) {
    pr.A = dY; pr.lda = t.ldy; pr.batch_stride_a = t.bsy;
    pr.B = dW; pr.ldb = t.ldw; pr.batch_stride_b = t.bsw;
  } else {
    pr.A = dY; pr.lda = t.ldy; pr.batch_stride_a = t.bsy;
    pr.B = dX; pr.ldb = t.ldx; pr.batch_stride_b = t.bsx;
  }
  typename Epi::Params ep{};
  ep.D = dOut; ep.ldd = ld; ep.batch_stride_D = bs;
  ep.C = dRes; ep.ldc = ld; ep.bsC = bs;
  if (K == ConvKind::Wgrad) ep.rowb = dBias;
  else { ep.bias = dBias; ep.bsBias = 0; }
  ep.alpha = 1.f; ep.beta = 1.f; ep.act = 0;
  bool ok = true;
  if (const char* e = C::can_implement(pr)) {
    printf("FAIL %-40s can_implement: %s\n", label, e);
    ok = false;
  } else {
    void* ws = nullptr;
    const size_t wsb = C::workspace_size(pr);
    if (wsb) CK(cudaMalloc(&ws, wsb));
    CK(C::run(pr, ep, ws, 0));
    CK(cudaDeviceSynchronize());
    std::vector<float> got(out_elems);
    CK(cudaMemcpy(got.data(), dOut, out_elems * sizeof(float), cudaMemcpyDeviceToHost));
    size_t bad = 0, checked = 0, touched = 0;
    for (size_t i = 0; i < out_elems; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &got[i], 4);
      if (std::isnan(want[i])) {
        if (bits != nan_bits) ++touched;
        continue;
      }
      ++checked;
      if (!(std::fabs((double)got[i] - want[i]) <= 1e-3 * (1 + std::fabs(want[i])))) {
        if (bad < 3) printf("   mismatch at %zu: got %g want %g\n", i, got[i], want[i]);
        ++bad;
      }
    }
    ok = bad == 0 && touched == 0 && checked > 0;
    printf("%s %-40s n%d h%d w%d c%d k%d r%d s%d pad%d,%d str%d,%d dil%d,%d%s split%d: %zu checked, %zu wrong, %zu padding "
           "written\n",
           ok ? "PASS" : "FAIL", label, cs.n, cs.h, cs.w, cs.c, cs.k, cs.r, cs.s, cs.ph, cs.pw, cs.sh, cs.sw, cs.dh, cs.dw,
           cs.padded ? " padded" : "", cs.split, checked, bad, touched);
    if (ws) cudaFree(ws);
  }
  cudaFree(dX); cudaFree(dY); cudaFree(dW); cudaFree(dBias); cudaFree(dRes); cudaFree(dOut);
  return ok;
}

int main(int argc, char** argv) {
  std::mt19937 g(1234);
#ifdef KDL_TEST_SM90
  if (argc == 14) {  // one sm90a case: n h w c k r s ph pw sh sw dh dw
    int v[13];
    for (int i = 0; i < 13; ++i) v[i] = atoi(argv[i + 1]);
    const Case c = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], false, 1};
    using S90 = kdl::Conv2dSm90Fprop<half, 128, 128, 4, kdl::Sm90Schedule::Cooperative, 0, 0, 0, 0, Epi>;
    return run_case<ConvKind::Fprop, S90>(c, g, "sm90a fprop 128x128 (one case)") ? 0 : 1;
  }
#endif
  const Case cases[] = {
      {3, 9, 11, 24, 40, 3, 3, 1, 1, 1, 1, 1, 1, false, 1},
      {2, 15, 13, 64, 72, 3, 3, 2, 2, 2, 2, 2, 2, true, 1},
      {1, 17, 19, 16, 136, 5, 5, 2, 2, 2, 2, 1, 1, false, 1},
      {2, 14, 14, 8, 24, 7, 7, 3, 3, 2, 2, 1, 1, true, 1},
      {4, 7, 7, 136, 64, 1, 1, 0, 0, 1, 1, 1, 1, false, 1},
      {2, 10, 9, 32, 48, 3, 3, 0, 1, 2, 1, 1, 2, true, 1},
      {2, 9, 9, 32, 40, 1, 1, 0, 0, 2, 2, 1, 1, false, 1},
      {5, 13, 12, 48, 200, 3, 3, 1, 1, 1, 1, 1, 1, true, 1},
      {2, 12, 12, 40, 24, 2, 3, 1, 0, 3, 2, 1, 1, false, 1},
  };
  int fails = 0, total = 0;
  for (const Case& c : cases) {
    fails += !run_case<ConvKind::Fprop, Conv<ConvKind::Fprop>>(c, g, "fprop 128x128");
    fails += !run_case<ConvKind::Dgrad, Conv<ConvKind::Dgrad>>(c, g, "dgrad 128x128");
    fails += !run_case<ConvKind::Wgrad, Conv<ConvKind::Wgrad>>(c, g, "wgrad 128x128");
    fails += !run_case<ConvKind::Wgrad, Conv<ConvKind::Wgrad>>(with_split(c, 3, 32), g, "wgrad 128x128 split 3");
    total += 4;
  }
  // Fixed filter / stride, another tile.
  const Case f3 = {3, 9, 11, 24, 40, 3, 3, 1, 1, 1, 1, 1, 1, true, 1};
  fails += !run_case<ConvKind::Fprop, Conv<ConvKind::Fprop, 3, 3, 1, 1>>(f3, g, "fprop fixed 3x3 s1");
  fails += !run_case<ConvKind::Dgrad, Conv<ConvKind::Dgrad, 3, 3, 1, 1, 64, 64, 2, 2>>(f3, g, "dgrad fixed 3x3 s1 64x64");
  const Case f2 = {2, 15, 13, 64, 72, 3, 3, 1, 1, 2, 2, 1, 1, false, 1};
  fails += !run_case<ConvKind::Dgrad, Conv<ConvKind::Dgrad, 3, 3, 2, 2>>(f2, g, "dgrad fixed 3x3 s2");
  fails += !run_case<ConvKind::Wgrad, Conv<ConvKind::Wgrad, 3, 3, 2, 2, 64, 128, 2, 2>>(f2, g, "wgrad fixed 3x3 s2 64x128");
  fails += !run_case<ConvKind::Fprop, Conv<ConvKind::Fprop, 0, 0, 0, 0, 128, 256, 2, 4>>(cases[7], g, "fprop 128x256 2x4");
  total += 5;
#ifdef KDL_TEST_SM90
  // The sm90a fprop (GemmSm90 + gather producer): c a multiple of 64, W's taps packed.
  using S90 = kdl::Conv2dSm90Fprop<half, 128, 128, 4, kdl::Sm90Schedule::Cooperative, 0, 0, 0, 0, Epi>;
  using S90w = kdl::Conv2dSm90Fprop<half, 128, 256, 3, kdl::Sm90Schedule::Cooperative, 3, 3, 1, 1, Epi>;
  using S90p = kdl::Conv2dSm90Fprop<half, 128, 128, 4, kdl::Sm90Schedule::Pingpong, 0, 0, 0, 0, Epi>;
  using S90g = kdl::Conv2dSm90Fprop<half, 128, 128, 4, kdl::Sm90Schedule::Cooperative, 0, 0, 0, 0, Epi, false>;
  const Case s90[] = {
      {3, 9, 11, 64, 40, 3, 3, 1, 1, 1, 1, 1, 1, false, 1},   {2, 15, 13, 128, 72, 3, 3, 2, 2, 2, 2, 2, 2, true, 1},
      {1, 17, 19, 64, 136, 5, 5, 2, 2, 2, 2, 1, 1, false, 1}, {2, 14, 14, 64, 24, 7, 7, 3, 3, 2, 2, 1, 1, true, 1},
      {4, 7, 7, 192, 64, 1, 1, 0, 0, 1, 1, 1, 1, false, 1},   {2, 10, 9, 64, 48, 3, 3, 0, 1, 2, 1, 1, 2, true, 1},
      {5, 13, 12, 64, 200, 3, 3, 1, 1, 1, 1, 1, 1, true, 1},  {2, 30, 31, 128, 264, 3, 3, 1, 1, 1, 1, 1, 1, true, 1},
      {2, 10, 9, 64, 48, 3, 3, 1, 0, 1, 1, 1, 1, true, 1},    {1, 20, 30, 64, 48, 5, 3, 2, 0, 3, 1, 1, 3, false, 1},
  };
  for (const Case& c : s90) {
    fails += !run_case<ConvKind::Fprop, S90>(c, g, "sm90a fprop 128x128");
    fails += !run_case<ConvKind::Fprop, S90p>(c, g, "sm90a fprop 128x128 pingpong");
    fails += !run_case<ConvKind::Fprop, S90g>(c, g, "sm90a fprop 128x128 thread gather");
    total += 3;
  }
  // The TMA loader (not the thread gather): c any multiple of 8 (a partial last channel block), W's taps
  // padded in the padded cases.
  const Case s90c[] = {
      {3, 9, 11, 24, 40, 3, 3, 1, 1, 1, 1, 1, 1, true, 1},    {2, 15, 13, 72, 72, 3, 3, 2, 2, 2, 2, 2, 2, true, 1},
      {1, 17, 19, 8, 136, 5, 5, 2, 2, 2, 2, 1, 1, false, 1},  {4, 7, 7, 136, 64, 1, 1, 0, 0, 1, 1, 1, 1, true, 1},
      {2, 10, 9, 40, 48, 3, 3, 0, 1, 2, 1, 1, 2, true, 1},    {2, 30, 31, 200, 264, 3, 3, 1, 1, 1, 1, 1, 1, false, 1},
  };
  for (const Case& c : s90c) {
    fails += !run_case<ConvKind::Fprop, S90>(c, g, "sm90a fprop 128x128 (c % 64 != 0)");
    fails += !run_case<ConvKind::Fprop, S90p>(c, g, "sm90a fprop 128x128 pingpong (c % 64 != 0)");
    total += 2;
  }
  const Case f90 = {3, 21, 23, 128, 300, 3, 3, 1, 1, 1, 1, 1, 1, true, 1};
  fails += !run_case<ConvKind::Fprop, S90w>(f90, g, "sm90a fprop fixed 3x3 s1 128x256");
  total += 1;
  // Clusters (2, 1): two CTAs on adjacent pixel tiles, each loading half of W's tile and multicasting it
  // (odd tile counts leave the second CTA of the last cluster past the end: it still loads its half).
  using S90c2 = kdl::Conv2dSm90Fprop<half, 128, 128, 4, kdl::Sm90Schedule::Cooperative, 0, 0, 0, 0, Epi, true, 2>;
  using S90pc2 = kdl::Conv2dSm90Fprop<half, 128, 128, 4, kdl::Sm90Schedule::Pingpong, 0, 0, 0, 0, Epi, true, 2>;
  using S90wc2 = kdl::Conv2dSm90Fprop<half, 64, 256, 4, kdl::Sm90Schedule::Pingpong, 3, 3, 1, 1, Epi, true, 2>;
  auto run_clusters = [&](const Case& c) {
    fails += !run_case<ConvKind::Fprop, S90c2>(c, g, "sm90a fprop 128x128 cluster 2x1");
    fails += !run_case<ConvKind::Fprop, S90pc2>(c, g, "sm90a fprop 128x128 pingpong cluster 2x1");
    total += 2;
  };
  for (const Case& c : s90) run_clusters(c);
  for (const Case& c : s90c) run_clusters(c);
  fails += !run_case<ConvKind::Fprop, S90wc2>(f90, g, "sm90a fprop fixed 3x3 s1 64x256 pingpong cluster 2x1");
  total += 1;
  // Clusters (1, 2): two CTAs on adjacent filter tiles, each loading half of X's pixels and multicasting them
  // (k not a multiple of two tiles leaves the second CTA of the last cluster past k: it still loads its half).
  using S90c12 = kdl::Conv2dSm90Fprop<half, 128, 128, 4, kdl::Sm90Schedule::Cooperative, 0, 0, 0, 0, Epi, true, 1, 2>;
  using S90pc12 = kdl::Conv2dSm90Fprop<half, 128, 128, 4, kdl::Sm90Schedule::Pingpong, 0, 0, 0, 0, Epi, true, 1, 2>;
  using S90pc22 = kdl::Conv2dSm90Fprop<half, 128, 64, 4, kdl::Sm90Schedule::Pingpong, 0, 0, 0, 0, Epi, true, 2, 2>;
  using S90wc12 = kdl::Conv2dSm90Fprop<half, 128, 128, 6, kdl::Sm90Schedule::Pingpong, 3, 3, 1, 1, Epi, true, 1, 2>;
  auto run_clusters_n = [&](const Case& c) {
    fails += !run_case<ConvKind::Fprop, S90c12>(c, g, "sm90a fprop 128x128 cluster 1x2");
    fails += !run_case<ConvKind::Fprop, S90pc12>(c, g, "sm90a fprop 128x128 pingpong cluster 1x2");
    fails += !run_case<ConvKind::Fprop, S90pc22>(c, g, "sm90a fprop 128x64 pingpong cluster 2x2");
    total += 3;
  };
  for (const Case& c : s90) run_clusters_n(c);
  for (const Case& c : s90c) run_clusters_n(c);
  fails += !run_case<ConvKind::Fprop, S90wc12>(f90, g, "sm90a fprop fixed 3x3 s1 128x128 pingpong cluster 1x2");
  total += 1;
  // The sm90a wgrad (GemmSm90 + ConvWgradLoader: dY tiled, X im2col, both MN-major): the same shapes,
  // unpacked images (padded: per-image k-tiles) and packed ones (k-tiles across images), with split-K.
  using W90 = kdl::Conv2dSm90Wgrad<half, 128, 128, 4, kdl::Sm90Schedule::Cooperative, 0, 0, 0, 0, Epi>;
  using W90p = kdl::Conv2dSm90Wgrad<half, 64, 128, 6, kdl::Sm90Schedule::Pingpong, 0, 0, 0, 0, Epi>;
  using W90w = kdl::Conv2dSm90Wgrad<half, 128, 256, 3, kdl::Sm90Schedule::Cooperative, 3, 3, 1, 1, Epi>;
  for (const Case& c : s90) {
    fails += !run_case<ConvKind::Wgrad, W90>(c, g, "sm90a wgrad 128x128");
    fails += !run_case<ConvKind::Wgrad, W90p>(c, g, "sm90a wgrad 64x128 pingpong");
    fails += !run_case<ConvKind::Wgrad, W90>(with_split(c, 3, 64), g, "sm90a wgrad 128x128 split 3");
    total += 3;
  }
  // The sm90a dgrad at unit stride (GemmSm90 + ConvDgradLoader: dY by im2col with W's taps flipped, W tiled
  // MN-major): c and k need not be multiples of 64; packed images (tiles across images) and padded ones.
  using D90 = kdl::Conv2dSm90Dgrad<half, 128, 128, 4, kdl::Sm90Schedule::Cooperative, 0, 0, 0, 0, Epi>;
  using D90p = kdl::Conv2dSm90Dgrad<half, 128, 128, 4, kdl::Sm90Schedule::Pingpong, 0, 0, 0, 0, Epi>;
  using D90w = kdl::Conv2dSm90Dgrad<half, 128, 256, 3, kdl::Sm90Schedule::Cooperative, 3, 3, 1, 1, Epi>;
  const Case d90[] = {
      {3, 9, 11, 64, 40, 3, 3, 1, 1, 1, 1, 1, 1, false, 1},  {2, 15, 13, 72, 128, 3, 3, 2, 2, 1, 1, 2, 2, true, 1},
      {1, 17, 19, 24, 136, 5, 5, 2, 2, 1, 1, 1, 1, false, 1}, {2, 14, 14, 64, 24, 7, 7, 3, 3, 1, 1, 1, 1, true, 1},
      {4, 7, 7, 192, 64, 1, 1, 0, 0, 1, 1, 1, 1, false, 1},   {2, 10, 9, 40, 48, 3, 3, 0, 1, 1, 1, 1, 2, true, 1},
      {2, 30, 31, 128, 264, 3, 3, 1, 1, 1, 1, 1, 1, true, 1}, {1, 20, 30, 64, 48, 5, 3, 2, 0, 1, 1, 1, 3, false, 1},
      {2, 12, 12, 16, 8, 3, 3, 0, 0, 1, 1, 1, 1, false, 1},   {1, 8, 8, 64, 64, 2, 2, 1, 1, 1, 1, 1, 1, false, 1},
  };
  for (const Case& c : d90) {
    fails += !run_case<ConvKind::Dgrad, D90>(c, g, "sm90a dgrad 128x128");
    fails += !run_case<ConvKind::Dgrad, D90p>(c, g, "sm90a dgrad 128x128 pingpong");
    total += 2;
  }
  // 1x1 filters, the memory-bound case where clusters along N pay even past k (docs/perf-notes.md v23): rows not a
  // multiple of the tile, a partial last channel block, padded pixel strides with packed images, strides above 1,
  // a fixed 1x1 filter; clusters (1, 2) (the second CTA past k for k <= TileN) and (2, 1).
  using P90 = kdl::Conv2dSm90Fprop<half, 256, 128, 4, kdl::Sm90Schedule::Cooperative, 1, 1, 0, 0, Epi>;
  using P90c12 = kdl::Conv2dSm90Fprop<half, 256, 128, 4, kdl::Sm90Schedule::Cooperative, 1, 1, 0, 0, Epi, true, 1, 2>;
  using P90n12 = kdl::Conv2dSm90Fprop<half, 256, 64, 4, kdl::Sm90Schedule::Cooperative, 1, 1, 0, 0, Epi, true, 1, 2>;
  using P90c21 = kdl::Conv2dSm90Fprop<half, 128, 128, 4, kdl::Sm90Schedule::Pingpong, 1, 1, 0, 0, Epi, true, 2, 1>;
  const Case pw[] = {
      {3, 13, 11, 72, 40, 1, 1, 0, 0, 1, 1, 1, 1, false, 1},  {1, 31, 33, 200, 264, 1, 1, 0, 0, 1, 1, 1, 1, false, 1},
      {5, 9, 7, 64, 136, 1, 1, 0, 0, 1, 1, 2, 2, false, 1},   {2, 17, 15, 136, 72, 1, 1, 0, 0, 1, 1, 1, 1, false, 1, true},
      {1, 1, 1, 8, 8, 1, 1, 0, 0, 1, 1, 1, 1, false, 1},      {2, 9, 9, 32, 40, 1, 1, 0, 0, 2, 2, 1, 1, false, 1},
      {3, 7, 9, 64, 40, 1, 1, 0, 0, 1, 2, 1, 1, false, 1},    {4, 7, 7, 136, 64, 1, 1, 0, 0, 1, 1, 1, 1, true, 1},
  };
  for (const Case& c : pw) {
    fails += !run_case<ConvKind::Fprop, P90>(c, g, "sm90a fprop 1x1 256x128");
    fails += !run_case<ConvKind::Fprop, P90c12>(c, g, "sm90a fprop 1x1 256x128 cluster 1x2");
    fails += !run_case<ConvKind::Fprop, P90n12>(c, g, "sm90a fprop 1x1 256x64 cluster 1x2");
    fails += !run_case<ConvKind::Fprop, P90c21>(c, g, "sm90a fprop 1x1 128x128 pingpong cluster 2x1");
    total += 4;
  }
  // dY's channels (k) must be a multiple of 8 here (TMA strides): f90's k = 300 becomes 296.
  Case fw = f90;
  fw.k = 296;
  fails += !run_case<ConvKind::Dgrad, D90w>(fw, g, "sm90a dgrad fixed 3x3 s1 128x256");
  total += 1;
  fails += !run_case<ConvKind::Wgrad, W90w>(fw, g, "sm90a wgrad fixed 3x3 s1 128x256");
  fw.padded = false;
  fw.split = 4;
  fails += !run_case<ConvKind::Wgrad, W90w>(fw, g, "sm90a wgrad fixed 3x3 s1 128x256 split 4");
  total += 2;
#endif
  printf("%s: %d of %d conv cases failed\n", fails ? "FAIL" : "PASS", fails, total);
  return fails ? 1 : 0;
}
