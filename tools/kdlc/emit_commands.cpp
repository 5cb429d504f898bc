// `kdlc emit`, `kdlc build` and `kdlc list --plan`: lower validated specs, write the emitted files
// atomically, and (build) compile them with nvcc through the content-hashed cache into
// lib<stem>.a / lib<stem>.so.
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <iostream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/compile_cache.h"
#include "codegen/plan.h"
#include "codegen/sha256.h"
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

Options:
  -o DIR                    the output directory (created when missing)
  --kernel NAME             only this kernel (repeatable)
  --depfile FILE            also write a Make-style depfile: DIR/manifest.json depends on FILE and every import
  --touch-manifest          update manifest.json's time even when its bytes are unchanged (for build systems)
  --torch                   also emit a PyTorch extension (not supported by this version yet)
  --diagnostics=text|json, --color, --max-errors, --max-kernels, --max-depth   see `kdlc --help`
)";

static const char* kBuildHelp = R"(Usage: kdlc build [options] FILE -o DIR

Emits like `kdlc emit`, then compiles every NAME.cu with nvcc (the kernel's own -gencode flags,
-std=c++17 -O3 -Xcompiler -fPIC) into DIR/lib<stem>.a and DIR/lib<stem>.so (stem: FILE's name without
.kdl), beside the headers. Compiled objects are cached by the content of everything that reaches nvcc.

Options:
  -o DIR                    the output directory
  --kernel NAME             only this kernel (repeatable)
  --nvcc PATH               the CUDA compiler (default: $KDL_NVCC, $CUDACXX, nvcc on PATH, /usr/local/cuda/bin/nvcc)
  -j N                      parallel nvcc jobs (default: the number of CPUs)
  --cache-dir DIR           the compile cache (default: $KDL_CACHE_DIR, $XDG_CACHE_HOME/kdl, ~/.cache/kdl)
  --no-cache                compile everything
  --depfile FILE            as for emit
  --diagnostics=text|json, --color, --max-errors, --max-kernels, --max-depth   see `kdlc --help`
)";

namespace {

std::string baseName(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}
std::string dirName(const std::string& p) {
  size_t s = p.rfind('/');
  if (s == std::string::npos) return ".";
  return s == 0 ? "/" : p.substr(0, s);
}
bool fileExists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}
bool isExecutable(const std::string& p) { return ::access(p.c_str(), X_OK) == 0 && fileExists(p); }
std::string absolutePath(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char buf[PATH_MAX];
  if (!::getcwd(buf, sizeof(buf))) return p;
  return std::string(buf) + "/" + p;
}

bool stderrTty() { return ::isatty(2) != 0; }

int report(const kdl::SourceManager& sm, const kdl::DiagEngine& diags, const CommonOptions& o) {
  if (o.jsonDiagnostics) {
    std::cout << kdl::renderJson(sm, diags);
  } else if (!diags.all().empty()) {
    bool color = o.color == ColorMode::Always || (o.color == ColorMode::Auto && stderrTty());
    std::cerr << kdl::renderText(sm, diags, color);
    if (diags.hasErrors())
      std::cerr << fmt::format("{} error{} generated.\n", diags.errorCount(), diags.errorCount() == 1 ? "" : "s");
  }
  return diags.hasErrors() ? kInputErrors : kOk;
}

// Runs argv, capturing stdout and stderr together; returns the exit status (127: could not start).
int runProcess(const std::vector<std::string>& argv, std::string& output) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return 127;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return 127;
  }
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof(buf))) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    output.append(buf, size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string findOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::string p = path;
  size_t i = 0;
  while (i <= p.size()) {
    size_t j = p.find(':', i);
    if (j == std::string::npos) j = p.size();
    std::string dir = p.substr(i, j - i);
    if (!dir.empty() && dir[0] == '/' && isExecutable(dir + "/" + name)) return dir + "/" + name;
    i = j + 1;
  }
  return "";
}

