// buildKernels: find the toolchain, compute the cache keys, compile with a pool of workers, gate on
// ptxas's report, archive and link, publish (see codegen/build.h).
#include "codegen/build.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <optional>
#include <thread>

#include "codegen/build_ptxas.h"
#include "codegen/build_support.h"
#include "codegen/compile_cache.h"

namespace kdl::codegen {

using namespace build_support;

// ---- build: find the toolchain ---------------------------------------------------------------------

std::string findNvcc(const std::string& option, std::string& tried) {
  auto candidate = [&](const std::string& what, const std::string& path) -> std::string {
    if (path.empty()) return "";
    tried += fmt::format("\n  {}: {}", what, path);
    return resolveProgram(path);
  };
  if (!option.empty()) return candidate("--nvcc", option);
  for (const char* var : {"KDL_NVCC", "CUDACXX"}) {
    std::string v = getEnv(var);
    if (!v.empty()) {
      std::string r = candidate(std::string("$") + var, v);
      if (!r.empty()) return r;
    }
  }
  if (std::string r = findOnPath("nvcc"); !r.empty()) return r;
  tried += "\n  nvcc on PATH: not found";
  return candidate("default", "/usr/local/cuda/bin/nvcc");
}

std::vector<std::string> nvccFlagsFromEnvironment() { return splitWords(getEnv(kNvccFlagsEnv)); }

std::string findIncludeDir(const std::string& sourceIncludeDir) {
  auto holdsTemplates = [](const std::string& d) { return fileExists(d + "/kdl/gemm_sm80.cuh"); };
  if (std::string v = getEnv("KDL_INCLUDE_DIR"); !v.empty() && holdsTemplates(v)) return absolutePath(v);
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) {
    buf[n] = 0;
    std::string inc = dirName(dirName(buf)) + "/include";
    if (holdsTemplates(inc)) return inc;
  }
  if (!sourceIncludeDir.empty() && holdsTemplates(sourceIncludeDir)) return sourceIncludeDir;
  return "";
}

