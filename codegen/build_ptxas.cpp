// Reading ptxas's report (nvcc -Xptxas -v) and the gate of `kdlc build` (see codegen/build_ptxas.h).
#include "codegen/build_ptxas.h"

#include "codegen/plan.h"

#include <cxxabi.h>

#include <cstdlib>
#include <fstream>
#include <fmt/format.h>
#include <memory>
#include <regex>
#include <sstream>

namespace kdl::codegen {

namespace {

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

// A long template name cut to something a table can show: the head and the tail.
std::string shortName(const std::string& name) {
  constexpr size_t kMax = 140;
  if (name.size() <= kMax) return name;
  return name.substr(0, kMax - 50) + " ... " + name.substr(name.size() - 45);
}

int64_t toInt(const std::string& s) { return std::strtoll(s.c_str(), nullptr, 10); }

// "Used 168 registers, used 1 barriers, 16 bytes smem, 400 bytes cmem[0]" (the fields vary with
// the CUDA version and the function; unknown ones are ignored).
void readUsage(const std::string& text, PtxasFunction& f) {
  static const std::regex field(R"((?:^|,\s*)(?:[Uu]sed\s+)?(\d+)\s+(registers|barriers|bytes smem)\b)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), field); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    if (m[2] == "registers") f.registers = int(toInt(m[1]));
    else if (m[2] == "barriers") f.barriers = int(toInt(m[1]));
    else f.smemBytes = toInt(m[1]);
  }
}

bool isPerformanceLoss(const std::string& line) {
  return line.find("Potential Performance Loss") != std::string::npos ||
         line.find("'setmaxnreg' ignored") != std::string::npos ||
         line.find("wgmma.mma_async instructions are serialized") != std::string::npos;
}

}  // namespace

bool gencodeProducesSass(const std::vector<std::string>& gencode) {
  static const std::regex sass(R"(code=\[?([^,\]]*,)*sm_)");
  for (const std::string& g : gencode)
    if (std::regex_search(g, sass)) return true;
  return false;
}

namespace {
// The emitted NAME.cu at `cuPath`; empty when there is none or it cannot be read.
std::string readSource(const std::string& cuPath) {
  if (cuPath.empty()) return {};
  std::ifstream in(cuPath, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

std::vector<std::vector<std::string>> retryFlags(const std::vector<std::string>& gencode, const std::string& cuPath) {
  const std::string w4 = std::string("-D") + kEpilogueMaxWidthMacro + "=4";
  const std::string w2 = std::string("-D") + kEpilogueMaxWidthMacro + "=2";
  const std::string more = std::string("-D") + kMoreWarpsMacro;
  bool sm90a = false;
  for (const std::string& g : gencode)
    sm90a = sm90a || g.find("sm_90a") != std::string::npos || g.find("compute_90a") != std::string::npos;
  std::vector<std::vector<std::string>> tries =
      sm90a ? std::vector<std::vector<std::string>>{{kSm90CheckedEpilogueFlag}, {w4}, {w4, kSm90CheckedEpilogueFlag},
                                                    {w2}, {w2, kSm90CheckedEpilogueFlag}}
            : std::vector<std::vector<std::string>>{{w4}, {w2}};
  const std::string source = readSource(cuPath);
  // The epilogue functor holds [col] vectors (include/kdl/epilogue.cuh, ColVector): load them in the epilogue first.
  if (sm90a && source.find("static constexpr int kColVectors = ") != std::string::npos)
    tries.insert(tries.begin(), std::vector<std::string>{kSm90NoColRegsFlag});
  // The kernel has an 8-warp form.
  if (source.find(std::string("#ifdef ") + kMoreWarpsMacro) != std::string::npos) {
    tries.push_back({more});
    tries.push_back(sm90a ? std::vector<std::string>{more, w2, kSm90CheckedEpilogueFlag} : std::vector<std::string>{more, w2});
  }
  return tries;
}

std::string retryNote(const PtxasReport& first, const std::vector<std::string>& flags) {
  std::string problems;
  for (const std::string& p : first.problems) {
    if (!problems.empty()) problems += "; ";
    problems += p.size() > 160 ? p.substr(0, 157) + "..." : p;
  }
  bool checked = false, narrowed = false, more = false, cols = false;
  std::string joined;
  for (const std::string& f : flags) {
    checked = checked || f == kSm90CheckedEpilogueFlag;
    cols = cols || f == kSm90NoColRegsFlag;
    narrowed = narrowed || f.find(kEpilogueMaxWidthMacro) != std::string::npos;
    more = more || f.find(kMoreWarpsMacro) != std::string::npos;
    joined += (joined.empty() ? "" : " ") + f;
  }
  std::vector<std::string> what;
  if (more) what.push_back("the kernel's 8-warp form");
  if (cols) what.push_back("its [col] vectors loaded by the epilogue");
  if (checked) what.push_back("the checked one");
  if (narrowed) what.push_back("a narrower staged epilogue");
  std::string built = what[0];
  for (size_t i = 1; i < what.size(); ++i) built += (i + 1 == what.size() ? " and " : ", ") + what[i];
  if (more)
    return "the kernel lost performance in ptxas on 4 warps at every epilogue width (" + problems + "); built with " +
           built + " (" + joined + ")";
  return "the epilogue lost performance in ptxas (" + problems + "); built with " + built + " (" + joined + ")";
}

PtxasReport parsePtxasReport(const std::string& nvccOutput, bool expectSass) {
  static const std::regex compiling(R"(^ptxas info\s*: Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex properties(R"(^ptxas info\s*: Function properties for (\S+))");
  static const std::regex frame(R"(^\s+(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex usage(R"(^ptxas info\s*: (Used \d+ registers.*))");
  static const std::regex time(R"(^ptxas info\s*: Compile time = ([0-9.]+) ms)");
  static const std::regex plainInfo(R"(^ptxas info\s*: )");
  static const std::regex ptxasLine(R"(^ptxas\b)");

  PtxasReport r;
  // nvcc runs ptxas once per SASS target; each run starts with "N bytes gmem" and may report device
  // functions before the first "Compiling entry function ... for 'sm_NN'" that names its target.
  static const std::regex runStart(R"(^ptxas info\s*: \d+ bytes gmem)");
  size_t runFirst = 0;  // the first function of the current run
  std::string arch;
  int current = -1;  // index into r.functions: the function the next properties/usage lines are about
  auto add = [&](const std::string& mangled, bool entry) {
    PtxasFunction f;
    f.name = demangle(mangled);
    f.arch = arch;
    f.entry = entry;
    r.functions.push_back(f);
    return int(r.functions.size() - 1);
  };

  std::istringstream in(nvccOutput);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (std::regex_search(line, runStart)) {
      runFirst = r.functions.size();
      arch.clear();
      current = -1;
    } else if (std::regex_search(line, m, compiling)) {
      arch = m[2];
      for (size_t i = runFirst; i < r.functions.size(); ++i)
        if (r.functions[i].arch.empty()) r.functions[i].arch = arch;
      current = add(m[1], true);
    } else if (std::regex_search(line, m, properties)) {
      // An entry's properties follow its "Compiling entry function" line; any other function is new.
      bool sameEntry = current >= 0 && r.functions[size_t(current)].entry &&
                       r.functions[size_t(current)].name == demangle(m[1]) && r.functions[size_t(current)].registers < 0;
      if (!sameEntry) current = add(m[1], false);
    } else if (std::regex_search(line, m, frame)) {
      if (current >= 0) {
        PtxasFunction& f = r.functions[size_t(current)];
        f.stackBytes = toInt(m[1]);
        f.spillStoreBytes = toInt(m[2]);
        f.spillLoadBytes = toInt(m[3]);
      }
    } else if (std::regex_search(line, m, usage)) {
      if (current >= 0) readUsage(m[1], r.functions[size_t(current)]);
    } else if (std::regex_search(line, m, time)) {
      if (current >= 0) r.functions[size_t(current)].compileMs += std::strtod(m[1].str().c_str(), nullptr);
    } else if (std::regex_search(line, ptxasLine)) {
      bool info = std::regex_search(line, plainInfo);
      // Plain info lines ("0 bytes gmem") are noise; coded info lines and warnings are notes.
      if (!info || line.find("(C") != std::string::npos || isPerformanceLoss(line)) r.notes.push_back(line);
      if (isPerformanceLoss(line)) r.problems.push_back(line);
      if (!info) r.otherOutput += line + "\n";  // ptxas's warnings are shown like nvcc's
    } else {
      r.otherOutput += line + "\n";
    }
  }
  for (const PtxasFunction& f : r.functions)
    if (f.spillStoreBytes > 0 || f.spillLoadBytes > 0)
      r.problems.push_back(fmt::format("{} spills registers for {}: {} bytes spill stores, {} bytes spill loads", f.arch,
                                       shortName(f.name), f.spillStoreBytes, f.spillLoadBytes));
  bool anyEntry = false;
  for (const PtxasFunction& f : r.functions) anyEntry |= f.entry;
  if (expectSass && !anyEntry)
    r.problems.push_back("nvcc's output holds no ptxas report (-Xptxas -v), so nothing was checked; a compiler "
                         "launcher or NVCC_APPEND_FLAGS may have removed it");
  return r;
}

std::string formatPtxasTable(const std::vector<std::pair<std::string, PtxasReport>>& kernels) {
  size_t nameWidth = 6;
  for (const auto& [kernel, r] : kernels) nameWidth = std::max(nameWidth, kernel.size());
  std::string out = fmt::format("{:<{}}  {:<7} {:>5} {:>9} {:>9} {:>6} {:>7} {:>8} {:>9}  {}\n", "kernel", nameWidth,
                                "target", "regs", "spill-st", "spill-ld", "stack", "smem", "barriers", "ptxas-ms",
                                "function");
  for (const auto& [kernel, r] : kernels)
    for (const PtxasFunction& f : r.functions)
      out += fmt::format("{:<{}}  {:<7} {:>5} {:>9} {:>9} {:>6} {:>7} {:>8} {:>9.1f}  {}{}\n", kernel, nameWidth,
                         f.arch.empty() ? "-" : f.arch, f.registers < 0 ? std::string("-") : std::to_string(f.registers),
                         f.spillStoreBytes, f.spillLoadBytes, f.stackBytes, f.smemBytes, f.barriers, f.compileMs,
                         f.entry ? "" : "(device function) ", shortName(f.name));
  for (const auto& [kernel, r] : kernels) {
    if (r.notes.empty() && r.problems.empty()) continue;
    out += fmt::format("\n{}:\n", kernel);
    for (const std::string& n : r.notes) out += "  " + n + "\n";
    for (const std::string& p : r.problems)
      if (p.rfind("ptxas", 0) != 0) out += "  kdlc: " + p + "\n";  // ptxas's own lines are among the notes
  }
  return out;
}

}  // namespace kdl::codegen
