#include "tests/gpu/reference.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>

namespace kdl::gputest {
namespace {

// A binary floating-point format: mantissa bits (without the hidden one), the smallest normal
// exponent, the exponent bias, the largest finite value, and what overflow does.
struct FloatFormat {
  int mbits;
  int emin;
  int bias;
  double maxFinite;
  bool saturate;  // fp8 __NV_SATFINITE: overflow -> +-max; else overflow -> +-inf
  bool hasInf;
};
constexpr FloatFormat kF16{10, -14, 15, 65504.0, false, true};
constexpr FloatFormat kBf16{7, -126, 127, 3.38953138925153547590470800371487866880e38, false, true};
constexpr FloatFormat kE4m3{3, -6, 7, 448.0, true, false};
constexpr FloatFormat kE5m2{2, -14, 15, 57344.0, true, true};

// x rounded to the format, round-to-nearest-even (the rounding mode of the host is RNE).
double roundToFormat(const FloatFormat& f, double x) {
  if (std::isnan(x) || x == 0) return x;
  if (std::isinf(x)) return f.saturate ? std::copysign(f.maxFinite, x) : x;
  const double a = std::fabs(x);
  int ex;
  std::frexp(a, &ex);  // a = frac * 2^ex, frac in [0.5, 1)
  const int e = std::max(ex - 1, f.emin);
  const double quantum = std::ldexp(1.0, e - f.mbits);
  double r = std::nearbyint(a / quantum) * quantum;
  if (r > f.maxFinite) r = f.saturate ? f.maxFinite : std::numeric_limits<double>::infinity();
  return std::copysign(r, x);
}

uint32_t encodeFormat(const FloatFormat& f, double x, int totalBits) {
  const int ebits = totalBits - 1 - f.mbits;
  const uint32_t sign = std::signbit(x) ? 1u << (totalBits - 1) : 0u;
  if (std::isnan(x)) {
    if (!f.hasInf) return sign | ((1u << (totalBits - 1)) - 1);  // e4m3: S.1111.111
    return ((1u << ebits) - 1) << f.mbits | (1u << (f.mbits - 1));
  }
  const double r = roundToFormat(f, x);
  const double a = std::fabs(r);
  if (std::isinf(a)) return sign | ((1u << ebits) - 1) << f.mbits;
  if (a == 0) return sign;
  int ex;
  std::frexp(a, &ex);
  const int e = ex - 1;
  if (e < f.emin) {  // subnormal
    const uint32_t mant = (uint32_t)std::llround(std::ldexp(a, f.mbits - f.emin));
    return sign | mant;
  }
  const uint32_t mant = (uint32_t)std::llround(std::ldexp(a, f.mbits - e)) - (1u << f.mbits);
  return sign | (uint32_t)(e + f.bias) << f.mbits | mant;
}

double decodeFormat(const FloatFormat& f, uint32_t bits, int totalBits) {
  const int ebits = totalBits - 1 - f.mbits;
  const bool neg = (bits >> (totalBits - 1)) & 1u;
  const uint32_t exp = (bits >> f.mbits) & ((1u << ebits) - 1);
  const uint32_t mant = bits & ((1u << f.mbits) - 1);
  double v;
  if (exp == (1u << ebits) - 1 && f.hasInf) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (!f.hasInf && exp == (1u << ebits) - 1 && mant == (1u << f.mbits) - 1) {
    v = std::numeric_limits<double>::quiet_NaN();  // e4m3
  } else if (exp == 0) {
    v = std::ldexp((double)mant, f.emin - f.mbits);
  } else {
    v = std::ldexp((double)(mant | (1u << f.mbits)), (int)exp - f.bias - f.mbits);
  }
  return neg ? -v : v;
}

double roundInt(double x, double lo, double hi) {
  if (std::isnan(x)) return 0;
  const double r = std::nearbyint(x);
  return r < lo ? lo : (r > hi ? hi : r);
}

}  // namespace

uint16_t f32ToBf16Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (std::isnan(x)) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
float bf16BitsToF32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t f32ToF16Bits(float x) { return (uint16_t)encodeFormat(kF16, x, 16); }
float f16BitsToF32(uint16_t b) { return (float)decodeFormat(kF16, b, 16); }
uint8_t f32ToE4m3Bits(float x) { return (uint8_t)encodeFormat(kE4m3, x, 8); }
float e4m3BitsToF32(uint8_t b) { return (float)decodeFormat(kE4m3, b, 8); }
uint8_t f32ToE5m2Bits(float x) { return (uint8_t)encodeFormat(kE5m2, x, 8); }
float e5m2BitsToF32(uint8_t b) { return (float)decodeFormat(kE5m2, b, 8); }

float roundToTf32(float x) {
  if (!std::isfinite(x)) return x;
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x1000u) & 0xffffe000u;  // ties away from zero, like cvt.rna
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float truncateToTf32(float x) {
  if (!std::isfinite(x)) return x;
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u &= 0xffffe000u;  // towards zero
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float tf32AsRead(float x, Tf32Read how) { return how == Tf32Read::Truncate ? truncateToTf32(x) : roundToTf32(x); }

double roundThrough(DType t, double x) {
  switch (t) {
    case DType::F16: return roundToFormat(kF16, x);
    case DType::BF16: return roundToFormat(kBf16, x);
    case DType::F32: return (double)(float)x;
    case DType::TF32: return (double)roundToTf32((float)x);
    case DType::F64: return x;
    case DType::E4M3: return roundToFormat(kE4m3, x);
    case DType::E5M2: return roundToFormat(kE5m2, x);
    case DType::S8: return roundInt(x, -128, 127);
    case DType::U8: return roundInt(x, 0, 255);
    case DType::S32: return roundInt(x, -2147483648.0, 2147483647.0);
  }
  return x;
}

size_t storageBytes(DType t) {
  switch (t) {
    case DType::F16: case DType::BF16: return 2;
    case DType::F32: case DType::TF32: case DType::S32: return 4;
    case DType::F64: return 8;
    case DType::E4M3: case DType::E5M2: case DType::S8: case DType::U8: return 1;
  }
  return 4;
}

void storeElement(DType t, void* p, double x) {
  switch (t) {
    case DType::F16: { uint16_t b = (uint16_t)encodeFormat(kF16, x, 16); std::memcpy(p, &b, 2); return; }
    case DType::BF16: { uint16_t b = (uint16_t)encodeFormat(kBf16, x, 16); std::memcpy(p, &b, 2); return; }
    case DType::F32: case DType::TF32: { float f = (float)x; std::memcpy(p, &f, 4); return; }
    case DType::F64: std::memcpy(p, &x, 8); return;
    case DType::E4M3: { uint8_t b = (uint8_t)encodeFormat(kE4m3, x, 8); std::memcpy(p, &b, 1); return; }
    case DType::E5M2: { uint8_t b = (uint8_t)encodeFormat(kE5m2, x, 8); std::memcpy(p, &b, 1); return; }
    case DType::S8: { int8_t v = (int8_t)roundInt(x, -128, 127); std::memcpy(p, &v, 1); return; }
    case DType::U8: { uint8_t v = (uint8_t)roundInt(x, 0, 255); std::memcpy(p, &v, 1); return; }
    case DType::S32: { int32_t v = (int32_t)roundInt(x, -2147483648.0, 2147483647.0); std::memcpy(p, &v, 4); return; }
  }
}

double loadElement(DType t, const void* p) {
  switch (t) {
    case DType::F16: { uint16_t b; std::memcpy(&b, p, 2); return decodeFormat(kF16, b, 16); }
    case DType::BF16: { uint16_t b; std::memcpy(&b, p, 2); return bf16BitsToF32(b); }
    case DType::F32: case DType::TF32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::F64: { double d; std::memcpy(&d, p, 8); return d; }
    case DType::E4M3: { uint8_t b; std::memcpy(&b, p, 1); return decodeFormat(kE4m3, b, 8); }
    case DType::E5M2: { uint8_t b; std::memcpy(&b, p, 1); return decodeFormat(kE5m2, b, 8); }
    case DType::S8: { int8_t v; std::memcpy(&v, p, 1); return v; }
    case DType::U8: { uint8_t v; std::memcpy(&v, p, 1); return v; }
    case DType::S32: { int32_t v; std::memcpy(&v, p, 4); return v; }
  }
  return 0;
}

// ---- accumulator ----------------------------------------------------------------------------------

namespace {
template <class F>
void parallelFor(int64_t n, int threads, F&& body) {
  threads = (int)std::max<int64_t>(1, std::min<int64_t>(threads, n));
  if (threads == 1) {
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t i = t; i < n; i += threads) body(i);
    });
  for (auto& th : pool) th.join();
}

// Operand as a dense fp64 matrix: rows x cols, (b, r, c) -> out[(b * rows + r) * cols + c].
std::vector<double> densify(const MatView& v, int64_t rows, int64_t cols, int64_t batch) {
  std::vector<double> out((size_t)(batch * rows * cols));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        out[(size_t)((b * rows + r) * cols + c)] = v.at(b, r, c);
      }
  return out;
}
}  // namespace

