#include "codegen/build.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "codegen/compile_cache.h"
#include "codegen/sha256.h"

extern char** environ;

namespace kdl::codegen {

// ---- interruption ------------------------------------------------------------------------------

namespace {

std::atomic<int> gSignal{0};
// Process groups of the compilers running now (0: free slot). The handler reads them, so they are
// plain atomics in a fixed array.
constexpr size_t kMaxChildren = 1024;
std::atomic<pid_t> gChildren[kMaxChildren];
std::atomic<int> gGuards{0};
struct sigaction gOldInt, gOldTerm;

void onSignal(int sig) {
  int expected = 0;
  gSignal.compare_exchange_strong(expected, sig);
  for (std::atomic<pid_t>& c : gChildren) {
    pid_t pg = c.load();
    if (pg > 0) ::kill(-pg, SIGTERM);
  }
}

size_t registerChild(pid_t pgid) {
  for (size_t i = 0; i < kMaxChildren; ++i) {
    pid_t expected = 0;
    if (gChildren[i].compare_exchange_strong(expected, pgid)) return i;
  }
  return kMaxChildren;
}

void unregisterChild(size_t slot) {
  if (slot < kMaxChildren) gChildren[slot].store(0);
}

bool interrupted() { return gSignal.load() != 0; }

StepResult interruptedResult() {
  StepResult r;
  r.ok = false;
  r.signal = gSignal.load();
  return r;
}

}  // namespace

InterruptGuard::InterruptGuard() {
  if (gGuards.fetch_add(1) != 0) return;
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocked flock() or waitpid() returns and sees the signal
  ::sigaction(SIGINT, &sa, &gOldInt);
  ::sigaction(SIGTERM, &sa, &gOldTerm);
}

InterruptGuard::~InterruptGuard() {
  if (gGuards.fetch_sub(1) != 1) return;
  ::sigaction(SIGINT, &gOldInt, nullptr);
  ::sigaction(SIGTERM, &gOldTerm, nullptr);
}

int InterruptGuard::signal() { return gSignal.load(); }

// ---- small helpers -------------------------------------------------------------------------------

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
bool isExecutable(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}
std::string absolutePath(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char buf[PATH_MAX];
  if (!::getcwd(buf, sizeof(buf))) return p;
  return std::string(buf) + "/" + p;
}
std::string realPath(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : p;
}
double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<std::string> splitWords(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n') {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
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

// A program named on the command line or in the environment: a path, or a name looked up on PATH.
std::string resolveProgram(const std::string& name) {
  std::string resolved = name.find('/') == std::string::npos ? findOnPath(name) : name;
  return !resolved.empty() && isExecutable(resolved) ? absolutePath(resolved) : "";
}

std::string getEnv(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// Runs argv (argv[0] an absolute path) in its own process group, so that an interrupt can stop it
// and everything it started; captures stdout and stderr together. `env` replaces the environment.
// Returns the exit status (127: could not start, 128 + N: killed by signal N).
int runProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env, std::string& output) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return 127;
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  if (interrupted()) {
    ::close(fds[0]);
    ::close(fds[1]);
    return 128 + gSignal.load();
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return 127;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: the handler may kill the group before the child runs
  size_t slot = registerChild(pid);
  if (interrupted()) ::kill(-pid, SIGTERM);  // the signal came between fork and registration
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
  unregisterChild(slot);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::vector<std::string> currentEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) out.emplace_back(*e);
  return out;
}

// The environment of the compilers: kdlc's, with TMPDIR inside the run's temporary directory, so
// that what a killed nvcc leaves behind goes away with it.
std::vector<std::string> compilerEnvironment(const std::string& tmpDir) {
  std::vector<std::string> env;
  for (std::string& e : currentEnvironment())
    if (e.rfind("TMPDIR=", 0) != 0) env.push_back(std::move(e));
  env.push_back("TMPDIR=" + tmpDir);
  return env;
}

// An flock(2) on a directory, held while kdlc changes what the directory publishes.
class DirLock {
 public:
  explicit DirLock(const std::string& dir) {
    fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) {
      error_ = fmt::format("cannot open {}: {}", dir, std::strerror(errno));
      return;
    }
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR || interrupted()) {
        if (!interrupted()) error_ = fmt::format("cannot lock {}: {}", dir, std::strerror(errno));
        ::close(fd_);
        fd_ = -1;
        return;
      }
    }
  }
  ~DirLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  bool held() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }

 private:
  int fd_ = -1;
  std::string error_;
};