namespace {

// The host compilers nvcc may run: -ccbin/--compiler-bindir in the flags nvcc sees (the last one
// wins, as in nvcc), else $NVCC_CCBIN, else g++, gcc and cc on PATH.
std::vector<std::string> hostCompilerCandidates(const std::vector<std::string>& nvccFlags) {
  std::string ccbin;
  for (size_t i = 0; i < nvccFlags.size(); ++i) {
    const std::string& f = nvccFlags[i];
    for (const char* opt : {"-ccbin", "--compiler-bindir"}) {
      std::string o = opt;
      if (f == o && i + 1 < nvccFlags.size()) ccbin = nvccFlags[i + 1];
      else if (f.rfind(o + "=", 0) == 0) ccbin = f.substr(o.size() + 1);
    }
  }
  if (ccbin.empty()) ccbin = getEnv("NVCC_CCBIN");
  if (ccbin.empty()) return {"g++", "gcc", "cc"};
  struct stat st;
  if (::stat(ccbin.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return {ccbin + "/g++", ccbin + "/gcc"};
  return {ccbin};
}

// What identifies a host compiler: where it really is and what it says it is.
std::string hostCompilerIdentity(const std::string& name, const std::vector<std::string>& env) {
  std::string path = resolveProgram(name);
  if (path.empty()) return fmt::format("{}: not found", name);
  std::string version;
  int st = runProcess({path, "--version"}, env, version);
  return fmt::format("{} -> {} (exit {}):\n{}", name, realPath(path), st, version);
}

struct Toolchain {
  std::string nvcc;
  std::string includeDir;
  std::vector<std::string> launcher;  // resolved argv prefix, empty when none
  std::string fingerprint;            // everything outside the sources that changes an object
};

StepResult identifyToolchain(const BuildRequest& req, const std::vector<std::string>& env, Toolchain& tc) {
  std::string tried;
  tc.nvcc = findNvcc(req.nvcc, tried);
  if (tc.nvcc.empty())
    return failure("cannot find nvcc; tried:" + tried,
                   fmt::format("pass --nvcc PATH or set $KDL_NVCC (the emitted sources are in {})", req.outDir));
  tc.includeDir = findIncludeDir(req.sourceIncludeDir);
  if (tc.includeDir.empty())
    return failure("cannot find the KDL device templates (kdl/gemm_sm80.cuh) next to kdlc (<exe dir>/../include) or "
                   "in the source tree; set $KDL_INCLUDE_DIR");
  if (!req.launcher.empty()) {
    tc.launcher = splitWords(req.launcher);
    std::string resolved = tc.launcher.empty() ? "" : resolveProgram(tc.launcher[0]);
    if (resolved.empty())
      return failure(fmt::format("cannot find the compiler launcher `{}` (from --launcher or ${})", req.launcher,
                                 kLauncherEnv));
    tc.launcher[0] = resolved;
  }
  std::string version;
  if (int st = runProcess({tc.nvcc, "--version"}, env, version); st != 0) {
    if (interrupted()) return interruptedResult();
    return failure(fmt::format("`{} --version` failed (exit {}):\n{}", tc.nvcc, st, version));
  }
  // nvcc reads these itself, so they change the object without appearing on its command line.
  std::string prepend = getEnv("NVCC_PREPEND_FLAGS"), append = getEnv("NVCC_APPEND_FLAGS");
  std::vector<std::string> nvccFlags = splitWords(prepend);
  for (std::string& f : splitWords(append)) nvccFlags.push_back(std::move(f));
  std::string fp = fmt::format("nvcc: {} -> {}\n{}\nNVCC_PREPEND_FLAGS={}\nNVCC_APPEND_FLAGS={}\nNVCC_CCBIN={}\n",
                               tc.nvcc, realPath(tc.nvcc), version, prepend, append, getEnv("NVCC_CCBIN"));
  for (const std::string& cc : hostCompilerCandidates(nvccFlags)) fp += "host compiler: " + hostCompilerIdentity(cc, env);
  tc.fingerprint = std::move(fp);
  return {};
}

// ---- build: compile -------------------------------------------------------------------------------

struct CompileJob {
  const KernelToBuild* kernel = nullptr;
  std::string object;  // in the run's directory
  bool cached = false;
  double seconds = 0;
  int status = 0;
  std::string output;  // nvcc's (stored with the object in the cache, so a hit has it too)
  PtxasReport ptxas;   // read from `output` when the compile succeeded
  std::string note;    // how the object was built when not as the first try (the checked epilogue)
};

struct CompileContext {
  const BuildRequest& req;
  const Toolchain& tc;
  const std::vector<std::pair<std::string, std::string>>& headers;
  const std::vector<std::string>& env;
  const CompileCache* cache;  // null: --no-cache or unusable
};

std::vector<std::string> nvccFlagsFor(const BuildRequest& req, const KernelToBuild& k) {
  std::vector<std::string> flags = {"-std=c++17", "-O3", "-Xcompiler", "-fPIC"};
  flags.insert(flags.end(), k.gencode.begin(), k.gencode.end());
  flags.insert(flags.end(), ptxasReportFlags().begin(), ptxasReportFlags().end());
  flags.insert(flags.end(), req.extraNvccFlags.begin(), req.extraNvccFlags.end());
  return flags;
}

// The key covers what nvcc reads: the .cu, its header, every KDL header, the toolchain and the flags.
// A source that cannot be read is an error: an empty text would give a key that hides the fault.
bool compileKey(const CompileContext& cx, const KernelToBuild& k, const std::vector<std::string>& flags,
                std::string& key, std::string& error) {
  std::string src, hdr;
  if (!readWholeFile(cx.req.outDir + "/" + k.name + ".cu", src, error) ||
      !readWholeFile(cx.req.outDir + "/" + k.name + ".h", hdr, error))
    return false;
  std::vector<std::pair<std::string, std::string>> inputs = cx.headers;
  inputs.emplace_back(k.name + ".h", std::move(hdr));
  key = CompileCache::key(src, inputs, cx.tc.fingerprint, flags);
  return true;
}

// One compile of j's kernel with `flags` (or its cached object), into j.
void compileWith(const CompileContext& cx, CompileJob& j, const std::vector<std::string>& flags) {
  auto t0 = std::chrono::steady_clock::now();
  std::string key, err;
  if (!compileKey(cx, *j.kernel, flags, key, err)) {
    j.status = 1;
    j.output = err + "\n";
    return;
  }
  const bool expectSass = gencodeProducesSass(j.kernel->gencode);
  if (std::optional<CacheEntry> hit = cx.cache ? cx.cache->lookup(key) : std::nullopt) {
    j.cached = true;
    j.output = std::move(hit->output);
    j.ptxas = parsePtxasReport(j.output, expectSass);
    if (!writeFileAtomic(j.object, hit->object, err)) {
      j.status = 1;
      j.output = err + "\n";
    }
    j.seconds += secondsSince(t0);
    return;
  }
  j.cached = false;
  std::vector<std::string> argv = cx.tc.launcher;
  argv.push_back(cx.tc.nvcc);
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-I" + cx.tc.includeDir, "-c", cx.req.outDir + "/" + j.kernel->name + ".cu", "-o", j.object});
  j.status = runProcess(argv, cx.env, j.output);
  if (j.status == 127 && j.output.empty()) j.output = fmt::format("cannot run {}\n", argv[0]);
  if (j.status != 0) {
    j.output = fmt::format("{}\n{}", fmt::join(argv, " "), j.output);
  } else {
    j.ptxas = parsePtxasReport(j.output, expectSass);
    CacheEntry entry{"", j.output};
    if (cx.cache && cx.cache->writable() && readWholeFile(j.object, entry.object)) cx.cache->store(key, entry);
  }
  j.seconds += secondsSince(t0);
}

// Compiles j's kernel. A kernel that ptxas reports losing performance (a spill, most often, near the
// register budget, where ptxas is not monotone and lowering's estimate of the epilogue's registers can
// miss) is compiled again with each of retryFlags() in turn -- on sm90a the checked TMA-store epilogue
// (without its straight-line interior chunks, fp8 promotion one k-tile at a time), then the staged
// epilogue capped at 4 and 2 columns per call, alone and with the checked one; on the other targets the
// two caps; last, where NAME.cu has one, the multistage kernel's 8-warp form (KernelPlan::moreWarpsM) --
// until one report is clean; that object is kept (j.note says how it was built). Otherwise the first
// one's report stands and the gate refuses it.
// `say` prints a line while the job is still running (each later try is a compile of its own, minutes for a heavy
// kernel, so the user sees why the kernel takes that long).
void compileOne(const CompileContext& cx, CompileJob& j, const Progress& say) {
  const std::vector<std::string> flags = nvccFlagsFor(cx.req, *j.kernel);
  compileWith(cx, j, flags);
  if (j.status != 0 || j.ptxas.problems.empty()) return;
  double seconds = j.seconds;
  const std::vector<std::vector<std::string>> tries =
      retryFlags(j.kernel->gencode, cx.req.outDir + "/" + j.kernel->name + ".cu");
  for (size_t t = 0; t < tries.size(); ++t) {
    const std::vector<std::string>& extra = tries[t];
    if (interrupted()) break;
    say(fmt::format("  kdlc: {}.cu: ptxas reports a performance loss ({:.1f} s so far); later try {} of {}: {}",
                    j.kernel->name, seconds, t + 1, tries.size(), fmt::join(extra, " ")));
    // Each try writes its own object: the first one's stays where it is until a try is clean, so the object
    // on disk is always the one whose report is published (--allow-ptxas-warnings links the first).
    CompileJob again = j;
    again.output.clear();
    again.seconds = 0;
    again.object = j.object + ".try";
    std::vector<std::string> f = flags;
    f.insert(f.end(), extra.begin(), extra.end());
    compileWith(cx, again, f);
    seconds += again.seconds;
    const bool clean = again.status == 0 && again.ptxas.problems.empty();
    if (clean && ::rename(again.object.c_str(), j.object.c_str()) == 0) {
      again.object = j.object;
      again.note = retryNote(j.ptxas, extra);
      j = std::move(again);
      break;
    }
    ::unlink(again.object.c_str());
  }
  j.seconds = seconds;
}

void reportJob(const CompileJob& j, size_t done, size_t total, const Progress& progress) {
  if (j.status == 0) {
    std::string line = fmt::format("[{}/{}] nvcc {}.cu ({})", done, total, j.kernel->name,
                                   j.cached ? "cached" : fmt::format("{:.1f} s", j.seconds));
    if (!j.ptxas.otherOutput.empty() && !j.cached) line += "\n" + j.ptxas.otherOutput;  // nvcc's warnings
    if (!j.note.empty()) line += "\n  kdlc: note: " + j.note;
    while (!line.empty() && line.back() == '\n') line.pop_back();
    progress(line);
  } else if (!interrupted()) {
    std::string out = j.output;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    progress(fmt::format("[{}/{}] nvcc {}.cu FAILED (exit {})\n{}", done, total, j.kernel->name, j.status, out));
  }
}

// Compiles every job with up to req.jobs workers; false when one failed (or an interrupt came).
bool compileAll(const CompileContext& cx, std::vector<CompileJob>& jobs, const Progress& progress) {
  std::mutex mu;
  std::atomic<size_t> next{0};
  size_t done = 0;
  const size_t total = jobs.size();
  auto worker = [&]() {
    for (size_t i = next.fetch_add(1); i < total && !interrupted(); i = next.fetch_add(1)) {
      compileOne(cx, jobs[i], [&](const std::string& line) {
        std::lock_guard<std::mutex> lock(mu);
        progress(line);
      });
      std::lock_guard<std::mutex> lock(mu);
      reportJob(jobs[i], ++done, total, progress);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < std::min<int>(cx.req.jobs, int(total)); ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  if (interrupted()) return false;
  return std::all_of(jobs.begin(), jobs.end(), [](const CompileJob& j) { return j.status == 0; });
}

// ---- build: gate on ptxas's report -----------------------------------------------------------------

// "ptxas reports a performance loss ... in 2 kernels:" and, per kernel, its problems.
std::string describePtxasProblems(const std::vector<std::pair<std::string, const PtxasReport*>>& refused) {
  std::string text = fmt::format("ptxas reports a performance loss (spills, ignored setmaxnreg or serialized wgmma) in "
                                 "{} kernel{}:",
                                 refused.size(), refused.size() == 1 ? "" : "s");
  for (const auto& [name, report] : refused) {
    text += fmt::format("\n  kernel `{}` ({}.cu):", name, name);
    for (const std::string& p : report->problems) text += "\n    " + p;
  }
  return text;
}

// Writes every kernel's report to <runDir>/lib<stem>.ptxas.txt (published with the libraries),
// prints it when asked, and fails when a kernel spills, lost setmaxnreg or serialized wgmma (unless
// the request allows ptxas warnings; then it says so and goes on).
StepResult gateOnPtxas(const BuildRequest& req, const std::vector<CompileJob>& jobs, const std::string& runDir,
                       const Progress& progress) {
  std::vector<std::pair<std::string, PtxasReport>> reports;
  for (const CompileJob& j : jobs) {
    reports.emplace_back(j.kernel->name, j.ptxas);
    // A kernel built through a later try says so in the published report too, not only in the progress.
    if (!j.note.empty()) reports.back().second.notes.push_back("kdlc: note: " + j.note);
  }
  std::string table = formatPtxasTable(reports);
  std::string file = "lib" + req.libStem + ".ptxas.txt", err;
  std::string text = fmt::format("# ptxas's report for lib{} (kdlc build, nvcc -Xptxas -v). Sizes in bytes; smem is static\n"
                                 "# shared memory (the dynamic part is the launch's: kdlc list --plan).\n",
                                 req.libStem);
  if (!writeFileAtomic(runDir + "/" + file, text + table, err)) return failure(err);
  if (req.verbose) progress(fmt::format("ptxas report ({}):\n{}", file, table));

  std::vector<std::pair<std::string, const PtxasReport*>> refused, allowed;
  for (const CompileJob& j : jobs) {
    if (j.ptxas.problems.empty()) continue;
    const std::vector<std::string>& names = req.allowPtxasWarningsFor;
    bool allow = req.allowPtxasWarnings || std::find(names.begin(), names.end(), j.kernel->name) != names.end();
    (allow ? allowed : refused).emplace_back(j.kernel->name, &j.ptxas);
  }
  if (!allowed.empty())
    progress(fmt::format("kdlc: warning: {}\nkdlc: note: building anyway (--allow-ptxas-warnings)",
                         describePtxasProblems(allowed)));
  if (refused.empty()) return {};
  return failure(fmt::format("{}\nlib{}.a and lib{}.so were not written", describePtxasProblems(refused), req.libStem,
                             req.libStem),
                 "the full report is printed by --verbose; --allow-ptxas-warnings builds such kernels anyway");
}

// ---- build: archive and link, publish -------------------------------------------------------------

StepResult runTool(const std::string& what, const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const std::string& shownName, const Progress& progress) {
  auto t0 = std::chrono::steady_clock::now();
  std::string out;
  int st = runProcess(argv, env, out);
  if (interrupted()) return interruptedResult();
  if (st != 0) return failure(fmt::format("{} failed (exit {}):\n{}\n{}", what, st, fmt::join(argv, " "), out));
  progress(fmt::format("{} {} ({:.1f} s)", what, shownName, secondsSince(t0)));
  return {};
}

StepResult archiveAndLink(const BuildRequest& req, const Toolchain& tc, const std::vector<CompileJob>& jobs,
                          const std::string& runDir, const std::vector<std::string>& env, const Progress& progress) {
  std::string ar = findOnPath("ar");
  if (ar.empty()) return failure(fmt::format("cannot find `ar` on PATH to make lib{}.a", req.libStem));
  std::vector<std::string> objects;
  for (const CompileJob& j : jobs) objects.push_back(j.object);
  std::string lib = "lib" + req.libStem;
  std::vector<std::string> arArgs = {ar, "rcsD", runDir + "/" + lib + ".a"};
  arArgs.insert(arArgs.end(), objects.begin(), objects.end());
  if (StepResult r = runTool("ar", arArgs, env, lib + ".a", progress); !r.ok) return r;
  std::vector<std::string> soArgs = {tc.nvcc, "-shared", "--cudart", "shared", "-o", runDir + "/" + lib + ".so"};
  soArgs.insert(soArgs.end(), objects.begin(), objects.end());
  return runTool("link", soArgs, env, lib + ".so", progress);
}

// Moves the libraries and their ptxas report into the output directory under its lock, so that
// concurrent builds publish one after the other and a reader never sees a half-written library.
StepResult publishLibraries(const BuildRequest& req, const std::string& runDir) {
  DirLock lock(req.outDir);
  if (!lock.held()) return interrupted() ? interruptedResult() : failure(lock.error());
  if (interrupted()) return interruptedResult();
  for (const char* ext : {".ptxas.txt", ".a", ".so"}) {
    std::string name = "lib" + req.libStem + ext;
    if (::rename((runDir + "/" + name).c_str(), (req.outDir + "/" + name).c_str()) != 0)
      return failure(fmt::format("cannot write {}/{}: {}", req.outDir, name, std::strerror(errno)));
  }
  return {};
}

std::optional<CompileCache> openCache(const BuildRequest& req, const Progress& progress) {
  if (!req.useCache) return std::nullopt;
  std::string why;
  std::optional<std::string> dir = req.cacheDir.empty() ? defaultCacheDir(why) : absolutePath(req.cacheDir);
  if (!dir) {
    progress("kdlc: warning: not caching compiled kernels: " + why);
    return std::nullopt;
  }
  CompileCache cache(*dir);
  if (!cache.usable()) {
    progress("kdlc: warning: not caching compiled kernels: " + cache.whyUnusable());
    return std::nullopt;
  }
  if (!cache.writable())
    progress("kdlc: warning: " + cache.whyNotWritable() +
             "; kernels it lacks are compiled and not stored (every build compiles them again)");
  return cache;
}

}  // namespace

int runGatedCompile(const GatedCompile& c, const Progress& progress) {
  if (c.argv.empty()) return 2;
  std::vector<std::string> argv = c.argv;
  argv[0] = resolveProgram(argv[0]);
  if (argv[0].empty()) {
    progress(fmt::format("kdlc: error: cannot find the compiler `{}`", c.argv[0]));
    return 127;
  }
  // The kernel is the .cu file; the report goes next to the object (the -o argument). ptxas runs
  // when the command compiles (-c, not only preprocessing) SASS for some target.
  std::string source, object;
  bool compiles = false, preprocesses = false;
  std::vector<std::string> gencode;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.ends_with(".cu")) source = a;
    if (a == "-o" && i + 1 < argv.size()) object = argv[i + 1];
    if (a == "-c" || a == "--compile") compiles = true;
    if (a == "-E" || a == "-M" || a == "-MM" || a == "--preprocess" || a == "--generate-dependencies") preprocesses = true;
    if (a.rfind("-gencode", 0) == 0 || a.rfind("--generate-code", 0) == 0) gencode.push_back(a);
  }
  if (!compiles || preprocesses || object.empty()) {
    // Nothing to gate (a dependency scan, a link): run it as it is, its output untouched.
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    progress(fmt::format("kdlc: error: cannot run {}: {}", argv[0], std::strerror(errno)));
    return 127;
  }
  std::string output;
  int status = runProcess(argv, compilerEnvironment(""), output);
  if (interrupted()) return 128 + InterruptGuard::signal();
  PtxasReport report = parsePtxasReport(output, status == 0 && gencodeProducesSass(gencode));
  // As `kdlc build` does (compileOne): a kernel with a performance loss gets the later tries (retryFlags),
  // the first clean one kept.
  if (status == 0 && !report.problems.empty()) {
    // Each try writes OBJECT.kdl-try, renamed over the first object when its report is clean: the object left is
    // always the one whose report is published.
    const std::string tryObject = object + ".kdl-try";
    for (const std::vector<std::string>& extra : retryFlags(gencode, source)) {
      std::vector<std::string> again = argv;
      for (size_t i = 0; i + 1 < again.size(); ++i)
        if (again[i] == "-o") again[i + 1] = tryObject;
      again.insert(again.end(), extra.begin(), extra.end());
      std::string output2;
      const int status2 = runProcess(again, compilerEnvironment(""), output2);
      if (interrupted()) {
        ::unlink(tryObject.c_str());
        return 128 + InterruptGuard::signal();
      }
      PtxasReport report2 = parsePtxasReport(output2, status2 == 0);
      if (status2 == 0 && report2.problems.empty() && ::rename(tryObject.c_str(), object.c_str()) == 0) {
        const std::string note = "kdlc: note: " + retryNote(report, extra);
        progress(note);
        output = std::move(output2);
        report = std::move(report2);
        report.notes.push_back(note);  // in OBJECT.ptxas.txt too
        break;
      }
      ::unlink(tryObject.c_str());
    }
  }
  std::string shown = status == 0 ? report.otherOutput : output;
  while (!shown.empty() && shown.back() == '\n') shown.pop_back();
  if (!shown.empty()) progress(shown);
  if (status != 0) return status;
  std::string name = baseName(source.empty() ? object : source);
  if (name.ends_with(".cu")) name.resize(name.size() - 3);
  std::string err;
  if (!writeFileAtomic(object + ".ptxas.txt", formatPtxasTable({{name, report}}), err)) {
    progress("kdlc: error: " + err);
    return 1;
  }
  if (report.problems.empty()) return 0;
  std::string what = describePtxasProblems({{name, &report}});
  if (c.allowPtxasWarnings) {
    progress(fmt::format("kdlc: warning: {}\nkdlc: note: compiled anyway (ptxas warnings allowed)", what));
    return 0;
  }
  ::unlink(object.c_str());  // the build system must not take it for done
  progress(fmt::format("kdlc: error: {}\nkdlc: note: the report is {}.ptxas.txt; kdl_add_kernels(... "
                       "ALLOW_PTXAS_WARNINGS) builds such kernels anyway",
                       what, object));
  return 1;
}

StepResult buildKernels(const BuildRequest& req, const Progress& progress, BuiltWith* used) {
  if (req.kernels.empty()) return failure("nothing to build");
  RunDir run(req.outDir, "build");
  if (!run.ok()) return failure(run.error());
  std::string tmpDir = run.path() + "/tmp";
  ::mkdir(tmpDir.c_str(), 0700);
  std::vector<std::string> env = compilerEnvironment(tmpDir);

  Toolchain tc;
  if (StepResult r = identifyToolchain(req, env, tc); !r.ok) return r;
  std::optional<CompileCache> cache = openCache(req, progress);
  std::vector<std::pair<std::string, std::string>> headers;
  std::string err;
  if (!readKdlHeaders(tc.includeDir, headers, err)) return failure(err);

  std::vector<CompileJob> jobs;
  for (const KernelToBuild& k : req.kernels) {
    CompileJob j;
    j.kernel = &k;
    j.object = run.path() + "/" + k.name + ".o";
    jobs.push_back(std::move(j));
  }
  // A launcher may start a server that outlives the run (sccache does): it keeps kdlc's TMPDIR.
  std::vector<std::string> launcherEnv = compilerEnvironment("");
  CompileContext cx{req, tc, headers, tc.launcher.empty() ? env : launcherEnv, cache ? &*cache : nullptr};
  bool compiled = compileAll(cx, jobs, progress);
  if (cache && cache->writable()) cache->evictTo(req.cacheMaxBytes);
  if (interrupted()) return interruptedResult();
  if (!compiled) return failure("nvcc failed; the emitted sources are in " + req.outDir);
  if (StepResult r = gateOnPtxas(req, jobs, run.path(), progress); !r.ok) return r;

  if (StepResult r = archiveAndLink(req, tc, jobs, run.path(), env, progress); !r.ok) return r;
  if (StepResult r = publishLibraries(req, run.path()); !r.ok) return r;
  std::string lib = req.outDir + "/lib" + req.libStem;
  progress(fmt::format("kdlc: built {} kernel{} into {}.a and {}.so", jobs.size(), jobs.size() == 1 ? "" : "s", lib,
                       lib));
  if (used) *used = {tc.nvcc, tc.includeDir};
  return {};
}

}  // namespace kdl::codegen