std::vector<double> referenceAccumulator(const MatView& A, const MatView& B, int64_t M, int64_t N, int64_t K,
                                         int64_t batch, int threads) {
  const std::vector<double> a = densify(A, M, K, batch);  // M x K
  // B transposed to N x K so both walks are contiguous.
  std::vector<double> bt((size_t)(batch * N * K));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) bt[(size_t)((b * N + n) * K + k)] = B.at(b, k, n);
  std::vector<double> acc((size_t)(batch * M * N));
  parallelFor(batch * M, threads, [&](int64_t bm) {
    const int64_t b = bm / M;
    const double* ar = a.data() + bm * K;
    for (int64_t n = 0; n < N; ++n) {
      const double* br = bt.data() + (b * N + n) * K;
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += ar[k] * br[k];
      acc[(size_t)(bm * N + n)] = s;
    }
  });
  return acc;
}

// ---- epilogue -------------------------------------------------------------------------------------

double refSigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double refSilu(double x) { return x * refSigmoid(x); }
double refGelu(double x) { return 0.5 * x * (1.0 + std::erf(x * 0.70710678118654752440)); }
double refGeluTanh(double x) {
  const double k0 = 0.79788456080286535588, k1 = 0.044715;
  return 0.5 * x * (1.0 + std::tanh(k0 * (x + k1 * x * x * x)));
}

