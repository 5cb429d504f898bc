// A validated kernel spec: every field typed, resolved (defaults and `auto` decided) and explicit,
// each with the place its value came from. The input of lowering (codegen/) and of `kdlc list`.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dsl/source.h"

namespace kdl {

enum class DType { F16, BF16, F32, TF32, F64, E4M3, E5M2, S8, U8, S32 };
enum class Layout { Row, Col, NHWC, KRSC };
enum class Arch { SM80, SM86, SM89, SM90a, SM100a };
enum class Op { Gemm, Conv2dFprop, Conv2dDgrad, Conv2dWgrad };
enum class Schedule { Multistage, Cooperative, Pingpong };
enum class Raster { AlongM, AlongN };
enum class SplitKMode { None, Serial, Parallel, StreamK };
// `fallback = none | sm80`: what an sm90a kernel's host side runs where the sm90a kernel cannot (a GPU
// other than compute capability 9.0, arguments TMA cannot describe): nothing (can_implement refuses)
// or an sm80-path (multistage) kernel of the same operands and epilogue.
enum class Fallback { None, Sm80 };

const char* name(DType);
const char* name(Layout);
const char* name(Arch);
const char* name(Op);
const char* name(Schedule);
const char* name(Raster);
const char* name(SplitKMode);
const char* name(Fallback);  // "none", "sm80"
// The optional operand the epilogue reads as its source (EpiOp::Source): gemm's `C`, a convolution's
// `residual` (laid out like the op's output: Y / dX `nhwc`, dW `krsc`).
const char* sourceOperandName(Op);
int bitsOf(DType);
inline int bytesOf(DType t) { return (bitsOf(t) + 7) / 8; }
bool isFloat8(DType);
bool isInteger(DType);
int archNumber(Arch);  // 80, 86, 89, 90, 100
int maxSharedMemoryPerBlock(Arch);  // bytes, opt-in limit

// Where a resolved value came from.
enum class Origin { Explicit, Template, Default, Auto };
const char* name(Origin);

template <class T>
struct Field {
  T value{};
  SourceLoc loc;  // where it was set (for defaults: the kernel's name)
  Origin origin = Origin::Default;
};

struct Operand {
  std::string name;  // A, B, C, D, X, W, Y, residual
  DType dtype;
  Layout layout;
  int align;  // elements
  SourceLoc loc;
  Origin alignOrigin = Origin::Default;
  SourceLoc alignLoc;
  // fp8 block scales (`scale (BM, BK)`, gemm A and B only): one f32 scale per block of BM rows (A) or
  // BN columns (B) by BK of K; absent without the suffix. scaleLoc: the suffix's value.
  std::optional<std::array<int, 2>> scaleBlock;
  SourceLoc scaleLoc;
};

// ---- the typed epilogue ---------------------------------------------------------------------------

enum class Broadcast { Row, Col, Channel, Scalar };
const char* name(Broadcast);

struct EpiParam {
  std::string name;
  double defaultValue;
  SourceLoc loc;
};
struct EpiInput {
  std::string name;
  DType dtype;
  Broadcast broadcast;
  SourceLoc loc;
};

// Epilogue expression: a tree of typed nodes. Values are computed in f32.
enum class EpiOp {
  Const, Acc, Source /* the source operand: C (gemm), residual (conv) */, Param, Input, Let, Output /* value of an assigned output, e.g. D in amax */,
  Neg, Add, Sub, Mul, Div, Lt, Le, Gt, Ge, Eq, Ne, And, Or, Not,
  Min, Max, Abs, Clamp, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Relu, Gelu, GeluTanh, Silu, LeakyRelu, Select, Cast
};
const char* name(EpiOp);
// The infix spelling of a binary EpiOp (`+`, `<=`, `&&`, ...); nullptr for the others.
const char* infixSpelling(EpiOp);
// True when the op's result is a boolean (comparisons, &&, ||, !); every other op yields a number.
bool isBooleanOp(EpiOp);

struct EpiNode {
  EpiOp op = EpiOp::Const;
  double constant = 0;      // Const
  int index = -1;           // Param/Input/Let/Output: index into the epilogue's vectors
  DType castTo = DType::F32; // Cast
  std::vector<EpiNode> args;
  SourceLoc loc;
};

struct EpiLet {
  std::string name;
  EpiNode value;
  SourceLoc loc;
};

// An output of the epilogue: the op's output operand (D/Y/...), an extra tensor, or a reduction.
struct EpiOutput {
  enum class Kind { Main, Tensor, AmaxReduction };
  Kind kind = Kind::Main;
  std::string name;
  DType dtype;
  Layout layout = Layout::Row;  // Main/Tensor
  EpiNode value;                // for AmaxReduction: the operand of max(abs(...))
  SourceLoc loc;
};

struct Epilogue {
  std::vector<EpiParam> params;
  std::vector<EpiInput> inputs;
  std::vector<EpiLet> lets;        // in order; a Let node refers to an earlier one
  std::vector<EpiOutput> outputs;  // outputs[0] is the main output
  bool usesSource = false;         // reads the source operand
  std::string sourceName = "C";    // the source operand's name: sourceOperandName(op)
  bool implicit = false;           // no epilogue block: D = alpha * acc (+ beta * C); conv alike with residual
  SourceLoc loc;
};

// ---- the kernel ----------------------------------------------------------------------------------

struct KernelSpec {
  std::string name;
  SourceLoc loc;  // the kernel's name in its statement
  std::string templateName;
  Field<Op> op;
  Field<Arch> arch;
  // gemm: A, B, [C], D; conv: the two inputs, [residual], the output (fprop X, W, Y; dgrad Y, W, X;
  // wgrad Y, X, W)
  std::vector<Operand> operands;
  Field<DType> accum;
  Field<std::array<int, 3>> tile;
  Field<std::array<int, 3>> cluster;
  Field<int> stages;
  Field<Schedule> schedule;
  Field<Raster> raster;
  Field<SplitKMode> splitK;
  Field<int> splitKSlices;  // for serial/parallel; 1 otherwise
  // fp8 on sm90a: promote the wgmma accumulator into the f32 one every N k-tiles; 0 = `fast` (never:
  // the wgmma accumulator sums the whole K). Default: 0, or 1 with block scales (every k-block).
  // Meaningless (0) for other input types.
  Field<int> promoteEvery;
  // sm90a wgmma kernels only: the sm80-path kernel run() falls back to (Fallback::None: none, the default).
  Field<Fallback> fallback;
  // conv only: compile-time fixed filter (R, S) and stride, 0 = runtime
  Field<std::array<int, 2>> filter;
  Field<std::array<int, 2>> stride;
  Epilogue epilogue;
  size_t sharedMemoryBytes = 0;  // the mainloop's, of the chosen stages (the launch adds epilogue
                                 // staging and barriers: KernelPlan::smemBytes, include/kdl/gemm_sm80_smem.h)

  const Operand* operand(const std::string& n) const {
    for (const Operand& o : operands)
      if (o.name == n) return &o;
    return nullptr;
  }
};

}  // namespace kdl