std::string findNvcc(const std::string& option, std::string& tried) {
  auto candidate = [&](const std::string& what, const std::string& path) -> std::string {
    if (path.empty()) return "";
    tried += fmt::format("\n  {}: {}", what, path);
    std::string resolved = path.find('/') == std::string::npos ? findOnPath(path) : path;
    return !resolved.empty() && isExecutable(resolved) ? absolutePath(resolved) : "";
  };
  if (!option.empty()) return candidate("--nvcc", option);
  for (const char* var : {"KDL_NVCC", "CUDACXX"}) {
    const char* v = std::getenv(var);
    if (v && *v) {
      std::string r = candidate(std::string("$") + var, v);
      if (!r.empty()) return r;
    }
  }
  if (std::string r = findOnPath("nvcc"); !r.empty()) return r;
  tried += "\n  nvcc on PATH: not found";
  return candidate("default", "/usr/local/cuda/bin/nvcc");
}

// The directory that holds kdl/ (the device templates): <exe dir>/../include when installed, else
// the source tree's include/ (KDL_SOURCE_INCLUDE_DIR).
std::string findIncludeDir() {
  if (const char* v = std::getenv("KDL_INCLUDE_DIR"); v && *v && fileExists(std::string(v) + "/kdl/gemm_sm80.cuh"))
    return absolutePath(v);
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) {
    buf[n] = 0;
    std::string inc = dirName(dirName(buf)) + "/include";
    if (fileExists(inc + "/kdl/gemm_sm80.cuh")) return inc;
  }
  std::string src = KDL_SOURCE_INCLUDE_DIR;
  if (!src.empty() && fileExists(src + "/kdl/gemm_sm80.cuh")) return src;
  return "";
}

