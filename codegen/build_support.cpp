// Process, file and lock plumbing of codegen/build*.cpp, and InterruptGuard.
#include "codegen/build_support.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "codegen/compile_cache.h"

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

namespace build_support {

bool interrupted() { return gSignal.load() != 0; }

StepResult interruptedResult() {
  StepResult r;
  r.ok = false;
  r.signal = gSignal.load();
  return r;
}

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
  if (tmpDir.empty()) return currentEnvironment();
  std::vector<std::string> env;
  for (std::string& e : currentEnvironment())
    if (e.rfind("TMPDIR=", 0) != 0) env.push_back(std::move(e));
  env.push_back("TMPDIR=" + tmpDir);
  return env;
}

StepResult failure(std::string error, std::string note) {
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

DirLock::DirLock(const std::string& dir) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) {
    error_ = fmt::format("cannot open {}: {}", dir, std::strerror(errno));
    return;
  }
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == ENOLCK || errno == EOPNOTSUPP || errno == EINVAL) {
      ::close(fd_);
      fd_ = -1;
      unlockable_ = true;
      return;
    }
    if (errno != EINTR || interrupted()) {
      if (!interrupted()) error_ = fmt::format("cannot lock {}: {}", dir, std::strerror(errno));
      ::close(fd_);
      fd_ = -1;
      return;
    }
  }
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

RunDir::RunDir(const std::string& parent, const char* what) {
  std::string tmpl = fmt::format("{}/.kdl-{}-{}-XXXXXX", parent, what, ::getpid());
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back(0);
  if (::mkdtemp(buf.data())) path_ = buf.data();
  else error_ = fmt::format("cannot create a temporary directory in {}: {}", parent, std::strerror(errno));
}

RunDir::~RunDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace build_support

}  // namespace kdl::codegen
