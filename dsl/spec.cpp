#include "dsl/spec.h"

namespace kdl {

const char* name(DType t) {
  switch (t) {
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F32: return "f32";
    case DType::TF32: return "tf32";
    case DType::F64: return "f64";
    case DType::E4M3: return "e4m3";
    case DType::E5M2: return "e5m2";
    case DType::S8: return "s8";
    case DType::U8: return "u8";
    case DType::S32: return "s32";
  }
  return "?";
}

const char* name(Layout l) {
  switch (l) {
    case Layout::Row: return "row";
    case Layout::Col: return "col";
    case Layout::NHWC: return "nhwc";
    case Layout::KRSC: return "krsc";
  }
  return "?";
}

const char* name(Arch a) {
  switch (a) {
    case Arch::SM80: return "sm80";
    case Arch::SM86: return "sm86";
    case Arch::SM89: return "sm89";
    case Arch::SM90a: return "sm90a";
    case Arch::SM100a: return "sm100a";
  }
  return "?";
}

const char* name(Op o) {
  switch (o) {
    case Op::Gemm: return "gemm";
    case Op::Conv2dFprop: return "conv2d_fprop";
    case Op::Conv2dDgrad: return "conv2d_dgrad";
    case Op::Conv2dWgrad: return "conv2d_wgrad";
  }
  return "?";
}

const char* sourceOperandName(Op o) { return o == Op::Gemm ? "C" : "residual"; }

const char* name(Schedule s) {
  switch (s) {
    case Schedule::Multistage: return "multistage";
    case Schedule::Cooperative: return "cooperative";
    case Schedule::Pingpong: return "pingpong";
  }
  return "?";
}

const char* name(Raster r) {
  switch (r) {
    case Raster::AlongM: return "along_m";
    case Raster::AlongN: return "along_n";
  }
  return "?";
}

const char* name(Fallback f) {
  switch (f) {
    case Fallback::None: return "none";
    case Fallback::Sm80: return "sm80";
  }
  return "?";
}

const char* name(SplitKMode m) {
  switch (m) {
    case SplitKMode::None: return "none";
    case SplitKMode::Serial: return "serial";
    case SplitKMode::Parallel: return "parallel";
    case SplitKMode::StreamK: return "stream_k";
  }
  return "?";
}

const char* name(Origin o) {
  switch (o) {
    case Origin::Explicit: return "explicit";
    case Origin::Template: return "template";
    case Origin::Default: return "default";
    case Origin::Auto: return "auto";
  }
  return "?";
}

const char* name(Broadcast b) {
  switch (b) {
    case Broadcast::Row: return "row";
    case Broadcast::Col: return "col";
    case Broadcast::Channel: return "channel";
    case Broadcast::Scalar: return "scalar";
  }
  return "?";
}

const char* name(EpiOp op) {
  switch (op) {
    case EpiOp::Const: return "const";
    case EpiOp::Acc: return "acc";
    case EpiOp::Source: return "source";
    case EpiOp::Param: return "param";
    case EpiOp::Input: return "input";
    case EpiOp::Let: return "let";
    case EpiOp::Output: return "output";
    case EpiOp::Neg: return "neg";
    case EpiOp::Add: return "add";
    case EpiOp::Sub: return "sub";
    case EpiOp::Mul: return "mul";
    case EpiOp::Div: return "div";
    case EpiOp::Lt: return "lt";
    case EpiOp::Le: return "le";
    case EpiOp::Gt: return "gt";
    case EpiOp::Ge: return "ge";
    case EpiOp::Eq: return "eq";
    case EpiOp::Ne: return "ne";
    case EpiOp::And: return "and";
    case EpiOp::Or: return "or";
    case EpiOp::Not: return "not";
    case EpiOp::Min: return "min";
    case EpiOp::Max: return "max";
    case EpiOp::Abs: return "abs";
    case EpiOp::Clamp: return "clamp";
    case EpiOp::Exp: return "exp";
    case EpiOp::Log: return "log";
    case EpiOp::Sqrt: return "sqrt";
    case EpiOp::Rsqrt: return "rsqrt";
    case EpiOp::Tanh: return "tanh";
    case EpiOp::Sigmoid: return "sigmoid";
    case EpiOp::Relu: return "relu";
    case EpiOp::Gelu: return "gelu";
    case EpiOp::GeluTanh: return "gelu_tanh";
    case EpiOp::Silu: return "silu";
    case EpiOp::LeakyRelu: return "leaky_relu";
    case EpiOp::Select: return "select";
    case EpiOp::Cast: return "cast";
  }
  return "?";
}

int bitsOf(DType t) {
  switch (t) {
    case DType::F16:
    case DType::BF16: return 16;
    case DType::F32:
    case DType::TF32:
    case DType::S32: return 32;
    case DType::F64: return 64;
    case DType::E4M3:
    case DType::E5M2:
    case DType::S8:
    case DType::U8: return 8;
  }
  return 32;
}

bool isFloat8(DType t) { return t == DType::E4M3 || t == DType::E5M2; }

bool isInteger(DType t) { return t == DType::S8 || t == DType::U8 || t == DType::S32; }

int archNumber(Arch a) {
  switch (a) {
    case Arch::SM80: return 80;
    case Arch::SM86: return 86;
    case Arch::SM89: return 89;
    case Arch::SM90a: return 90;
    case Arch::SM100a: return 100;
  }
  return 0;
}

// The opt-in per-block limits (cudaDevAttrMaxSharedMemoryPerBlockOptin) of each architecture.
int maxSharedMemoryPerBlock(Arch a) {
  switch (a) {
    case Arch::SM80: return 166912;
    case Arch::SM86:
    case Arch::SM89: return 101376;
    case Arch::SM90a:
    case Arch::SM100a: return 232448;
  }
  return 0;
}

bool isBooleanOp(EpiOp op) {
  switch (op) {
    case EpiOp::Lt: case EpiOp::Le: case EpiOp::Gt: case EpiOp::Ge: case EpiOp::Eq: case EpiOp::Ne:
    case EpiOp::And: case EpiOp::Or: case EpiOp::Not:
      return true;
    default:
      return false;
  }
}

const char* infixSpelling(EpiOp op) {
  switch (op) {
    case EpiOp::Add: return "+";
    case EpiOp::Sub: return "-";
    case EpiOp::Mul: return "*";
    case EpiOp::Div: return "/";
    case EpiOp::Lt: return "<";
    case EpiOp::Le: return "<=";
    case EpiOp::Gt: return ">";
    case EpiOp::Ge: return ">=";
    case EpiOp::Eq: return "==";
    case EpiOp::Ne: return "!=";
    case EpiOp::And: return "&&";
    case EpiOp::Or: return "||";
    default: return nullptr;
  }
}

}  // namespace kdl
