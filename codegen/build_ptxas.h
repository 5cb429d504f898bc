// ptxas's resource report of one compiled kernel, and the gate `kdlc build` applies to it.
//
// Every compile runs with `-Xptxas -v`, so nvcc's output holds, for every function ptxas compiled
// and every SASS target: registers, barriers, static shared memory, stack frame, spill stores and
// loads, and the "Potential Performance Loss" notes ptxas prints as info lines, e.g.
//   ptxas info    : (C7508) Potential Performance Loss: 'setmaxnreg' ignored to maintain ...
//   ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized ...
// (the code number depends on the reason: CUDA 13.0 says "(C7505) ... 'setmaxnreg' ignored to allow
// debugging" and "(C7520) ... serialized due to ... WG.AR in divergent path", so the gate matches
// ptxas's words, not the numbers). ptxas prints them as info lines, not warnings. A kernel is refused
// when any function spills, when setmaxnreg is ignored, when wgmma is serialized (any reason), or
// on any other "Potential Performance Loss"; and when nvcc's output holds no report at all although
// ptxas ran (a launcher or NVCC_APPEND_FLAGS swallowed it), since then nothing was checked.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kdl::codegen {

// The flags that make nvcc print ptxas's report; every `kdlc build` compile gets them.
inline const std::vector<std::string>& ptxasReportFlags() {
  static const std::vector<std::string> flags = {"-Xptxas", "-v"};
  return flags;
}

struct PtxasFunction {
  std::string name;  // demangled when it is a C++ name
  std::string arch;  // "sm_90a": the target of the entry function compiled last
  bool entry = false;
  int registers = -1;  // -1: ptxas did not say
  int barriers = 0;
  int64_t smemBytes = 0, stackBytes = 0, spillStoreBytes = 0, spillLoadBytes = 0;
  double compileMs = 0;
};

struct PtxasReport {
  std::vector<PtxasFunction> functions;
  std::vector<std::string> notes;     // ptxas info lines with a (Cnnnn) code, and ptxas warnings
  std::vector<std::string> problems;  // why the gate refuses the kernel, in ptxas's words
  std::string otherOutput;            // what nvcc printed besides ptxas's info lines (warnings)
};

// Reads nvcc's combined output. `expectSass`: the compile produced SASS (some -gencode had
// code=sm_*), so ptxas ran and an output without any entry function is itself a problem.
PtxasReport parsePtxasReport(const std::string& nvccOutput, bool expectSass);

// True when one of the -gencode flags asks for SASS (code=sm_NN...), so ptxas runs at build time.
bool gencodeProducesSass(const std::vector<std::string>& gencode);


// The nvcc flag of the second try `kdlc build` (and `kdlc ptxas-gate`) gives an sm90a kernel whose
// first compile ptxas reports losing performance: kdl::GemmSm90's TMA-store epilogue without its
// straight-line interior chunks (include/kdl/gemm_sm90.cuh, kEpiWhole) and fp8 promotion one k-tile at a
// time (kPairPromote), a few registers lighter.
inline constexpr const char* kSm90CheckedEpilogueFlag = "-DKDL_SM90_EPILOGUE_CHECKED";
// The flag of the first later try of an sm90a kernel whose functor declares [col] vectors (kColVectors): the
// epilogue loads them itself instead of holding them in registers from the tile's start (8 registers fewer
// through the k-loop; every later try takes the vectors this way, as every build did before v45).
inline constexpr const char* kSm90NoColRegsFlag = "-DKDL_SM90_NO_COL_REGS";
// The macro that caps the staged epilogue's vector width (columns per Epilogue::apply call; include/kdl/
// gemm_sm80.cuh, EpilogueVectorWidth): the later tries, for a kernel whose epilogue lowering's register
// estimate let through at a width where ptxas spills (it is not monotone near the consumers' budget).
inline constexpr const char* kEpilogueMaxWidthMacro = "KDL_EPILOGUE_MAX_VECTOR_WIDTH";

// The extra nvcc flags of each later try (for a successful compile whose report shows a performance loss) for a
// kernel compiled for `gencode`, in order (the first one whose report is clean is kept): for an sm90a target
// (kdl::GemmSm90) the [col] vectors loaded by the epilogue (where the source at `cuPath` declares any), the checked
// epilogue, the staged epilogue capped at 4 columns per call, both, 2 columns, 2 and
// checked; for the others (the multistage path) 4 columns, then 2. Then, where the source at `cuPath` has one
// (`#ifdef KDL_MULTISTAGE_MORE_WARPS`; an empty or unreadable path has none), the multistage kernel's 8-warp form
// (kMoreWarpsMacro, codegen/plan.h), alone and with the narrowest epilogue.
std::vector<std::vector<std::string>> retryFlags(const std::vector<std::string>& gencode, const std::string& cuPath);

// The note printed when a later try is kept, quoting the first report's problems on one line and
// naming the try's flags.
std::string retryNote(const PtxasReport& first, const std::vector<std::string>& flags);

// The report of a library, one line per function and target, then every kernel's notes:
//   kernel  target  regs  spill-st  spill-ld  stack  smem  barriers  ptxas-ms  function
std::string formatPtxasTable(const std::vector<std::pair<std::string, PtxasReport>>& kernels);

}  // namespace kdl::codegen
