// `kdlc emit`, `kdlc build`, `kdlc cache` and `kdlc list --plan`: parse the options, run the front
// end, and hand the work to codegen/build.h (emitToDirectory, buildKernels); this file only decides
// what the user asked for and prints.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fmt/format.h>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "codegen/build.h"
#include "codegen/codegen.h"
#include "codegen/compile_cache.h"
#include "codegen/plan.h"
#include "codegen/support.h"
#include "dsl/diagnostics.h"
#include "dsl/frontend.h"
#include "tools/kdlc/commands.h"
#include "tools/kdlc/options.h"

#ifndef KDL_SOURCE_INCLUDE_DIR
#define KDL_SOURCE_INCLUDE_DIR ""
#endif

namespace kdlc {

namespace cg = kdl::codegen;

static const char* kEmitHelp = R"(Usage: kdlc emit [options] FILE -o DIR

Writes, for every kernel FILE produces (or only the --kernel ones), NAME.h (the host API) and NAME.cu
(the kernel), plus manifest.json describing every kernel, into DIR. Files are deterministic and
compile with nvcc alone:  nvcc -std=c++17 <gencode flags from manifest.json> -I<kdl include dir> -c NAME.cu
All or nothing: the files are written to a temporary directory inside DIR first, then moved into
place; files whose bytes did not change keep their time. DIR belongs to one spec: emitting another
spec there is an error, and the files of kernels the spec no longer has are removed.

Options:
  -o DIR                    the output directory (created when missing)
  --kernel NAME             only this kernel (repeatable)
  --depfile FILE            also write a Make-style depfile: DIR/manifest.json depends on FILE and every import
  --touch-manifest          update manifest.json's time even when its bytes are unchanged (for build systems)
  --torch                   also write the PyTorch extension of the spec: <stem>_torch.cpp (one op per kernel,
                            torch.ops.NS.KERNEL, registered with TORCH_LIBRARY; a CUDA and a Meta implementation)
                            and <stem>_torch_build.py, which builds <stem>_torch.so from DIR, the kdl include
                            directory and PyTorch alone (python <stem>_torch_build.py --kdl-include DIR);
                            manifest.json lists the ops and their schemas under "torch". See docs/torch.md.
  --torch-namespace NS      the ops' namespace, a C identifier (default: kdl_<stem>, other characters made `_`)
  --diagnostics=text|json, --color, --max-errors, --max-kernels, --max-depth   see `kdlc --help`
)";

static const char* kBuildHelp = R"(Usage: kdlc build [options] FILE -o DIR

