// The kernel plan: a validated KernelSpec lowered to every template parameter the emitters need,
// each decided once here and explained (`decisions`), so emitters only write what the plan says.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "dsl/spec.h"

namespace kdl::codegen {

// One decision of lowering, for `kdlc list --plan` and manifest.json.
struct Decision {
  std::string what;   // "warps", "mma", ...
  std::string value;  // "2 x 2 (warp tile 64 x 64)"
  std::string why;    // the reason, in the domain's words
};

struct OperandPlan {
  std::string name;       // A, B, C, D, or an extra output's name
  DType dtype = DType::F16;
  std::string cppType;    // "__nv_bfloat16"
  Layout layout = Layout::Row;
  std::string cppLayout;  // "kdl::RowMajor"
  int align = 1;          // elements
  int elementBytes = 2;   // bytes of one element in memory (bytesOf(dtype))
  bool contigK = false;   // A and B: K is the contiguous dimension (A row-major, B column-major)
  std::string source;     // the spec's operand it holds: its own name, or "B" / "A" for the B^T / A^T of a
                          // transposed kernel (KernelPlan::transposed)
  // C++ member names in Arguments / Epilogue::Params
  std::string ldName;           // "lda"
  std::string batchStrideName;  // "batch_stride_A"
};

// One argument of the emitted kernel, in the order of the C ABI (include/kdl/abi.h).
struct ArgPlan {
  enum class Kind { Tensor, Vector, DeviceScalar, Param };  // == kdl_arg_kind
  // BlockScale: scale_A / scale_B, the f32 block scales of fp8 A and B (KernelPlan::blockScaling).
  enum class Role { OperandIn, OperandOut, Param, Input, TensorOutput, AmaxOutput, BlockScale };
  std::string name;
  Kind kind = Kind::Tensor;
  Role role = Role::OperandIn;
  DType dtype = DType::F32;
  std::string cppType;        // element type ("float" for params)
  std::string broadcast;      // "row" | "col" | "" (vectors only)
  Layout layout = Layout::Row;  // tensors of the epilogue (C, D, extra outputs): as declared
  double defaultValue = 0;    // params only
  int index = -1;             // into operands / epilogue params / inputs / outputs
  // C++ member names it declares besides `name` ("" where the kind has none)
  std::string ldName;           // tensors: "ldz"
  std::string batchStrideName;  // tensors and vectors: "batch_stride_Z"
};

// Which device template the kernel instantiates.
// Defined on a compile of NAME.cu (`kdlc build`'s last try of a multistage kernel, -DKDL_MULTISTAGE_MORE_WARPS),
// selects the 8-warp form of a kernel that has one (KernelPlan::moreWarpsM).
inline constexpr const char* kMoreWarpsMacro = "KDL_MULTISTAGE_MORE_WARPS";

enum class KernelPath {
  GemmSm80,     // kdl::GemmSm80: every thread's cp.async fills the stages
  GemmSm80Tma,  // kdl::GemmSm80Tma: TMA fills the stages on Hopper, GemmSm80 elsewhere
  GemmSm90,     // kdl::GemmSm90: sm90a, TMA + wgmma, warp-specialized, persistent (schedule cooperative|pingpong)
  ConvSm80,     // kdl::Conv2dSm80: implicit-GEMM convolution on GemmSm80's mainloop (sm80 .. sm90a)
  ConvSm90,     // kdl::Conv2dSm90Fprop / Dgrad / Wgrad: convs on GemmSm90 (wgmma) with TMA im2col loads (sm90a)
};
const char* pathWord(KernelPath p);      // "gemm_sm80_tma", "gemm_sm90", "conv_sm80" (manifest.json)
const char* pathTemplate(KernelPath p);  // "kdl::GemmSm80Tma"
const char* pathHeader(KernelPath p);    // "kdl/gemm_sm80_tma.cuh"

struct KernelPlan {
  std::string name;
  KernelSpec spec;  // the validated spec this plan was lowered from
  KernelPath path = KernelPath::GemmSm80;
  std::string kernelHash;  // sha256 of what determines the emitted files (codegen/lower_hash.cpp)

  // Target
  Arch arch = Arch::SM80;
  std::string archName;               // "sm80"
  int minComputeCapability = 80;      // major*10 + minor
  bool exactComputeCapability = false;  // sm90a code runs only on 9.0
  std::vector<std::string> gencode;   // nvcc flags, e.g. -gencode=arch=compute_80,code=sm_80
  std::string cmakeArchitectures;     // CUDA_ARCHITECTURES equivalent, e.g. "80-real;90"

  bool sm90() const { return path == KernelPath::GemmSm90 || path == KernelPath::ConvSm90; }
  bool conv() const { return path == KernelPath::ConvSm80 || path == KernelPath::ConvSm90; }

  // Orientation: a column-major D is computed as its transpose, D^T = B^T A^T, an n x m problem with
  // a row-major output (codegen/lower_operands.cpp, lowerOrientation). Then the kernel's M is D's n
  // and its N is D's m: `a` and `b` below, the tile, the warps, the cluster, the raster and the
  // epilogue's coordinates are those of D^T; the arguments keep the spec's meaning (argA, argB) and
  // kdl::TransposedGemm (include/kdl/gemm_transposed.h) swaps the problem at run time.
  bool transposed = false;