std::string depfileEscape(const std::string& p) {
  std::string out;
  for (char c : p) {
    if (c == ' ' || c == '#') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

struct CompileJob {
  const cg::KernelPlan* plan;
  std::string source, header;  // paths
  std::string object;          // DIR/NAME.o
  bool cached = false;
  double seconds = 0;
  int status = 0;
  std::string output;
};

}  // namespace

int runListPlan(const kdl::SourceManager&, const std::vector<kdl::KernelSpec>& specs, kdl::DiagEngine& diags) {
  std::vector<cg::KernelPlan> plans = cg::lower(specs, diags);
  std::cout << cg::renderPlans(plans);
  return diags.hasErrors() ? kInputErrors : kOk;
}

int runEmit(Args& args, bool build) {
  CommonOptions o;
  std::string file, outDir, depfile, nvccOption, cacheDirOption;
  std::vector<std::string> kernels;
  bool torch = false, noCache = false, touchManifest = false;
  int jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  const char* cmd = build ? "build" : "emit";
  auto value = [&](const std::string& a, const std::string& name, std::string& out) -> int {
    // 1: consumed, 0: not this option, -1: missing value
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
  };
  while (!args.done()) {
    std::string a = args.next();
    if (a == "-h" || a == "--help") {
      std::cout << (build ? kBuildHelp : kEmitHelp);
      return kOk;
    }
    if (parseCommon(a, args, o)) continue;
    std::string v;
    int r;
    if ((r = value(a, "-o", outDir)) || (r = value(a, "--depfile", depfile))) {
      if (r < 0) return usageError(a + " needs a value");
      continue;
    }
    if ((r = value(a, "--kernel", v))) {
      if (r < 0) return usageError("--kernel needs a kernel name");
      kernels.push_back(v);
      continue;
    }
    if (a == "--torch" && !build) { torch = true; continue; }
    if (a == "--touch-manifest") { touchManifest = true; continue; }
    if (build) {
      if ((r = value(a, "--nvcc", nvccOption)) || (r = value(a, "--cache-dir", cacheDirOption))) {
        if (r < 0) return usageError(a + " needs a value");
        continue;
      }
      if (a == "--no-cache") { noCache = true; continue; }
      if ((r = value(a, "-j", v))) {
        if (r < 0) return usageError("-j needs a number of jobs");
        char* end = nullptr;
        long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end || n < 1 || n > 256) return usageError("-j takes a number from 1 to 256, not `" + v + "`");
        jobs = int(n);
        continue;
      }
      if (a.rfind("-j", 0) == 0 && a.size() > 2) {
        char* end = nullptr;
        long n = std::strtol(a.c_str() + 2, &end, 10);
        if (*end || n < 1 || n > 256) return usageError("-j takes a number from 1 to 256, not `" + a.substr(2) + "`");
        jobs = int(n);
        continue;
      }
    }
    if (a.size() > 1 && a[0] == '-') return usageError(fmt::format("unknown option `{}` for `kdlc {}`", a, cmd));
    if (!file.empty()) return usageError(fmt::format("`kdlc {}` takes exactly one FILE", cmd));
    file = a;
  }
  if (o.bad) return kUsage;
  if (file.empty()) return usageError(fmt::format("`kdlc {}` needs a FILE", cmd));
  if (outDir.empty()) return usageError(fmt::format("`kdlc {}` needs an output directory: -o DIR", cmd));

  kdl::SourceManager sm;
  kdl::DiagEngine diags(o.maxErrors);
  kdl::FrontendResult fr = kdl::runFrontend(sm, file, diags, o.limits);
  if (diags.hasErrors()) return report(sm, diags, o);

  std::vector<kdl::KernelSpec> specs;
  if (kernels.empty()) {
    specs = fr.specs;
  } else {
    for (const std::string& k : kernels) {
      auto it = std::find_if(fr.specs.begin(), fr.specs.end(), [&](const kdl::KernelSpec& s) { return s.name == k; });
      if (it == fr.specs.end()) {
        std::string names;
        for (const kdl::KernelSpec& s : fr.specs) names += (names.empty() ? "" : ", ") + s.name;
        return usageError(fmt::format("{} has no kernel named `{}`; it has: {}", file, k, names.empty() ? "none" : names));
      }
      if (std::none_of(specs.begin(), specs.end(), [&](const kdl::KernelSpec& s) { return s.name == k; }))
        specs.push_back(*it);
    }
  }
  if (torch)
    diags.error(kdl::DiagKind::Unsupported, {},
                "--torch: PyTorch extension wrappers are not generated by this version of kdlc yet; use the emitted "
                "C ABI (kdl_NAME_run, include/kdl/abi.h) from a loader instead");
  std::vector<cg::KernelPlan> plans = cg::lower(specs, diags);
  if (diags.hasErrors()) return report(sm, diags, o);

  // The spec hash covers the file and every file it imports, in load order.
  cg::Sha256 h;
  for (uint32_t id = 1; id <= sm.fileCount(); ++id) {
    const std::string& t = sm.text(id);
    h.update(fmt::format("{}:", t.size()));
    h.update(t);
  }
  cg::EmitOptions eo;
  eo.specName = baseName(file);
  eo.specHash = h.hexDigest();
  std::vector<cg::EmittedFile> files = cg::emit(plans, eo);

  std::string err;
  if (!cg::makeDirs(outDir, err)) {
    std::cerr << "kdlc: error: " << err << "\n";
    return kInputErrors;
  }
  for (const cg::EmittedFile& f : files)
    if (!cg::writeFileAtomic(outDir + "/" + f.path, f.contents, err)) {
      std::cerr << "kdlc: error: " << err << "\n";
      return kInputErrors;
    }
  // Build systems compare manifest.json's time with the inputs' (the other files keep theirs when
  // unchanged, so that nothing downstream rebuilds).
  if (touchManifest) ::utimensat(AT_FDCWD, (outDir + "/manifest.json").c_str(), nullptr, 0);
  if (!depfile.empty()) {
    std::string d = depfileEscape(absolutePath(outDir + "/manifest.json")) + ":";
    for (uint32_t id = 1; id <= sm.fileCount(); ++id) d += " \\\n  " + depfileEscape(absolutePath(sm.path(id)));
    d += "\n";
    std::string dd = dirName(depfile);
    if (!cg::makeDirs(dd, err) || !cg::writeFileAtomic(depfile, d, err)) {
      std::cerr << "kdlc: error: " << err << "\n";
      return kInputErrors;
    }
  }
  int rc = report(sm, diags, o);  // warnings, if any
  if (!build) {
    if (!o.jsonDiagnostics)
      std::cerr << fmt::format("kdlc: wrote {} kernel{} to {}\n", plans.size(), plans.size() == 1 ? "" : "s", outDir);
    return rc;
  }

  // ---- build ----
  std::string tried;
  std::string nvcc = findNvcc(nvccOption, tried);
  if (nvcc.empty()) {
    std::cerr << "kdlc: error: cannot find nvcc; tried:" << tried
              << "\nkdlc: note: pass --nvcc PATH or set $KDL_NVCC (the emitted sources are in " << outDir << ")\n";
    return kInputErrors;
  }
  std::string includeDir = findIncludeDir();
  if (includeDir.empty()) {
    std::cerr << "kdlc: error: cannot find the KDL device templates (kdl/gemm_sm80.cuh) next to kdlc "
                 "(<exe dir>/../include) or in the source tree; set $KDL_INCLUDE_DIR\n";
    return kInputErrors;
  }
  std::string nvccVersion;
  if (runProcess({nvcc, "--version"}, nvccVersion) != 0) {
    std::cerr << "kdlc: error: `" << nvcc << " --version` failed:\n" << nvccVersion;
    return kInputErrors;
  }
  std::optional<cg::CompileCache> cache;
  if (!noCache) {
    std::string why;
    std::optional<std::string> dir = cacheDirOption.empty() ? cg::defaultCacheDir(why) : absolutePath(cacheDirOption);
    if (dir) {
      cache.emplace(*dir);
      if (!cache->usable()) {
        std::cerr << "kdlc: warning: not caching compiled kernels: " << cache->whyUnusable() << "\n";
        cache.reset();
      }
    } else {
      std::cerr << "kdlc: warning: not caching compiled kernels: " << why << "\n";
    }
  }
  std::vector<std::pair<std::string, std::string>> headers = cg::readKdlHeaders(includeDir);

  std::vector<CompileJob> jobsList;
  for (const cg::KernelPlan& p : plans) {
    CompileJob j;
    j.plan = &p;
    j.source = outDir + "/" + p.name + ".cu";
    j.header = outDir + "/" + p.name + ".h";
    j.object = outDir + "/" + p.name + ".o";
    jobsList.push_back(j);
  }
  std::mutex mu;
  std::atomic<size_t> next{0};
  size_t done = 0;
  const size_t total = jobsList.size();
  auto worker = [&]() {
    for (size_t i = next.fetch_add(1); i < total; i = next.fetch_add(1)) {
      CompileJob& j = jobsList[i];
      auto t0 = std::chrono::steady_clock::now();
      std::vector<std::string> flags = {"-std=c++17", "-O3", "-Xcompiler", "-fPIC"};
      for (const std::string& g : j.plan->gencode) flags.push_back(g);
      std::string src, hdr;
      cg::readWholeFile(j.source, src);
      cg::readWholeFile(j.header, hdr);
      std::vector<std::pair<std::string, std::string>> inputs = headers;
      inputs.emplace_back(j.plan->name + ".h", hdr);
      std::string key = cg::CompileCache::key(src, inputs, nvccVersion, flags);
      std::optional<std::string> hit = cache ? cache->lookup(key) : std::nullopt;
      std::string werr;
      if (hit) {
        j.cached = true;
        if (!cg::writeFileAtomic(j.object, *hit, werr)) {
          j.status = 1;
          j.output = werr + "\n";
        }
      } else {
        std::string tmp = fmt::format("{}.tmp.{}.o", j.object, ::getpid());
        std::vector<std::string> argv = {nvcc};
        argv.insert(argv.end(), flags.begin(), flags.end());
        argv.insert(argv.end(), {"-I" + includeDir, "-c", j.source, "-o", tmp});
        j.status = runProcess(argv, j.output);
        if (j.status == 127 && j.output.empty()) j.output = fmt::format("cannot run {}\n", nvcc);
        if (j.status != 0) {
          ::unlink(tmp.c_str());
          j.output = fmt::format("{}\n{}", fmt::join(argv, " "), j.output);
        } else if (::rename(tmp.c_str(), j.object.c_str()) != 0) {
          j.status = 1;
          j.output += fmt::format("cannot write {}: {}\n", j.object, std::strerror(errno));
        } else if (cache) {
          std::string obj;
          if (cg::readWholeFile(j.object, obj)) cache->store(key, obj);
        }
      }
      j.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      if (j.status == 0) {
        std::cerr << fmt::format("[{}/{}] nvcc {}.cu ({})\n", done, total, j.plan->name,
                                 j.cached ? "cached" : fmt::format("{:.1f} s", j.seconds));
        if (!j.output.empty() && !j.cached) std::cerr << j.output;  // nvcc's warnings
      } else {
        std::cerr << fmt::format("[{}/{}] nvcc {}.cu FAILED (exit {})\n{}", done, total, j.plan->name, j.status, j.output);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < std::min<int>(jobs, int(total)); ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  bool failed = false;
  for (const CompileJob& j : jobsList) failed |= j.status != 0;
  if (failed) {
    std::cerr << "kdlc: error: nvcc failed; the emitted sources are in " << outDir << "\n";
    return kInputErrors;
  }

  // lib<stem>.a and lib<stem>.so
  std::string stem = baseName(file);
  if (stem.size() > 4 && stem.substr(stem.size() - 4) == ".kdl") stem.resize(stem.size() - 4);
  std::vector<std::string> objects;
  for (const CompileJob& j : jobsList) objects.push_back(j.object);
  std::string lib = outDir + "/lib" + stem;
  auto linkStep = [&](const std::string& what, std::vector<std::string> argv, const std::string& target,
                      const std::string& tmp) {
    std::string out;
    auto t0 = std::chrono::steady_clock::now();
    int st = runProcess(argv, out);
    if (st != 0 || ::rename(tmp.c_str(), target.c_str()) != 0) {
      ::unlink(tmp.c_str());
      std::cerr << fmt::format("kdlc: error: {} failed (exit {}):\n{}\n{}", what, st, fmt::join(argv, " "), out);
      return false;
    }
    std::cerr << fmt::format("{} {} ({:.1f} s)\n", what, baseName(target),
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return true;
  };
  std::string ar = findOnPath("ar");
  if (ar.empty()) {
    std::cerr << "kdlc: error: cannot find `ar` on PATH to make lib" << stem << ".a\n";
    return kInputErrors;
  }
  std::string tmpA = fmt::format("{}.a.tmp.{}", lib, ::getpid());
  std::vector<std::string> arArgs = {ar, "rcsD", tmpA};
  arArgs.insert(arArgs.end(), objects.begin(), objects.end());
  if (!linkStep("ar", arArgs, lib + ".a", tmpA)) return kInputErrors;
  std::string tmpSo = fmt::format("{}.so.tmp.{}", lib, ::getpid());
  std::vector<std::string> soArgs = {nvcc, "-shared", "--cudart", "shared", "-o", tmpSo};
  soArgs.insert(soArgs.end(), objects.begin(), objects.end());
  if (!linkStep("link", soArgs, lib + ".so", tmpSo)) return kInputErrors;
  for (const CompileJob& j : jobsList) ::unlink(j.object.c_str());
  std::cerr << fmt::format("kdlc: built {} kernel{} into {}.a and {}.so\n", plans.size(), plans.size() == 1 ? "" : "s",
                           lib, lib);
  return rc;
}

}  // namespace kdlc