Emits like `kdlc emit`, then compiles every NAME.cu with nvcc (the kernel's own -gencode flags,
-std=c++17 -O3 -Xcompiler -fPIC -Xptxas -v, then --nvcc-flag/$KDL_NVCC_FLAGS) into DIR/lib<stem>.a and
DIR/lib<stem>.so (stem: FILE's name without .kdl), beside the headers. Compiled objects are cached by
the content of everything that reaches nvcc (sources, KDL headers, flags, nvcc's path and version,
NVCC_PREPEND_FLAGS/NVCC_APPEND_FLAGS, and the host compiler nvcc uses), with nvcc's output. Builds into
one DIR may run at once; SIGINT/SIGTERM stop the compilers and leave no temporary files (exit 128 +
signal). See docs/building.md.

ptxas gate: the build fails, naming the kernel and quoting ptxas, when any kernel spills registers
(nonzero "bytes spill stores/loads"), when ptxas ignores setmaxnreg ("'setmaxnreg' ignored", e.g.
C7508) or serializes wgmma ("wgmma.mma_async instructions are serialized", e.g. C7515), or prints any
other "Potential Performance Loss" (the code number depends on the reason; the words are matched).
Before it fails, such a kernel is compiled again with lighter epilogues and, for a multistage kernel
on 4 warps of 128 accumulators, with its 8-warp form (-DKDL_MULTISTAGE_MORE_WARPS; `kdlc list --plan`:
more warps); the first clean try is kept, with a note (docs/building.md).
Cached objects carry their report, so a cache hit is gated too. The report (registers, spills, stack,
static shared memory, barriers, ptxas time per function and target) is written to
DIR/lib<stem>.ptxas.txt with the libraries.

Options:
  -o DIR                    the output directory
  --kernel NAME             only this kernel (repeatable)
  --nvcc PATH               the CUDA compiler (default: $KDL_NVCC, $CUDACXX, nvcc on PATH, /usr/local/cuda/bin/nvcc)
  --launcher CMD            run each compile as CMD nvcc ARGS..., e.g. sccache or distcc (default: $KDL_LAUNCHER)
  -j N                      parallel nvcc jobs (default: the number of CPUs)
  --cache-dir DIR           the compile cache (default: $KDL_CACHE_DIR, $XDG_CACHE_HOME/kdl, ~/.cache/kdl)
  --cache-max-size SIZE     cap on the cache, least recently used entries go first (default: $KDL_CACHE_MAX_SIZE, 2G)
  --no-cache                compile everything
  --nvcc-flag FLAG          one more nvcc flag after kdlc's, e.g. --nvcc-flag=-lineinfo (repeatable; also the
                            words of $KDL_NVCC_FLAGS, which come first); part of the cache key
  --allow-ptxas-warnings    build kernels the ptxas gate refuses (a spill, an ignored setmaxnreg, serialized
                            wgmma cost performance): their report is printed as a warning instead
  --allow-ptxas-warnings=K1,K2   the same for the kernels named only (repeatable); the others stay gated
  -v, --verbose             print every kernel's ptxas report
  --torch                   also build the PyTorch extension (see `kdlc emit --help`): after the libraries, runs
                            PY DIR/<stem>_torch_build.py --kdl-include <kdlc's include dir> --nvcc <the nvcc above>
                            --kernels-lib DIR/lib<stem>.a --out DIR/<stem>_torch.so; load it with
                            torch.ops.load_library. A failure prints the command and its output.
  --torch-namespace NS      the ops' namespace (default: kdl_<stem>)
  --python PY               the Python (with torch) that runs the build script (default: $KDL_PYTHON, python3 on PATH)
  --depfile FILE            as for emit
  --diagnostics=text|json, --color, --max-errors, --max-kernels, --max-depth   see `kdlc --help`
)";

static const char* kCacheHelp = R"(Usage: kdlc cache --info | --clear [--cache-dir DIR]

The compile cache of `kdlc build`.
  --info                    print its directory, entries, bytes and cap
  --clear                   remove every entry (nothing else in the directory is touched)
  --cache-dir DIR           the cache (default: $KDL_CACHE_DIR, $XDG_CACHE_HOME/kdl, ~/.cache/kdl)
  --cache-max-size SIZE     the cap --info reports (default: $KDL_CACHE_MAX_SIZE, 2G)
)";

static const char* kPtxasGateHelp = R"(Usage: kdlc ptxas-gate [--allow-ptxas-warnings] -- COMPILER ARGS...

Runs one compile (COMPILER may itself be a launcher such as sccache) and applies `kdlc build`'s ptxas
gate to it: the compile needs -Xptxas -v; ptxas's report is written to OBJECT.ptxas.txt (OBJECT: the
-o argument), and a spill, an ignored setmaxnreg or serialized wgmma removes OBJECT and fails (exit 1)
with the kernel's name and ptxas's words. kdl_add_kernels uses it as the compiler launcher of the
emitted kernels (cmake/KdlKernels.cmake). Exit: the compiler's status when it failed, else 0 or 1.
  --allow-ptxas-warnings    report such kernels as a warning and keep them
)";

