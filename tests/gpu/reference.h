// CPU reference of a KDL GEMM kernel spec, for the GPU test suite and the benchmark.
//
//   acc[b, m, n] = sum_k A[b, m, k] * B[b, k, n]     in fp64, from the stored (rounded) elements
//   outputs      = the spec's Epilogue tree, evaluated in fp64 per element
//   amax outputs = max over the whole output (every batch) of |operand|
//
// Activations follow the device definitions of include/kdl/activations.cuh exactly (gelu in its
// erf form, gelu_tanh, silu = x * sigmoid(x), leaky_relu(x, s) = x < 0 ? x * s : x, clamp and
// select with the device's comparisons); cast(dtype, x) rounds through the dtype. A large problem
// can take its accumulator from elsewhere (cuBLASLt, fp32/int32): evalEpilogue() needs only acc.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dsl/spec.h"

namespace kdl::gputest {

// ---- host element conversions (round-to-nearest-even; saturating for integers and fp8) ----------
uint16_t f32ToBf16Bits(float x);
float bf16BitsToF32(uint16_t b);
uint16_t f32ToF16Bits(float x);
float f16BitsToF32(uint16_t b);
uint8_t f32ToE4m3Bits(float x);  // RNE, saturate to +-448, NaN -> NaN
float e4m3BitsToF32(uint8_t b);
uint8_t f32ToE5m2Bits(float x);  // RNE, saturate to +-57344, NaN -> NaN
float e5m2BitsToF32(uint8_t b);
float roundToTf32(float x);  // round-to-nearest, ties away (cvt.rna.tf32.f32): 10 mantissa bits
float truncateToTf32(float x);  // the low 13 mantissa bits dropped (what sm90a's wgmma reads of an f32)

// How a kernel's tensor cores read its f32 / tf32 operands: the sm80 path converts them with cvt.rna
// (RoundAway, roundToTf32); sm90a's wgmma reads the f32 bits TMA loaded and ignores the low 13
// (Truncate, truncateToTf32). Either way the product of two tf32 values is exact in f32.
enum class Tf32Read { RoundAway, Truncate };
float tf32AsRead(float x, Tf32Read how);

// Value of `x` after one rounding into `t` (what a store of x followed by a load yields). Integer
// types: RNE with saturation to the type's range, NaN -> 0 (cvt.rni semantics).
double roundThrough(kdl::DType t, double x);
// Bytes of one element as stored in device memory (tf32 is stored as f32).
size_t storageBytes(kdl::DType t);
// Writes / reads one element of dtype `t` at `p`.
void storeElement(kdl::DType t, void* p, double x);
double loadElement(kdl::DType t, const void* p);

// ---- host buffers -------------------------------------------------------------------------------

// A strided batched matrix (or vector) on the host, stored as the device sees it.
struct HostTensor {
  kdl::DType dtype = kdl::DType::F32;
  std::vector<uint8_t> bytes;
  double at(size_t elementIndex) const { return loadElement(dtype, bytes.data() + elementIndex * storageBytes(dtype)); }
  void set(size_t elementIndex, double v) { storeElement(dtype, bytes.data() + elementIndex * storageBytes(dtype), v); }
  size_t elements() const { return bytes.size() / storageBytes(dtype); }
  void resize(size_t n) { bytes.assign(n * storageBytes(dtype), 0); }
};

// Matrix view: element (b, r, c) of a matrix with `layout` at b * batchStride + (row-major ? r * ld + c : c * ld + r).
struct MatView {
  const HostTensor* t = nullptr;
  kdl::Layout layout = kdl::Layout::Row;
  int64_t ld = 0, batchStride = 0;
  double at(int64_t b, int64_t r, int64_t c) const {
    const int64_t i = b * batchStride + (layout == kdl::Layout::Row ? r * ld + c : c * ld + r);
    return t->at((size_t)i);
  }
};

// fp64 accumulator of A (M x K) x B (K x N), `batch` of them: acc[(b * M + m) * N + n], from the
// elements as given (the caller converts operands to what the kernel multiplies first: fp8 with their
// block scales, f32 / tf32 through tf32AsRead). Uses up to `threads` host threads.
std::vector<double> referenceAccumulator(const MatView& A, const MatView& B, int64_t M, int64_t N, int64_t K,
                                         int64_t batch, int threads);

// ---- the epilogue -------------------------------------------------------------------------------

// Everything the epilogue reads, besides acc. Indices follow kdl::Epilogue's vectors.
struct EpilogueInputs {
  const Epilogue* epi = nullptr;
  std::vector<double> params;              // per Epilogue::params
  std::vector<const HostTensor*> inputs;   // per Epilogue::inputs: [row] length M, [col] length N, [] 1
  std::vector<int64_t> inputBatchStride;   // per input (elements; 0 for scalars)
  MatView C;                               // when the spec reads C (row-major in the epilogue)
  bool hasC = false;
  // Where a [channel] input is indexed: the GEMM view's column n (gemm, conv fprop / dgrad: n = the
  // output channel) or its row m (conv wgrad, whose GEMM rows are the output channels k).
  bool channelOnRow = false;
};

// Reference values of every output, for every element (b, m, n): outputs[i][(b * M + m) * N + n]
// for Main/Tensor outputs (already rounded through the output's dtype when `rounded`), and
// amax[i] for AmaxReduction outputs (NaN-ignoring, like fmaxf; see also amaxRounded).
struct EpilogueResult {
  std::vector<std::vector<double>> outputs;  // per Epilogue::outputs (empty for reductions)
  // Per output of an integer type, its values before their rounding (empty for float outputs): where the kernel's
  // f32 arithmetic and the fp64 reference fall on two sides of a rounding tie, the two differ by one.
  std::vector<std::vector<double>> unrounded;
  std::vector<double> amax;                  // per Epilogue::outputs (0 for tensors): over unrounded values
  std::vector<double> amaxRounded;           // the same over values rounded through the referenced output's dtype
};

EpilogueResult evalEpilogue(const EpilogueInputs& in, const std::vector<double>& acc, int64_t M, int64_t N,
                            int64_t batch, int threads);

// The epilogue a spec without an `epilogue` block implies (D = alpha * acc (+ beta * C)), with
// params alpha and beta, when the front end left it implicit and empty; otherwise `epi` itself.
Epilogue effectiveEpilogue(const KernelSpec& spec);

// The device's scalar functions, in fp64 (exposed for unit checks).
double refGelu(double x);
double refGeluTanh(double x);
double refSilu(double x);
double refSigmoid(double x);

}  // namespace kdl::gputest
