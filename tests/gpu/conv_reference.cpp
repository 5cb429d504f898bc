#include "tests/gpu/conv_reference.h"

#include <algorithm>
#include <thread>

namespace kdl::gputest {

int64_t convOutputSize(int64_t in, int pad, int dil, int64_t filter, int stride) {
  const int64_t span = (int64_t)dil * (filter - 1) + 1;
  if (stride < 1 || in + 2 * (int64_t)pad < span) return 0;
  return (in + 2 * (int64_t)pad - span) / stride + 1;
}

int64_t ConvDims::p() const { return convOutputSize(h, pad_h, dil_h, r, stride_h); }
int64_t ConvDims::q() const { return convOutputSize(w, pad_w, dil_w, s, stride_w); }

namespace {

template <class F>
void forEachParallel(int64_t count, int threads, F&& body) {
  threads = (int)std::max<int64_t>(1, std::min<int64_t>(threads, count));
  if (threads == 1) {
    for (int64_t i = 0; i < count; ++i) body(i);
    return;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t i = t; i < count; i += threads) body(i);
    });
  for (auto& th : pool) th.join();
}

// The valid elements of an activation as a dense fp64 array [n][rows][cols][channels].
std::vector<double> dense(const ActView& v, int64_t n, int64_t rows, int64_t cols, int64_t channels) {
  std::vector<double> out((size_t)(n * rows * cols * channels));
  size_t i = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < rows; ++y)
      for (int64_t x = 0; x < cols; ++x)
        for (int64_t ch = 0; ch < channels; ++ch) out[i++] = v.at(b, y, x, ch);
  return out;
}

// The source pixel of output pixel (p, q) under tap (r, s) along one axis; -1 when it lies in the padding.
int64_t sourceOf(int64_t o, int64_t tap, int stride, int pad, int dil, int64_t extent) {
  const int64_t i = o * stride - pad + tap * dil;
  return i >= 0 && i < extent ? i : -1;
}

}  // namespace

std::vector<double> convFpropReference(const ConvDims& d, const ActView& X, const FilterView& W, int threads) {
  const int64_t P = d.p(), Q = d.q();
  const std::vector<double> x = dense(X, d.n, d.h, d.w, d.c);
  std::vector<double> wt((size_t)(d.k * d.r * d.s * d.c));  // [k][r][s][c]
  for (int64_t k = 0; k < d.k; ++k)
    for (int64_t r = 0; r < d.r; ++r)
      for (int64_t s = 0; s < d.s; ++s)
        for (int64_t c = 0; c < d.c; ++c) wt[(size_t)(((k * d.r + r) * d.s + s) * d.c + c)] = W.at(k, r, s, c);
  std::vector<double> acc((size_t)(d.n * P * Q * d.k), 0.0);
  forEachParallel(d.n * P, threads, [&](int64_t np) {
    const int64_t n = np / P, p = np % P;
    for (int64_t q = 0; q < Q; ++q)
      for (int64_t k = 0; k < d.k; ++k) {
        double sum = 0;
        for (int64_t r = 0; r < d.r; ++r) {
          const int64_t y = sourceOf(p, r, d.stride_h, d.pad_h, d.dil_h, d.h);
          if (y < 0) continue;
          for (int64_t s = 0; s < d.s; ++s) {
            const int64_t xx = sourceOf(q, s, d.stride_w, d.pad_w, d.dil_w, d.w);
            if (xx < 0) continue;
            const double* xs = x.data() + ((n * d.h + y) * d.w + xx) * d.c;
            const double* ws = wt.data() + ((k * d.r + r) * d.s + s) * d.c;
            for (int64_t c = 0; c < d.c; ++c) sum += xs[c] * ws[c];
          }
        }
        acc[(size_t)(((n * P + p) * Q + q) * d.k + k)] = sum;
      }
  });
  return acc;
}

std::vector<double> convDgradReference(const ConvDims& d, const ActView& dY, const FilterView& W, int threads) {
  const int64_t P = d.p(), Q = d.q();
  const std::vector<double> dy = dense(dY, d.n, P, Q, d.k);
  std::vector<double> wt((size_t)(d.r * d.s * d.c * d.k));  // [r][s][c][k]: the k walk contiguous
  for (int64_t k = 0; k < d.k; ++k)
    for (int64_t r = 0; r < d.r; ++r)
      for (int64_t s = 0; s < d.s; ++s)
        for (int64_t c = 0; c < d.c; ++c) wt[(size_t)(((r * d.s + s) * d.c + c) * d.k + k)] = W.at(k, r, s, c);
  std::vector<double> acc((size_t)(d.n * d.h * d.w * d.c), 0.0);
  // Output pixel p reaches input row h through tap r when h = p * stride - pad + r * dil.
  auto outputOf = [](int64_t i, int64_t tap, int stride, int pad, int dil, int64_t extent) -> int64_t {
    const int64_t num = i + pad - tap * dil;
    if (num < 0 || num % stride != 0) return -1;
    const int64_t o = num / stride;
    return o < extent ? o : -1;
  };
  forEachParallel(d.n * d.h, threads, [&](int64_t nh) {
    const int64_t n = nh / d.h, h = nh % d.h;
    for (int64_t w = 0; w < d.w; ++w)
      for (int64_t c = 0; c < d.c; ++c) {
        double sum = 0;
        for (int64_t r = 0; r < d.r; ++r) {
          const int64_t p = outputOf(h, r, d.stride_h, d.pad_h, d.dil_h, P);
          if (p < 0) continue;
          for (int64_t s = 0; s < d.s; ++s) {
            const int64_t q = outputOf(w, s, d.stride_w, d.pad_w, d.dil_w, Q);
            if (q < 0) continue;
            const double* ys = dy.data() + ((n * P + p) * Q + q) * d.k;
            const double* ws = wt.data() + ((r * d.s + s) * d.c + c) * d.k;
            for (int64_t k = 0; k < d.k; ++k) sum += ys[k] * ws[k];
          }
        }
        acc[(size_t)(((n * d.h + h) * d.w + w) * d.c + c)] = sum;
      }
  });
  return acc;
}

std::vector<double> convWgradReference(const ConvDims& d, const ActView& dY, const ActView& X, int threads) {
  const int64_t P = d.p(), Q = d.q();
  const std::vector<double> dy = dense(dY, d.n, P, Q, d.k);
  const std::vector<double> x = dense(X, d.n, d.h, d.w, d.c);
  std::vector<double> acc((size_t)(d.k * d.r * d.s * d.c), 0.0);
  forEachParallel(d.k * d.r * d.s, threads, [&](int64_t krs) {
    const int64_t k = krs / (d.r * d.s), r = (krs / d.s) % d.r, s = krs % d.s;
    double* out = acc.data() + krs * d.c;
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t p = 0; p < P; ++p) {
        const int64_t y = sourceOf(p, r, d.stride_h, d.pad_h, d.dil_h, d.h);
        if (y < 0) continue;
        for (int64_t q = 0; q < Q; ++q) {
          const int64_t xx = sourceOf(q, s, d.stride_w, d.pad_w, d.dil_w, d.w);
          if (xx < 0) continue;
          const double g = dy[(size_t)(((n * P + p) * Q + q) * d.k + k)];
          const double* xs = x.data() + ((n * d.h + y) * d.w + xx) * d.c;
          for (int64_t c = 0; c < d.c; ++c) out[c] += g * xs[c];
        }
      }
  });
  return acc;
}

}  // namespace kdl::gputest