namespace {

std::string baseName(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

// The library stem of a spec file: its name without `.kdl`.
std::string libraryStem(const std::string& file) {
  std::string stem = baseName(file);
  if (stem.size() > 4 && stem.ends_with(".kdl")) stem.resize(stem.size() - 4);
  return stem;
}

bool isCIdentifier(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char ch : s)
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_')) return false;
  return true;
}

// 1: consumed `name VALUE` or `name=VALUE`, 0: not this option, -1: the value is missing.
int optionValue(Args& args, const std::string& a, const std::string& name, std::string& out) {
  if (a == name) {
    if (args.done()) return -1;
    out = args.next();
    return 1;
  }
  if (name.size() > 2 && a.rfind(name + "=", 0) == 0) {
    out = a.substr(name.size() + 1);
    return 1;
  }
  return 0;
}

bool parseJobs(const std::string& v, int& jobs) {
  int n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n < 1 || n > 256) return false;
  jobs = n;
  return true;
}

// The cap from --cache-max-size, else $KDL_CACHE_MAX_SIZE, else the default; nullopt (reported)
// when malformed.
std::optional<uint64_t> cacheCap(const std::string& option) {
  const char* env = std::getenv(cg::kCacheMaxSizeEnv);
  std::string text = !option.empty() ? option : env ? env : "";
  if (text.empty()) return cg::kDefaultCacheMaxBytes;
  std::optional<uint64_t> v = cg::parseByteSize(text);
  if (!v) {
    std::string source = !option.empty() ? "--cache-max-size" : std::string("$") + cg::kCacheMaxSizeEnv;
    usageError(fmt::format("{} takes a size such as 2G, 500M or 1048576 (bytes), not `{}`", source, text));
  }
  return v;
}

struct EmitCommand {
  bool build = false;
  CommonOptions common;
  std::string file, outDir, depfile;
  std::vector<std::string> kernels;
  bool touchManifest = false;
  bool torch = false;
  std::string torchNamespace;  // --torch-namespace
  // build only
  std::string nvcc, launcher, cacheDir, cacheMaxSize, python;
  std::vector<std::string> nvccFlags;  // --nvcc-flag
  std::vector<std::string> allowPtxasFor;  // --allow-ptxas-warnings=K1,K2
  bool noCache = false, allowPtxasWarnings = false, verbose = false;
  int jobs = int(std::max(1u, std::thread::hardware_concurrency()));
};