// A private directory inside `parent` for one run's intermediate files; removed with everything in
// it when the run ends, however it ends.
class RunDir {
 public:
  RunDir(const std::string& parent, const char* what) {
    std::string tmpl = fmt::format("{}/.kdl-{}-{}-XXXXXX", parent, what, ::getpid());
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back(0);
    if (::mkdtemp(buf.data())) path_ = buf.data();
    else error_ = fmt::format("cannot create a temporary directory in {}: {}", parent, std::strerror(errno));
  }
  ~RunDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;
  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }

 private:
  std::string path_, error_;
};

StepResult failure(std::string error, std::string note = "") {
  StepResult r;
  r.ok = false;
  r.error = std::move(error);
  r.note = std::move(note);
  return r;
}

bool sameContents(const std::string& path, const std::string& contents) {
  std::string existing;
  return readWholeFile(path, existing) && existing == contents;
}

bool writeNewFile(const std::string& path, const std::string& contents, std::string& error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = fmt::format("cannot write {}: {}", baseName(path), std::strerror(errno));
    return false;
  }
  size_t off = 0;
  while (off < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + off, contents.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = fmt::format("cannot write {}: {}", baseName(path), std::strerror(errno));
      ::close(fd);
      return false;
    }
    off += size_t(n);
  }
  if (::close(fd) != 0) {
    error = fmt::format("cannot write {}: {}", baseName(path), std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace

std::string hashSpecSources(const SourceManager& sm) {
  Sha256 h;
  for (uint32_t id = 1; id <= sm.fileCount(); ++id) {
    const std::string& t = sm.text(id);
    h.update(fmt::format("{}:", t.size()));
    h.update(t);
  }
  return h.hexDigest();
}

// ---- emit ------------------------------------------------------------------------------------------

namespace {

// Just enough JSON to read back a manifest.json that kdlc wrote: objects, arrays, strings, and
// other scalars kept as raw text.
struct Json {
  enum class Kind { Null, Scalar, String, Array, Object } kind = Kind::Null;
  std::string text;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;
  const Json* get(const std::string& key) const {
    for (const auto& [k, v] : members)
      if (k == key) return &v;
    return nullptr;
  }
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& s) : s_(s) {}
  bool parse(Json& out) {
    if (!value(out, 0)) return false;
    skipSpace();
    return i_ == s_.size();
  }

 private:
  void skipSpace() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  bool string(std::string& out) {
    if (i_ >= s_.size() || s_[i_] != '"') return false;
    ++i_;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) return false;
      char e = s_[i_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) return false;
          unsigned long cp = std::strtoul(s_.substr(i_, 4).c_str(), nullptr, 16);
          i_ += 4;
          if (cp < 0x80) out += char(cp);
          else out += '?';  // names kdlc writes are ASCII; anything else only needs to differ
          break;
        }
        default: out += e;
      }
    }
    if (i_ >= s_.size()) return false;
    ++i_;
    return true;
  }
  bool value(Json& out, int depth) {
    if (depth > 64) return false;
    skipSpace();
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '"') {
      out.kind = Json::Kind::String;
      return string(out.text);
    }
    if (c == '[' || c == '{') {
      bool object = c == '{';
      out.kind = object ? Json::Kind::Object : Json::Kind::Array;
      ++i_;
      skipSpace();
      char close = object ? '}' : ']';
      if (i_ < s_.size() && s_[i_] == close) {
        ++i_;
        return true;
      }
      for (;;) {
        skipSpace();
        Json v;
        std::string key;
        if (object) {
          if (!string(key)) return false;
          skipSpace();
          if (i_ >= s_.size() || s_[i_++] != ':') return false;
        }
        if (!value(v, depth + 1)) return false;
        if (object) out.members.emplace_back(std::move(key), std::move(v));
        else out.items.push_back(std::move(v));
        skipSpace();
        if (i_ >= s_.size()) return false;
        char sep = s_[i_++];
        if (sep == close) return true;
        if (sep != ',') return false;
      }
    }
    size_t start = i_;
    while (i_ < s_.size() && std::string_view(",]} \n\t\r").find(s_[i_]) == std::string_view::npos) ++i_;
    out.kind = Json::Kind::Scalar;
    out.text = s_.substr(start, i_ - start);
    return !out.text.empty();
  }
  const std::string& s_;
  size_t i_ = 0;
};

// What an existing manifest.json says the directory holds.
struct PreviousOutput {
  bool exists = false;
  std::string spec;
  std::vector<std::string> files;  // every kernel's files, relative to the directory
};

// A file name a manifest may name for removal: a plain name in the directory, of a kind kdlc emits.
bool isEmittedFileName(const std::string& n) {
  if (n.empty() || n.find('/') != std::string::npos || n == "." || n == ".." || n == "manifest.json") return false;
  return n.ends_with(".h") || n.ends_with(".cu") || n.ends_with(".cuh") || n.ends_with(".cpp") || n.ends_with(".py");
}

