// Lowering: validated KernelSpec -> KernelPlan. Every template parameter is decided here, once,
// with the reason; emitters write what the plan says.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "codegen/codegen.h"
#include "codegen/epilogue_expr.h"
#include "codegen/plan.h"
#include "codegen/support.h"

namespace kdl::codegen {

// ---- words -----------------------------------------------------------------------------------------

const char* cppElementType(DType t) {
  switch (t) {
    case DType::F16: return "half";
    case DType::BF16: return "__nv_bfloat16";
    case DType::F32: return "float";
    case DType::TF32: return "float";
    case DType::F64: return "double";
    case DType::E4M3: return "__nv_fp8_e4m3";
    case DType::E5M2: return "__nv_fp8_e5m2";
    case DType::S8: return "int8_t";
    case DType::U8: return "uint8_t";
    case DType::S32: return "int32_t";
  }
  return "?";
}

static int elementBytes(DType t) {
  switch (t) {
    case DType::F16: case DType::BF16: return 2;
    case DType::F32: case DType::TF32: case DType::S32: return 4;
    case DType::F64: return 8;
    default: return 1;
  }
}
static std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
static const char* originWord(Origin o) {
  switch (o) {
    case Origin::Explicit: return "set in the spec";
    case Origin::Template: return "set by the template";
    case Origin::Default: return "the default";
    case Origin::Auto: return "chosen by the validator for `auto`";
  }
  return "";
}

std::string KernelPlan::templateInstance() const {
  return fmt::format("kdl::GemmSm80Tma<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, Epilogue>", a.cppType,
                     a.cppLayout, a.align, b.cppType, b.cppLayout, b.align, accumCpp, tileM, tileN, tileK, warpsM,
                     warpsN, stages, rasterAlongM ? "true" : "false");
}

// ---- the sm80 multistage GEMM's own constraints (mirrors include/kdl/gemm_sm80.cuh) ----------------

namespace {

struct CopierShape {
  int rows, rowElems, rowBytes, bytes;
  bool contigK;
};
CopierShape copierShape(bool contigK, int tileMN, int tileK, int esize) {
  CopierShape c;
  c.contigK = contigK;
  c.rows = contigK ? tileMN : tileK;
  c.rowElems = contigK ? tileK : tileMN;
  c.rowBytes = c.rowElems * esize;
  c.bytes = c.rows * c.rowBytes;
  return c;
}
// Why a copier cannot be instantiated with `threads`, or "".
std::string copierProblem(const char* opName, const CopierShape& c, int align, int esize, int threads) {
  int vecBytes = align * esize;
  if (vecBytes != 4 && vecBytes != 8 && vecBytes != 16)
    return fmt::format("{} copies {}-byte vectors; the sm80 path needs 4, 8 or 16", opName, vecBytes);
  if (!(c.rowBytes == 64 || (c.rowBytes >= 128 && c.rowBytes % 128 == 0)))
    return fmt::format("{}'s shared-memory rows would be {} bytes ({} elements along its contiguous dimension); the "
                       "swizzled layout needs 64 bytes or a multiple of 128",
                       opName, c.rowBytes, c.rowElems);
  if (c.rowElems % align) return fmt::format("{}'s tile extent {} is not a multiple of its alignment {}", opName, c.rowElems, align);
  int vecPerRow = c.rowElems / align;
  int vecs = c.rows * vecPerRow;
  if (threads % vecPerRow || vecs % threads)
    return fmt::format("{}'s tile ({} vectors of {} B) does not divide evenly among {} threads", opName, vecs, vecBytes,
                       threads);
  if (vecs / threads > 32) return fmt::format("{}'s tile needs more than 32 copies per thread", opName);
  return "";
}

struct WarpChoice {
  int wm = 0, wn = 0;
  std::string problem;
};

// Why (wm, wn) warps cannot run the tile, or "".
std::string warpProblem(int tileM, int tileN, int tileK, int wm, int wn, const OperandPlan& a, const OperandPlan& b,
                        int vecWidth) {
  int threads = wm * wn * 32;
  if (tileM % wm || (tileM / wm) % 16) return fmt::format("warp tile M = {} / {} is not a multiple of 16", tileM, wm);
  if (tileN % wn || (tileN / wn) % 16) return fmt::format("warp tile N = {} / {} is not a multiple of 16", tileN, wn);
  int warpN = tileN / wn;
  if (warpN % vecWidth || ((16 * warpN / vecWidth) % 32))
    return fmt::format("warp tile N = {} does not fit the epilogue's {}-column vectors", warpN, vecWidth);
  int ea = elementBytes(a.dtype), eb = elementBytes(b.dtype);
  std::string p = copierProblem("A", copierShape(a.layout == Layout::Row, tileM, tileK, ea), a.align, ea, threads);
  if (p.empty()) p = copierProblem("B", copierShape(b.layout == Layout::Col, tileN, tileK, eb), b.align, eb, threads);
  return p;
}

WarpChoice chooseWarps(int tileM, int tileN, int tileK, const OperandPlan& a, const OperandPlan& b, int vecWidth) {
  // 8 warps for the big tiles (128x256 and up), 4 otherwise; fewer when the tile is too small.
  std::vector<int> counts = tileM * tileN >= 128 * 256 ? std::vector<int>{8, 4, 2, 1} : std::vector<int>{4, 2, 1, 8};
  WarpChoice best;
  std::string firstProblem;
  for (int warps : counts) {
    double bestScore = 1e9;
    for (int wm = 1; wm <= warps; wm *= 2) {
      int wn = warps / wm;
      std::string p = warpProblem(tileM, tileN, tileK, wm, wn, a, b, vecWidth);
      if (!p.empty()) {
        if (firstProblem.empty()) firstProblem = p;
        continue;
      }
      // the squarest warp tile reuses fragments best; ties go to more warps along M
      double score = std::fabs(std::log2(double(tileM / wm) / double(tileN / wn)));
      if (score < bestScore - 1e-9) {
        bestScore = score;
        best.wm = wm;
        best.wn = wn;
      }
    }
    if (best.wm) return best;
  }
  best.problem = firstProblem;
  return best;
}

std::string swizzleText(const char* opName, const CopierShape& c) {
  std::string dim = c.contigK ? "K" : (std::string(opName) == "A" ? "M" : "N");
  std::string key = c.rowBytes == 64 ? "Swizzle<3,4,3>: two rows per 128-byte line, chunk ^= line % 8"
                                     : "16-byte chunk ^= row % 8";
  return fmt::format("{} rows x {} B ({}-contiguous), {}; {} B per stage", c.rows, c.rowBytes, dim, key, c.bytes);
}

std::string rangeText(const std::array<int, 3>& t) { return fmt::format("{} x {} x {}", t[0], t[1], t[2]); }

bool isCppKeyword(const std::string& s) {
  static const std::set<std::string> kw = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
      "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
      "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
      "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
      "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
      "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
      "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "union",
      "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
      // type names the generated code declares (members with these names would not compile)
      "Arguments", "Epilogue", "Gemm", "Params", "State"};
  return kw.count(s) > 0 || (s.size() >= 2 && s[0] == '_' && (s[1] == '_' || std::isupper(static_cast<unsigned char>(s[1]))));
}

OperandPlan operandPlan(const std::string& name, DType dt, Layout layout, int align) {
  OperandPlan o;
  o.name = name;
  o.dtype = dt;
  o.cppType = cppElementType(dt);
  o.layout = layout;
  o.cppLayout = layout == Layout::Row ? "kdl::RowMajor" : "kdl::ColMajor";
  o.align = align;
  o.ldName = "ld" + lower(name);
  o.batchStrideName = "batch_stride_" + name;
  return o;
}

}  // namespace