// Parses `kdlc emit|build` options; returns an exit code when the command is already answered
// (help, or a usage error).
std::optional<int> parseEmitCommand(Args& args, EmitCommand& c) {
  const char* cmd = c.build ? "build" : "emit";
  while (!args.done()) {
    std::string a = args.next();
    if (a == "-h" || a == "--help") {
      std::cout << (c.build ? kBuildHelp : kEmitHelp);
      return kOk;
    }
    if (parseCommon(a, args, c.common)) continue;
    std::string v;
    int r;
    if ((r = optionValue(args, a, "-o", c.outDir)) || (r = optionValue(args, a, "--depfile", c.depfile))) {
      if (r < 0) return usageError(a + " needs a value");
      continue;
    }
    if ((r = optionValue(args, a, "--kernel", v))) {
      if (r < 0) return usageError("--kernel needs a kernel name");
      c.kernels.push_back(v);
      continue;
    }
    if (a == "--touch-manifest") { c.touchManifest = true; continue; }
    if (a == "--torch") { c.torch = true; continue; }
    if ((r = optionValue(args, a, "--torch-namespace", c.torchNamespace))) {
      if (r < 0) return usageError("--torch-namespace needs a namespace, e.g. --torch-namespace my_ops");
      if (!isCIdentifier(c.torchNamespace))
        return usageError(fmt::format("--torch-namespace takes a C identifier (letters, digits and `_`, not starting "
                                      "with a digit), not `{}`",
                                      c.torchNamespace));
      continue;
    }
    if (c.build) {
      if ((r = optionValue(args, a, "--nvcc", c.nvcc)) || (r = optionValue(args, a, "--cache-dir", c.cacheDir)) ||
          (r = optionValue(args, a, "--python", c.python)) ||
          (r = optionValue(args, a, "--launcher", c.launcher)) ||
          (r = optionValue(args, a, "--cache-max-size", c.cacheMaxSize))) {
        if (r < 0) return usageError(a + " needs a value");
        continue;
      }
      if (a == "--no-cache") { c.noCache = true; continue; }
      if (a == "--allow-ptxas-warnings") { c.allowPtxasWarnings = true; continue; }
      if (a.rfind("--allow-ptxas-warnings=", 0) == 0) {
        std::string list = a.substr(a.find('=') + 1) + ",";
        for (size_t i = 0, j; (j = list.find(',', i)) != std::string::npos; i = j + 1)
          if (j > i) c.allowPtxasFor.push_back(list.substr(i, j - i));
        if (list == ",") return usageError("--allow-ptxas-warnings= needs kernel names, e.g. --allow-ptxas-warnings=k1,k2");
        continue;
      }
      if (a == "-v" || a == "--verbose") { c.verbose = true; continue; }
      if ((r = optionValue(args, a, "--nvcc-flag", v))) {
        if (r < 0 || v.empty()) return usageError("--nvcc-flag needs a flag, e.g. --nvcc-flag=-lineinfo");
        c.nvccFlags.push_back(v);
        continue;
      }
      if ((r = optionValue(args, a, "-j", v)) || (a.rfind("-j", 0) == 0 && a.size() > 2 && (v = a.substr(2), true))) {
        if (r < 0) return usageError("-j needs a number of jobs");
        if (!parseJobs(v, c.jobs)) return usageError("-j takes a number from 1 to 256, not `" + v + "`");
        continue;
      }
    }
    if (a.size() > 1 && a[0] == '-') return usageError(fmt::format("unknown option `{}` for `kdlc {}`", a, cmd));
    if (!c.file.empty()) return usageError(fmt::format("`kdlc {}` takes exactly one FILE", cmd));
    c.file = a;
  }
  if (c.common.bad) return kUsage;
  if (c.file.empty()) return usageError(fmt::format("`kdlc {}` needs a FILE", cmd));
  if (c.outDir.empty()) return usageError(fmt::format("`kdlc {}` needs an output directory: -o DIR", cmd));
  if (!c.torch && !c.torchNamespace.empty()) return usageError("--torch-namespace names the ops of --torch; add --torch");
  if (!c.torch && !c.python.empty()) return usageError("--python runs the PyTorch extension's build script; add --torch");
  return std::nullopt;
}

// The specs the command names: every kernel of the file, or the --kernel ones in their order.
std::optional<std::vector<kdl::KernelSpec>> selectSpecs(const EmitCommand& c, const std::vector<kdl::KernelSpec>& all) {
  if (c.kernels.empty()) return all;
  std::vector<kdl::KernelSpec> out;
  for (const std::string& k : c.kernels) {
    auto it = std::find_if(all.begin(), all.end(), [&](const kdl::KernelSpec& s) { return s.name == k; });
    if (it == all.end()) {
      std::string names;
      for (const kdl::KernelSpec& s : all) names += (names.empty() ? "" : ", ") + s.name;
      usageError(fmt::format("{} has no kernel named `{}`; it has: {}", c.file, k, names.empty() ? "none" : names));
      return std::nullopt;
    }
    if (std::none_of(out.begin(), out.end(), [&](const kdl::KernelSpec& s) { return s.name == k; })) out.push_back(*it);
  }
  return out;
}

// Prints a failed step in kdlc's words; returns the exit code (128 + signal when interrupted).
int reportStep(const cg::StepResult& r) {
  if (r.signal) {
    std::cerr << fmt::format("kdlc: interrupted (signal {}); stopped the compilers and removed temporary files\n",
                             r.signal);
    return 128 + r.signal;
  }
  std::cerr << "kdlc: error: " << r.error << "\n";
  if (!r.note.empty()) std::cerr << "kdlc: note: " << r.note << "\n";
  return kInputErrors;
}