namespace {
struct ElementCtx {
  const EpilogueInputs* in;
  int64_t b, m, n, M, N;
  double acc;
  double c;
  const std::vector<double>* lets;
  const std::vector<double>* outs;  // values of outputs assigned so far (as the Output node reads them)
};

double inputValue(const ElementCtx& x, int idx) {
  const EpiInput& inp = x.in->epi->inputs[(size_t)idx];
  const HostTensor* t = x.in->inputs[(size_t)idx];
  const int64_t bs = x.in->inputBatchStride[(size_t)idx];
  switch (inp.broadcast) {
    case Broadcast::Row: return t->at((size_t)(x.b * bs + x.m));
    case Broadcast::Col: return t->at((size_t)(x.b * bs + x.n));
    case Broadcast::Channel: return t->at((size_t)(x.b * bs + (x.in->channelOnRow ? x.m : x.n)));
    case Broadcast::Scalar: return t->at(0);
  }
  return 0;
}

double eval(const EpiNode& e, const ElementCtx& x) {
  auto a = [&](size_t i) { return eval(e.args.at(i), x); };
  switch (e.op) {
    case EpiOp::Const: return e.constant;
    case EpiOp::Acc: return x.acc;
    case EpiOp::Source: return x.c;
    case EpiOp::Param: return x.in->params.at((size_t)e.index);
    case EpiOp::Input: return inputValue(x, e.index);
    case EpiOp::Let: return x.lets->at((size_t)e.index);
    case EpiOp::Output: return x.outs->at((size_t)e.index);
    case EpiOp::Neg: return -a(0);
    case EpiOp::Add: return a(0) + a(1);
    case EpiOp::Sub: return a(0) - a(1);
    case EpiOp::Mul: return a(0) * a(1);
    case EpiOp::Div: return a(0) / a(1);
    case EpiOp::Lt: return a(0) < a(1) ? 1.0 : 0.0;
    case EpiOp::Le: return a(0) <= a(1) ? 1.0 : 0.0;
    case EpiOp::Gt: return a(0) > a(1) ? 1.0 : 0.0;
    case EpiOp::Ge: return a(0) >= a(1) ? 1.0 : 0.0;
    case EpiOp::Eq: return a(0) == a(1) ? 1.0 : 0.0;
    case EpiOp::Ne: return a(0) != a(1) ? 1.0 : 0.0;
    case EpiOp::And: return (a(0) != 0 && a(1) != 0) ? 1.0 : 0.0;
    case EpiOp::Or: return (a(0) != 0 || a(1) != 0) ? 1.0 : 0.0;
    case EpiOp::Not: return a(0) == 0 ? 1.0 : 0.0;
    case EpiOp::Min: return std::fmin(a(0), a(1));
    case EpiOp::Max: return std::fmax(a(0), a(1));
    case EpiOp::Abs: return std::fabs(a(0));
    case EpiOp::Clamp: {
      const double v = a(0), lo = a(1), hi = a(2);
      return v < lo ? lo : (v > hi ? hi : v);
    }
    case EpiOp::Exp: return std::exp(a(0));
    case EpiOp::Log: return std::log(a(0));
    case EpiOp::Sqrt: return std::sqrt(a(0));
    case EpiOp::Rsqrt: return 1.0 / std::sqrt(a(0));
    case EpiOp::Tanh: return std::tanh(a(0));
    case EpiOp::Sigmoid: return refSigmoid(a(0));
    case EpiOp::Relu: { const double v = a(0); return v < 0 ? 0.0 : v; }
    case EpiOp::Gelu: return refGelu(a(0));
    case EpiOp::GeluTanh: return refGeluTanh(a(0));
    case EpiOp::Silu: return refSilu(a(0));
    case EpiOp::LeakyRelu: { const double v = a(0), s = a(1); return v < 0 ? v * s : v; }
    case EpiOp::Select: return a(0) != 0 ? a(1) : a(2);
    case EpiOp::Cast: return roundThrough(e.castTo, a(0));
  }
  throw std::runtime_error("reference: unknown epilogue op");
}
}  // namespace