bool readPreviousOutput(const std::string& dir, PreviousOutput& prev, std::string& error) {
  std::string path = dir + "/manifest.json";
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return true;
  std::string text, err;
  Json m;
  const Json* gen = nullptr;
  if (!S_ISREG(st.st_mode) || !readWholeFile(path, text, err) || !JsonReader(text).parse(m) ||
      m.kind != Json::Kind::Object || !(gen = m.get("generator")) || gen->text.rfind("kdlc", 0) != 0) {
    error = fmt::format("{} exists and is not a manifest kdlc wrote; refusing to replace it (choose another "
                        "output directory)",
                        path);
    return false;
  }
  prev.exists = true;
  if (const Json* spec = m.get("spec")) prev.spec = spec->text;
  if (const Json* kernels = m.get("kernels"))
    for (const Json& k : kernels->items)
      if (const Json* files = k.get("files"))
        for (const auto& [role, f] : files->members)
          if (f.kind == Json::Kind::String && isEmittedFileName(f.text)) prev.files.push_back(f.text);
  return true;
}

// Every target must be absent or a regular file before anything moves: a rename that fails half way
// through publishing would leave a mix of two emits.
bool checkTargets(const std::string& dir, const std::vector<EmittedFile>& files, std::string& error) {
  for (const EmittedFile& f : files) {
    struct stat st;
    std::string target = dir + "/" + f.path;
    if (::lstat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      error = fmt::format("{} exists and is not a regular file; nothing in {} was changed", target, dir);
      return false;
    }
  }
  return true;
}

// Moves the staged files into `dir`, manifest.json last; a file whose bytes are unchanged keeps its
// mtime (build systems rely on it).
bool publishStaged(const std::string& stage, const std::string& dir, const std::vector<EmittedFile>& files,
                   std::string& error) {
  std::vector<const EmittedFile*> order;
  for (const EmittedFile& f : files)
    if (f.path != "manifest.json") order.push_back(&f);
  for (const EmittedFile& f : files)
    if (f.path == "manifest.json") order.push_back(&f);
  for (const EmittedFile* f : order) {
    std::string staged = stage + "/" + f->path, target = dir + "/" + f->path;
    if (sameContents(target, f->contents)) continue;
    if (::rename(staged.c_str(), target.c_str()) != 0) {
      error = fmt::format("cannot write {}: {}", target, std::strerror(errno));
      return false;
    }
  }
  return true;
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

}  // namespace

StepResult emitToDirectory(const EmitRequest& req) {
  std::string err;
  if (!makeDirs(req.outDir, err)) return failure(err);
  DirLock lock(req.outDir);
  if (!lock.held()) return interrupted() ? interruptedResult() : failure(lock.error());

  PreviousOutput prev;
  if (!readPreviousOutput(req.outDir, prev, err)) return failure(err);
  if (prev.exists && prev.spec != req.specName)
    return failure(fmt::format("{} holds the output of {} (see its manifest.json); emitting {} there would replace it",
                               req.outDir, prev.spec.empty() ? "another spec" : prev.spec, req.specName),
                   "give each spec its own output directory");

  RunDir stage(req.outDir, "emit");
  if (!stage.ok()) return failure(stage.error());
  for (const EmittedFile& f : req.files)
    if (!writeNewFile(stage.path() + "/" + f.path, f.contents, err))
      return failure(fmt::format("{}; nothing in {} was changed", err, req.outDir));
  if (interrupted()) return interruptedResult();
  if (!checkTargets(req.outDir, req.files, err)) return failure(err);
  if (!publishStaged(stage.path(), req.outDir, req.files, err)) return failure(err);

  // Kernels the previous emit wrote and this one does not: their files would be orphans.
  std::set<std::string> now;
  for (const EmittedFile& f : req.files) now.insert(f.path);
  for (const std::string& f : prev.files)
    if (!now.count(f)) ::unlink((req.outDir + "/" + f).c_str());

  // Build systems compare manifest.json's time with the inputs' (the other files keep theirs when
  // unchanged, so that nothing downstream rebuilds).
  if (req.touchManifest) ::utimensat(AT_FDCWD, (req.outDir + "/manifest.json").c_str(), nullptr, 0);
  if (!req.depfile.empty()) {
    std::string d = depfileEscape(absolutePath(req.outDir + "/manifest.json")) + ":";
    for (const std::string& in : req.depInputs) d += " \\\n  " + depfileEscape(absolutePath(in));
    d += "\n";
    if (!makeDirs(dirName(req.depfile), err) || !writeFileAtomic(req.depfile, d, err)) return failure(err);
  }
  return {};
}

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