cg::BuildRequest buildRequest(const EmitCommand& c, const std::vector<cg::KernelPlan>& plans, uint64_t cap) {
  cg::BuildRequest req;
  req.outDir = c.outDir;
  req.libStem = libraryStem(c.file);
  for (const cg::KernelPlan& p : plans) req.kernels.push_back({p.name, p.gencode});
  req.nvcc = c.nvcc;
  req.sourceIncludeDir = KDL_SOURCE_INCLUDE_DIR;
  const char* envLauncher = std::getenv(cg::kLauncherEnv);
  req.launcher = !c.launcher.empty() ? c.launcher : envLauncher ? envLauncher : "";
  req.extraNvccFlags = cg::nvccFlagsFromEnvironment();
  req.extraNvccFlags.insert(req.extraNvccFlags.end(), c.nvccFlags.begin(), c.nvccFlags.end());
  req.allowPtxasWarnings = c.allowPtxasWarnings;
  req.allowPtxasWarningsFor = c.allowPtxasFor;
  req.verbose = c.verbose;
  req.jobs = c.jobs;
  req.useCache = !c.noCache;
  req.cacheDir = c.cacheDir;
  req.cacheMaxBytes = cap;
  return req;
}

}  // namespace

int runEmit(Args& args, bool build) {
  EmitCommand c;
  c.build = build;
  if (std::optional<int> rc = parseEmitCommand(args, c)) return *rc;
  std::optional<uint64_t> cap = build ? cacheCap(c.cacheMaxSize) : cg::kDefaultCacheMaxBytes;
  if (!cap) return kUsage;

  kdl::SourceManager sm;
  kdl::DiagEngine diags(c.common.maxErrors);
  kdl::FrontendResult fr = kdl::runFrontend(sm, c.file, diags, c.common.limits);
  // The input's errors, a refused tile's checked replacement noted on its error (codegen/suggest_tile.cpp).
  auto refuse = [&] {
    cg::noteAcceptedTiles(fr.raw, diags);
    return reportDiagnostics(sm, diags, c.common);
  };
  if (diags.hasErrors()) return refuse();
  std::optional<std::vector<kdl::KernelSpec>> specs = selectSpecs(c, fr.specs);
  if (!specs) return kUsage;
  std::vector<cg::KernelPlan> plans = cg::lower(*specs, diags);
  if (c.torch)
    for (const cg::KernelPlan& p : plans) cg::checkTorchSupported(p.spec, diags);
  if (diags.hasErrors()) return refuse();
  if (build && plans.empty()) {
    reportDiagnostics(sm, diags, c.common);  // warnings, if any
    std::cerr << fmt::format("kdlc: error: {} defines no kernels; nothing to build\n", c.file);
    return kInputErrors;
  }

  std::string python;  // build --torch: found before anything compiles
  if (build && c.torch) {
    std::string why;
    python = cg::findPython(c.python, why);
    if (python.empty()) {
      std::cerr << "kdlc: error: " << why << "\n";
      return kInputErrors;
    }
  }

  cg::InterruptGuard interrupts;
  cg::EmitOptions eo;
  eo.specName = baseName(c.file);
  eo.specHash = cg::hashSpecSources(sm);
  if (c.torch) {
    eo.torchStem = libraryStem(c.file);
    eo.torchNamespace = c.torchNamespace.empty() ? cg::defaultTorchNamespace(eo.torchStem) : c.torchNamespace;
  }
  cg::EmitRequest er;
  er.outDir = c.outDir;
  er.specName = eo.specName;
  er.files = cg::emit(plans, eo);
  er.touchManifest = c.touchManifest;
  er.depfile = c.depfile;
  for (uint32_t id = 1; id <= sm.fileCount(); ++id) er.depInputs.push_back(sm.path(id));
  if (cg::StepResult r = cg::emitToDirectory(er); !r.ok) return reportStep(r);
  int rc = reportDiagnostics(sm, diags, c.common);  // warnings, if any
  if (!build) {
    if (!c.common.jsonDiagnostics)
      std::cerr << fmt::format("kdlc: wrote {} kernel{} to {}{}\n", plans.size(), plans.size() == 1 ? "" : "s", c.outDir,
                               c.torch ? fmt::format(", with the PyTorch extension (torch.ops.{})", eo.torchNamespace) : "");
    return rc;
  }
  auto progress = [](const std::string& line) { std::cerr << line << "\n"; };
  cg::TorchBuildRequest tr;
  cg::StepResult r = cg::buildKernels(buildRequest(c, plans, *cap), progress, &tr.kernels);
  if (!r.ok) return reportStep(r);
  if (c.torch) {
    tr.outDir = c.outDir;
    tr.stem = libraryStem(c.file);
    tr.python = python;
    tr.jobs = c.jobs;
    if (cg::StepResult t = cg::buildTorchExtension(tr, progress); !t.ok) return reportStep(t);
  }
  return rc;
}