EpilogueResult evalEpilogue(const EpilogueInputs& in, const std::vector<double>& acc, int64_t M, int64_t N,
                            int64_t batch, int threads) {
  const Epilogue& epi = *in.epi;
  const size_t nOut = epi.outputs.size();
  const size_t total = (size_t)(batch * M * N);
  EpilogueResult r;
  r.outputs.resize(nOut);
  r.amax.assign(nOut, 0.0);
  r.amaxRounded.assign(nOut, 0.0);
  for (size_t i = 0; i < nOut; ++i)
    if (epi.outputs[i].kind != EpiOutput::Kind::AmaxReduction) r.outputs[i].resize(total);
  r.unrounded.assign(nOut, {});
  for (size_t i = 0; i < nOut; ++i)
    if (epi.outputs[i].kind != EpiOutput::Kind::AmaxReduction && isInteger(epi.outputs[i].dtype))
      r.unrounded[i].resize(total);

  const int64_t rowsTotal = batch * M;
  const int nth = (int)std::max<int64_t>(1, std::min<int64_t>(threads, rowsTotal));
  std::vector<std::vector<double>> amaxPart(nth, std::vector<double>(nOut, 0.0));
  std::vector<std::vector<double>> amaxRPart(nth, std::vector<double>(nOut, 0.0));
  std::vector<std::thread> pool;
  for (int t = 0; t < nth; ++t)
    pool.emplace_back([&, t] {
      std::vector<double> lets(epi.lets.size()), outs(nOut, 0.0), outsR(nOut, 0.0);
      for (int64_t bm = t; bm < rowsTotal; bm += nth) {
        const int64_t b = bm / M, m = bm % M;
        for (int64_t n = 0; n < N; ++n) {
          const size_t idx = (size_t)(bm * N + n);
          ElementCtx x{&in, b, m, n, M, N, acc[idx], in.hasC ? in.C.at(b, m, n) : 0.0, &lets, &outs};
          for (size_t l = 0; l < epi.lets.size(); ++l) lets[l] = eval(epi.lets[l].value, x);
          for (size_t o = 0; o < nOut; ++o) {
            const EpiOutput& out = epi.outputs[o];
            if (out.kind == EpiOutput::Kind::AmaxReduction) continue;
            const double v = eval(out.value, x);
            outs[o] = v;
            outsR[o] = roundThrough(out.dtype, v);
            r.outputs[o][idx] = outsR[o];
            if (!r.unrounded[o].empty()) r.unrounded[o][idx] = v;
          }
          for (size_t o = 0; o < nOut; ++o) {
            const EpiOutput& out = epi.outputs[o];
            if (out.kind != EpiOutput::Kind::AmaxReduction) continue;
            const double v = std::fabs(eval(out.value, x));
            ElementCtx xr = x;
            xr.outs = &outsR;
            const double vr = std::fabs(eval(out.value, xr));
            amaxPart[t][o] = std::fmax(amaxPart[t][o], v);
            amaxRPart[t][o] = std::fmax(amaxRPart[t][o], vr);
          }
        }
      }
    });
  for (auto& th : pool) th.join();
  for (int t = 0; t < nth; ++t)
    for (size_t o = 0; o < nOut; ++o) {
      r.amax[o] = std::fmax(r.amax[o], amaxPart[t][o]);
      r.amaxRounded[o] = std::fmax(r.amaxRounded[o], amaxRPart[t][o]);
    }
  return r;
}