namespace {

// The directory that holds kdl/ (the device templates): $KDL_INCLUDE_DIR, <exe dir>/../include when
// installed, else the source tree's include/.
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

// The host compilers nvcc may run: -ccbin/--compiler-bindir in the flags nvcc sees (the last one
// wins, as in nvcc), else $NVCC_CCBIN, else g++ and gcc on PATH.
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
  if (ccbin.empty()) return {"g++", "gcc"};
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
  const KernelToBuild* kernel;
  std::string object;  // in the run's directory
  bool cached = false;
  double seconds = 0;
  int status = 0;
  std::string output;
};

struct CompileContext {
  const BuildRequest& req;
  const Toolchain& tc;
  const std::vector<std::pair<std::string, std::string>>& headers;
  const std::vector<std::string>& env;
  const CompileCache* cache;  // null: --no-cache or unusable
};

std::vector<std::string> nvccFlagsFor(const KernelToBuild& k) {
  std::vector<std::string> flags = {"-std=c++17", "-O3", "-Xcompiler", "-fPIC"};
  flags.insert(flags.end(), k.gencode.begin(), k.gencode.end());
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

void compileOne(const CompileContext& cx, CompileJob& j) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> flags = nvccFlagsFor(*j.kernel);
  std::string key, err;
  if (!compileKey(cx, *j.kernel, flags, key, err)) {
    j.status = 1;
    j.output = err + "\n";
    return;
  }
  if (std::optional<std::string> hit = cx.cache ? cx.cache->lookup(key) : std::nullopt) {
    j.cached = true;
    if (!writeFileAtomic(j.object, *hit, err)) {
      j.status = 1;
      j.output = err + "\n";
    }
    j.seconds = secondsSince(t0);
    return;
  }
  std::vector<std::string> argv = cx.tc.launcher;
  argv.push_back(cx.tc.nvcc);
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-I" + cx.tc.includeDir, "-c", cx.req.outDir + "/" + j.kernel->name + ".cu", "-o", j.object});
  j.status = runProcess(argv, cx.env, j.output);
  if (j.status == 127 && j.output.empty()) j.output = fmt::format("cannot run {}\n", argv[0]);
  if (j.status != 0) {
    j.output = fmt::format("{}\n{}", fmt::join(argv, " "), j.output);
  } else if (cx.cache && cx.cache->writable()) {
    std::string obj;
    if (readWholeFile(j.object, obj)) cx.cache->store(key, obj);
  }
  j.seconds = secondsSince(t0);
}

void reportJob(const CompileJob& j, size_t done, size_t total, const Progress& progress) {
  if (j.status == 0) {
    std::string line = fmt::format("[{}/{}] nvcc {}.cu ({})", done, total, j.kernel->name,
                                   j.cached ? "cached" : fmt::format("{:.1f} s", j.seconds));
    if (!j.output.empty() && !j.cached) line += "\n" + j.output;  // nvcc's warnings
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
      compileOne(cx, jobs[i]);
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

// Moves the libraries into the output directory under its lock, so that concurrent builds publish
// one after the other and a reader never sees a half-written library.
StepResult publishLibraries(const BuildRequest& req, const std::string& runDir) {
  DirLock lock(req.outDir);
  if (!lock.held()) return interrupted() ? interruptedResult() : failure(lock.error());
  if (interrupted()) return interruptedResult();
  for (const char* ext : {".a", ".so"}) {
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

StepResult buildKernels(const BuildRequest& req, const Progress& progress) {
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
  for (const KernelToBuild& k : req.kernels) jobs.push_back({&k, run.path() + "/" + k.name + ".o"});
  CompileContext cx{req, tc, headers, env, cache ? &*cache : nullptr};
  bool compiled = compileAll(cx, jobs, progress);
  if (cache && cache->writable()) cache->evictTo(req.cacheMaxBytes);
  if (interrupted()) return interruptedResult();
  if (!compiled) return failure("nvcc failed; the emitted sources are in " + req.outDir);

  if (StepResult r = archiveAndLink(req, tc, jobs, run.path(), env, progress); !r.ok) return r;
  if (StepResult r = publishLibraries(req, run.path()); !r.ok) return r;
  std::string lib = req.outDir + "/lib" + req.libStem;
  progress(fmt::format("kdlc: built {} kernel{} into {}.a and {}.so", jobs.size(), jobs.size() == 1 ? "" : "s", lib,
                       lib));
  return {};
}

}  // namespace kdl::codegen