int runPtxasGate(Args& args) {
  cg::GatedCompile c;
  while (!args.done()) {
    std::string a = args.next();
    if (a == "-h" || a == "--help") {
      std::cout << kPtxasGateHelp;
      return kOk;
    }
    if (a == "--allow-ptxas-warnings") { c.allowPtxasWarnings = true; continue; }
    if (a == "--") break;
    return usageError(fmt::format("unknown option `{}` for `kdlc ptxas-gate` (the compile command follows `--`)", a));
  }
  while (!args.done()) c.argv.push_back(args.next());
  if (c.argv.empty()) return usageError("`kdlc ptxas-gate` needs a compile command after `--`");
  cg::InterruptGuard interrupts;
  return cg::runGatedCompile(c, [](const std::string& line) { std::cerr << line << "\n"; });
}

int runCache(Args& args) {
  bool info = false, clear = false;
  std::string dirOption, capOption;
  while (!args.done()) {
    std::string a = args.next();
    if (a == "-h" || a == "--help") {
      std::cout << kCacheHelp;
      return kOk;
    }
    if (a == "--info") { info = true; continue; }
    if (a == "--clear") { clear = true; continue; }
    int r;
    if ((r = optionValue(args, a, "--cache-dir", dirOption)) || (r = optionValue(args, a, "--cache-max-size", capOption))) {
      if (r < 0) return usageError(a + " needs a value");
      continue;
    }
    return usageError(fmt::format("unknown argument `{}` for `kdlc cache`", a));
  }
  if (info == clear) return usageError("`kdlc cache` takes one of --info or --clear");
  std::optional<uint64_t> cap = cacheCap(capOption);
  if (!cap) return kUsage;
  std::string why;
  std::optional<std::string> dir = dirOption.empty() ? cg::defaultCacheDir(why) : std::optional<std::string>(dirOption);
  if (!dir) {
    std::cerr << "kdlc: error: no compile cache: " << why << "\n";
    return kInputErrors;
  }
  if (!dir->empty() && (*dir)[0] != '/') {
    char buf[4096];
    if (::getcwd(buf, sizeof(buf))) *dir = std::string(buf) + "/" + *dir;
  }
  cg::CompileCache cache(*dir);
  if (!cache.usable()) {
    std::cerr << "kdlc: error: " << cache.whyUnusable() << "\n";
    return kInputErrors;
  }
  if (clear) {
    uint64_t removed = 0;
    std::string err;
    bool ok = cache.clear(removed, err);
    std::cout << fmt::format("removed {} entr{} from {}\n", removed, removed == 1 ? "y" : "ies", cache.dir());
    if (!ok) {
      std::cerr << "kdlc: error: " << err << "\n";
      return kInputErrors;
    }
    return kOk;
  }
  cg::CacheStats s = cache.stats();
  std::cout << fmt::format("directory: {}\nentries: {}\nbytes: {}\ncap: {}\n", cache.dir(), s.entries,
                           cg::formatByteSize(s.bytes), cg::formatByteSize(*cap));
  if (!cache.writable()) std::cout << "note: " << cache.whyNotWritable() << "\n";
  return kOk;
}

}  // namespace kdlc