Epilogue effectiveEpilogue(const KernelSpec& spec) {
  Epilogue e = spec.epilogue;
  if (!e.implicit) return e;
  // An implicit epilogue the front end already spelled out: keep it.
  if (!e.outputs.empty() && !(e.outputs[0].value.op == EpiOp::Const && e.outputs[0].value.args.empty() &&
                              e.outputs[0].value.constant == 0))
    return e;
  auto paramIndex = [&](const std::string& name, double def) {
    for (size_t i = 0; i < e.params.size(); ++i)
      if (e.params[i].name == name) return (int)i;
    e.params.push_back(EpiParam{name, def, {}});
    return (int)e.params.size() - 1;
  };
  const Operand* D = spec.operand("D");
  const bool hasC = spec.operand("C") != nullptr;
  EpiNode alpha{EpiOp::Param, 0, paramIndex("alpha", 1.0), DType::F32, {}, {}};
  EpiNode acc{EpiOp::Acc, 0, -1, DType::F32, {}, {}};
  EpiNode value{EpiOp::Mul, 0, -1, DType::F32, {alpha, acc}, {}};
  if (hasC) {
    EpiNode beta{EpiOp::Param, 0, paramIndex("beta", 0.0), DType::F32, {}, {}};
    EpiNode c{EpiOp::Source, 0, -1, DType::F32, {}, {}};
    EpiNode bc{EpiOp::Mul, 0, -1, DType::F32, {beta, c}, {}};
    value = EpiNode{EpiOp::Add, 0, -1, DType::F32, {value, bc}, {}};
    e.usesSource = true;
  }
  if (e.outputs.empty()) {
    EpiOutput out;
    out.kind = EpiOutput::Kind::Main;
    out.name = D ? D->name : "D";
    out.dtype = D ? D->dtype : DType::F32;
    out.layout = D ? D->layout : Layout::Row;
    e.outputs.push_back(out);
  }
  e.outputs[0].value = value;
  return e;
}

}  // namespace kdl::gputest