  // Convolutions (path ConvSm80): `a` and `b` are the implicit GEMM's A and B (fprop X, W; dgrad Y, W;
  // wgrad Y, X: the spec's two inputs, argA and argB, named as the spec names them), `c` the optional
  // `residual`, `d` the output (fprop Y, dgrad X, wgrad W). The filter and stride the spec fixes
  // (0: given at run time): Conv2dSm80's FilterR, FilterS, StrideH, StrideW.
  int filterR = 0, filterS = 0, strideH = 0, strideW = 0;
  // sm90a conv fprop: the patch mainloop beside im2col (kdl::Conv2dSm90Fprop's Patch; codegen/lower_conv.cpp,
  // lowerConvPatch), its W stages and slot bytes.
  bool convPatch = false;
  int patchStages = 0, patchSlotBytes = 0;
  // ... and the swapped patch mainloop beside them (kdl::Conv2dSm90Fprop::kSwap, kdl::sm90::ConvFpropSwap): the
  // pingpong 128 x 128 patch kernels with a pointwise epilogue and 16-bit X, W and Y; its W stages.
  bool convSwap = false;
  int swapStages = 0;
  const char* convKind() const;  // "Fprop", "Dgrad", "Wgrad" (kdl::ConvKind)
  // The device template: pathTemplate(path), but per op on the sm90a conv path ("kdl::Conv2dSm90Wgrad").
  const char* deviceTemplate() const;

  // Operands and mainloop. `a` and `b` are the device template's A and B: the spec's A and B, or B^T
  // and A^T when transposed; argA and argB are the spec's A and B as the caller passes them.
  OperandPlan a, b, d;
  OperandPlan argA, argB;
  bool hasSource = false;
  OperandPlan c;
  std::vector<OperandPlan> extraOutputs;  // epilogue `output Z : dt row|col = ...`, by output index
  std::string accumCpp;                   // "float" | "int32_t"
  int tileM = 128, tileN = 128, tileK = 32;
  int warpsM = 2, warpsN = 2;
  int warpTileM = 64, warpTileN = 64;
  int threads = 128;
  // The multistage path's last try (`kdlc build`, codegen/build_ptxas.h: kMoreWarpsFlag): a GEMM tile on 4 warps of
  // 128 accumulators per thread, where ptxas is not monotone near the thread's 255 registers, also has an 8-warp
  // form (64 accumulators), compiled only where every try of the 4-warp one spills. 0 x 0: none.
  int moreWarpsM = 0, moreWarpsN = 0;
  // (The macro that selects the 8-warp form in NAME.cu: kMoreWarpsMacro below.)
  std::string mmaShape;                   // "m16n8k16"; sm90a: "wgmma m64n256k16"
  int stages = 3;
  bool rasterAlongM = false;
  bool serialSplitK = false;
  int maxSplitK = 1;                      // slices allowed at run time (serial(N) -> N)
  // Dynamic shared memory per block, from include/kdl/gemm_sm80_smem.h (the templates use it too).
  size_t mainloopSmemBytes = 0;
  size_t epilogueSmemBytes = 0;
  size_t cpAsyncSmemBytes = 0;            // what a kdl::GemmSm80 launch asks for: max(mainloop, epilogue)
  size_t smemBytes = 0;                   // what the instantiated template's launch asks for (Gemm::kSmemBytes)
  int epilogueVectorWidth = 8;            // columns per Epilogue::apply call

  // The sm90a path only (kdl::GemmSm90's parameters beyond the tile and the stages).
  Schedule schedule = Schedule::Multistage;  // Cooperative | Pingpong
  int consumerWarpgroups = 2;             // per CTA (the producer warpgroup comes on top)
  int tmaIssuers = 1;                     // sm90a: producer warps issuing the TMA loads (GemmSm90::kIssuers)
  int clusterM = 1, clusterN = 1;
  int promoteEvery = 0;                   // fp8: 0 = fast accumulation, N = promote every N k-tiles
  bool blockScaling = false;              // kdl::sm90::BlockScaling<blockMA, blockNB, blockK>
  int blockMA = 0, blockNB = 0, blockK = 0;

  // fallback = sm80 (an sm90a wgmma kernel's spec): the sm80-path kernel its host side runs where this
  // one cannot (codegen/lower_fallback.cpp); null without one. Its own plan: the same operands,
  // epilogue and arguments, lowered by the sm80 path's steps.
  std::shared_ptr<const KernelPlan> fallback;

  Epilogue epilogue;                      // the typed expression tree (spec.epilogue)
  std::vector<ArgPlan> args;              // ABI order
  std::vector<Decision> decisions;

  // "kdl::GemmSm80Tma<..., Epilogue>", "kdl::GemmSm90<..., Epilogue>" or "kdl::Conv2dSm80<kdl::ConvKind::Fprop,
  // ..., Epilogue>" (the template of `path`), inside
  // "kdl::TransposedGemm<...>" when transposed; `spell`, when given, spells each type and
  // template name (the emitter qualifies them from the global namespace: "::kdl::GemmSm80Tma<::half, ...>").
  std::string templateInstance(std::string (*spell)(const std::string&) = nullptr) const;
};

// C++ spelling of an element type ("__nv_bfloat16"); tf32 operands are stored as float.
const char* cppElementType(DType t);
// Words as the language spells them ("bf16", "row", "sm80", "gemm"): kdl::name() of dsl/spec.h.
inline const char* dtypeWord(DType t) { return name(t); }
inline const char* layoutWord(Layout l) { return name(l); }
inline const char* archWord(Arch a) { return name(a); }
inline const char* opWord(Op o) { return name(o); }

}  // namespace kdl::codegen