// ---- lowering ----------------------------------------------------------------------------------------

static bool lowerOne(const KernelSpec& s, KernelPlan& p, DiagEngine& diags) {
  auto unsupported = [&](SourceLoc loc, const std::string& msg) {
    diags.error(DiagKind::Unsupported, loc, fmt::format("kernel `{}`: {}", s.name, msg));
  };
  auto decide = [&](std::string what, std::string value, std::string why) {
    p.decisions.push_back({std::move(what), std::move(value), std::move(why)});
  };
  p.name = s.name;
  p.spec = s;
  p.path = KernelPath::GemmSm80;
  p.epilogue = s.epilogue;

  if (isCppKeyword(s.name)) {
    unsupported(s.loc, fmt::format("the name `{}` is reserved in C++ (the generated namespace would not compile); "
                                   "rename the kernel",
                                   s.name));
    return false;
  }

  // -- target
  p.arch = s.arch.value;
  p.archName = archWord(p.arch);
  switch (p.arch) {
    case Arch::SM80: case Arch::SM86: case Arch::SM89: {
      int n = p.arch == Arch::SM80 ? 80 : p.arch == Arch::SM86 ? 86 : 89;
      p.minComputeCapability = n;
      p.gencode = {fmt::format("-gencode=arch=compute_{0},code=sm_{0}", n), "-gencode=arch=compute_90,code=sm_90",
                   "-gencode=arch=compute_90,code=compute_90"};
      p.cmakeArchitectures = fmt::format("{}-real;90", n);
      decide("target", fmt::format("{}", fmt::join(p.gencode, " ")),
             fmt::format("{} SASS for {} (runs on every {}.x GPU from {}.{}), sm_90 SASS for Hopper, and compute_90 PTX "
                         "that newer GPUs JIT-compile",
                         fmt::format("sm_{}", n), p.archName, n / 10, n / 10, n % 10));
      break;
    }
    case Arch::SM90a:
      p.minComputeCapability = 90;
      p.exactComputeCapability = true;
      p.gencode = {"-gencode=arch=compute_90a,code=sm_90a"};
      p.cmakeArchitectures = "90a-real";
      decide("target", p.gencode[0], "arch = sm90a: architecture-specific code that runs only on compute capability 9.0");
      break;
    default:
      return false;  // checkSupported reported it
  }
  decide("path", "kdl::GemmSm80Tma (include/kdl/gemm_sm80_tma.cuh) over kdl::GemmSm80 (include/kdl/gemm_sm80.cuh)",
         "schedule = multistage: a multistage pipeline, ldmatrix and mma.sync tensor-core instructions; on Hopper "
         "(sm_90 code) with 16-bit A row + B col, 64-element K tiles and TMA-describable pointers, the stages are "
         "filled by TMA (one thread, mbarriers), otherwise by every thread's cp.async");

  // -- operands
  const Operand& A = *s.operand("A");
  const Operand& B = *s.operand("B");
  const Operand& D = *s.operand("D");
  const Operand* C = s.operand("C");
  const Sm80Mainloop* ml = findSm80Mainloop(A.dtype);
  p.a = operandPlan("A", A.dtype, A.layout, A.align);
  p.b = operandPlan("B", B.dtype, B.layout, B.align);
  p.d = operandPlan("D", D.dtype, D.layout, D.align);
  if (C) {
    p.hasSource = true;
    p.c = operandPlan("C", C->dtype, C->layout, C->align);
  }
  for (const OperandPlan* o : {&p.a, &p.b}) {
    const Operand& so = o->name == "A" ? A : B;
    bool contigK = (o->name == "A") == (o->layout == Layout::Row);
    decide(o->name,
           fmt::format("{} {}, align {} ({} B)", o->cppType, o->cppLayout, o->align, o->align * elementBytes(o->dtype)),
           fmt::format("{} {} in the spec ({}-contiguous); alignment {}", dtypeWord(o->dtype), layoutWord(o->layout),
                       contigK ? "K" : (o->name == "A" ? "M" : "N"),
                       so.alignOrigin == Origin::Default ? "defaults to 16 bytes, the widest cp.async"
                                                         : originWord(so.alignOrigin)));
  }
  if (A.dtype == DType::F32)
    decide("precision", "tf32 multiply, f32 accumulate",
           "the sm80 tensor cores have no f32 MMA: f32 operands are rounded to tf32 (cvt.rna) as they are loaded");
  p.accumCpp = s.accum.value == DType::S32 ? "int32_t" : "float";
  decide("accumulator", p.accumCpp, fmt::format("accum = {} ({})", dtypeWord(s.accum.value), originWord(s.accum.origin)));
  p.mmaShape = ml->mma;
  decide("mma", fmt::format("mma.sync.aligned.{} ({} x {} -> {})", p.mmaShape, dtypeWord(A.dtype), dtypeWord(B.dtype),
                            dtypeWord(ml->accum)),
         "the sm80 tensor-core instruction for this operand type; each covers 32 bytes of K");

  // -- tile and warps
  p.tileM = s.tile.value[0];
  p.tileN = s.tile.value[1];
  p.tileK = s.tile.value[2];
  decide("tile", rangeText(s.tile.value), originWord(s.tile.origin));
  int ea = elementBytes(A.dtype);
  if ((p.tileK * ea) % 32 || p.tileK * ea < 64) {
    unsupported(s.tile.loc, fmt::format("tile K = {} covers {} bytes of {}; the sm80 path needs a multiple of 32 bytes and "
                                        "at least 64 (tile K >= {})",
                                        p.tileK, p.tileK * ea, dtypeWord(A.dtype), 64 / ea));
    return false;
  }
  WarpChoice wc = chooseWarps(p.tileM, p.tileN, p.tileK, p.a, p.b, p.epilogueVectorWidth);
  if (!wc.wm) {
    unsupported(s.tile.loc, fmt::format("tile {} cannot be generated on the sm80 path: {}", rangeText(s.tile.value),
                                        wc.problem));
    return false;
  }
  p.warpsM = wc.wm;
  p.warpsN = wc.wn;
  p.warpTileM = p.tileM / p.warpsM;
  p.warpTileN = p.tileN / p.warpsN;
  p.threads = p.warpsM * p.warpsN * 32;
  decide("warps",
         fmt::format("{} x {} = {} warps, {} threads; warp tile {} x {} ({} x {} mma tiles of {}x{})", p.warpsM, p.warpsN,
                     p.warpsM * p.warpsN, p.threads, p.warpTileM, p.warpTileN, p.warpTileM / 16, p.warpTileN / 8, 16, 8),
         p.tileM * p.tileN >= 128 * 256
             ? "8 warps for a large tile; the squarest warp tile that the copiers and the epilogue divide evenly"
             : "4 warps; the squarest warp tile that the copiers and the epilogue divide evenly");

  CopierShape ca = copierShape(p.a.layout == Layout::Row, p.tileM, p.tileK, ea);
  CopierShape cb = copierShape(p.b.layout == Layout::Col, p.tileN, p.tileK, elementBytes(B.dtype));
  decide("smem A", swizzleText("A", ca), "ldmatrix reads 8 rows of one chunk and cp.async writes 8 chunks of a row; "
                                         "the XOR swizzle makes both conflict-free");
  decide("smem B", swizzleText("B", cb), "as for A");

  // -- stages and shared memory
  p.stages = s.stages.value;
  if (p.stages < 2 || p.stages > 8) {
    unsupported(s.stages.loc, fmt::format("stages = {}: the sm80 path pipelines 2 to 8 stages", p.stages));
    return false;
  }
  p.mainloopSmemBytes = size_t(p.stages) * size_t(ca.bytes + cb.bytes);
  p.epilogueSmemBytes = size_t(p.warpsM * p.warpsN) * 16 * size_t(p.warpTileN + 8) * 4;
  p.smemBytes = std::max(p.mainloopSmemBytes, p.epilogueSmemBytes);
  size_t limit = size_t(maxSharedMemoryPerBlock(p.arch));
  if (p.smemBytes > limit) {
    size_t perStage = size_t(ca.bytes + cb.bytes);
    unsupported(s.stages.loc, fmt::format("{} stages need {} bytes of shared memory, more than the {} bytes a block can "
                                          "have on {}; at most {} stages fit",
                                          p.stages, p.smemBytes, limit, p.archName, limit / perStage));
    return false;
  }
  decide("stages", std::to_string(p.stages),
         fmt::format("{}; {} B of shared memory per block ({} B mainloop, {} B epilogue staging; the {} limit is {} B)",
                     originWord(s.stages.origin), p.smemBytes, p.mainloopSmemBytes, p.epilogueSmemBytes, p.archName,
                     limit));

  // -- raster and split-K
  p.rasterAlongM = s.raster.value == Raster::AlongM;
  decide("raster", p.rasterAlongM ? "along_m (RasterAlongM = true)" : "along_n (RasterAlongM = false)",
         fmt::format("{}; tiles visited in bands of 8 for L2 reuse", originWord(s.raster.origin)));
  p.serialSplitK = s.splitK.value == SplitKMode::Serial;
  p.maxSplitK = p.serialSplitK ? std::max(1, s.splitKSlices.value) : 1;
  decide("split_k",
         p.serialSplitK ? fmt::format("serial, 1..{} slices at run time (default {})", p.maxSplitK, p.maxSplitK) : "none",
         p.serialSplitK ? "slices of a tile add into a workspace in order (per-tile semaphores); the last runs the epilogue"
                        : originWord(s.splitK.origin));

  // -- epilogue and arguments
  const Epilogue& e = s.epilogue;
  for (size_t i = 1; i < e.outputs.size(); ++i)
    if (e.outputs[i].kind == EpiOutput::Kind::Tensor)
      p.extraOutputs.push_back(operandPlan(e.outputs[i].name, e.outputs[i].dtype, Layout::Row, 1));
  decide("epilogue", renderEpilogueSummary(e),
         fmt::format("f32 math, {} columns per call; one rounding at each store (saturating for integer and fp8 outputs)",
                     p.epilogueVectorWidth));

  auto arg = [&](std::string name, ArgPlan::Kind kind, ArgPlan::Role role, DType dt, int index) {
    ArgPlan a;
    a.name = std::move(name);
    a.kind = kind;
    a.role = role;
    a.dtype = dt;
    a.cppType = cppElementType(dt);
    a.index = index;
    p.args.push_back(a);
    return &p.args.back();
  };
  arg("A", ArgPlan::Kind::Tensor, ArgPlan::Role::OperandIn, A.dtype, 0);
  arg("B", ArgPlan::Kind::Tensor, ArgPlan::Role::OperandIn, B.dtype, 1);
  if (C) arg("C", ArgPlan::Kind::Tensor, ArgPlan::Role::OperandIn, C->dtype, 2);
  arg("D", ArgPlan::Kind::Tensor, ArgPlan::Role::OperandOut, D.dtype, 3);
  // The epilogue's params, inputs and extra outputs in declaration order.
  struct Decl { SourceLoc loc; int kind; int index; };
  std::vector<Decl> decls;
  for (size_t i = 0; i < e.params.size(); ++i) decls.push_back({e.params[i].loc, 0, int(i)});
  for (size_t i = 0; i < e.inputs.size(); ++i) decls.push_back({e.inputs[i].loc, 1, int(i)});
  for (size_t i = 1; i < e.outputs.size(); ++i) decls.push_back({e.outputs[i].loc, 2, int(i)});
  std::stable_sort(decls.begin(), decls.end(), [](const Decl& x, const Decl& y) {
    if (x.loc.valid() != y.loc.valid()) return !x.loc.valid();
    return x.loc.valid() && locBefore(x.loc, y.loc);
  });
  for (const Decl& d : decls) {
    if (d.kind == 0) {
      ArgPlan* a = arg(e.params[d.index].name, ArgPlan::Kind::Param, ArgPlan::Role::Param, DType::F32, d.index);
      a->defaultValue = e.params[d.index].defaultValue;
    } else if (d.kind == 1) {
      const EpiInput& in = e.inputs[d.index];
      bool scalar = in.broadcast == Broadcast::Scalar;
      ArgPlan* a = arg(in.name, scalar ? ArgPlan::Kind::DeviceScalar : ArgPlan::Kind::Vector, ArgPlan::Role::Input,
                       in.dtype, d.index);
      if (!scalar) a->broadcast = in.broadcast == Broadcast::Row ? "row" : "col";
    } else {
      const EpiOutput& o = e.outputs[d.index];
      if (o.kind == EpiOutput::Kind::AmaxReduction)
        arg(o.name, ArgPlan::Kind::DeviceScalar, ArgPlan::Role::AmaxOutput, DType::F32, d.index);
      else
        arg(o.name, ArgPlan::Kind::Tensor, ArgPlan::Role::TensorOutput, o.dtype, d.index);
    }
  }
  // C++ member names must be unique and legal.
  std::set<std::string> members = {"m", "n", "k", "batch", "split_k"};
  std::vector<std::string> argNames;
  for (const ArgPlan& a : p.args) {
    std::vector<std::string> mine = {a.name};
    if (a.kind == ArgPlan::Kind::Tensor) {
      mine.push_back("ld" + lower(a.name));
      mine.push_back("batch_stride_" + a.name);
    } else if (a.kind == ArgPlan::Kind::Vector) {
      mine.push_back("batch_stride_" + a.name);
    }
    for (const std::string& m : mine) {
      SourceLoc loc = s.loc;
      for (const EpiParam& x : e.params) if (x.name == a.name) loc = x.loc;
      for (const EpiInput& x : e.inputs) if (x.name == a.name) loc = x.loc;
      if (isCppKeyword(m)) {
        unsupported(loc, fmt::format("the name `{}` is reserved in the generated C++; rename it", m));
        return false;
      }
      if (!members.insert(m).second) {
        unsupported(loc, fmt::format("`{}` would be declared twice in the generated Arguments struct (it also names a "
                                     "size, leading dimension or batch stride); rename it",
                                     m));
        return false;
      }
    }
    argNames.push_back(a.name);
  }
  decide("arguments", fmt::format("{}", fmt::join(argNames, ", ")),
         "the C ABI order: operands, then the epilogue's params, inputs and extra outputs as declared");
  return true;
}

std::vector<KernelPlan> lower(const std::vector<KernelSpec>& specs, DiagEngine& diags) {
  std::vector<KernelPlan> plans;
  for (const KernelSpec& s : specs) {
    if (!checkSupported(s, diags)) continue;
    KernelPlan p;
    if (lowerOne(s, p, diags)) plans.push_back(std::move(p));
  }
  return plans;
}

std::string renderPlans(const std::vector<KernelPlan>& plans) {
  std::string out;
  for (const KernelPlan& p : plans) {
    out += fmt::format("kernel {} ({} {}):\n", p.name, opWord(p.spec.op.value), p.archName);
    size_t width = 0;
    for (const Decision& d : p.decisions) width = std::max(width, d.what.size());
    for (const Decision& d : p.decisions) {
      out += fmt::format("  {:<{}}  {}\n", d.what, width, d.value);
      out += fmt::format("  {:<{}}    because: {}\n", "", width, d.why);
    }
    out += fmt::format("  {:<{}}  {}\n", "instance", width, p.templateInstance());
  }
  return out;
}

}  // namespace kdl::codegen
