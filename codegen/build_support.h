// Internal to codegen/build*.cpp: the process, file and lock plumbing that emitToDirectory and
// buildKernels share. Not part of the library's interface.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "codegen/build.h"

namespace kdl::codegen::build_support {

// ---- interruption (InterruptGuard's state) ----
bool interrupted();
StepResult interruptedResult();
StepResult failure(std::string error, std::string note = "");

// ---- paths and programs ----
std::string baseName(const std::string& p);
std::string dirName(const std::string& p);
bool fileExists(const std::string& p);
std::string absolutePath(const std::string& p);
std::string realPath(const std::string& p);
std::string getEnv(const char* name);
std::vector<std::string> splitWords(const std::string& s);
std::string findOnPath(const std::string& name);
// A program named on the command line or in the environment: a path, or a name looked up on PATH;
// its absolute path, or empty when it is not an executable file.
std::string resolveProgram(const std::string& name);
double secondsSince(std::chrono::steady_clock::time_point t0);

// ---- processes ----
// Runs argv (argv[0] an absolute path) in its own process group, so that an interrupt can stop it
// and everything it started; captures stdout and stderr together. `env` replaces the environment.
// Returns the exit status (127: could not start, 128 + N: killed by signal N).
int runProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env, std::string& output);
// kdlc's environment with TMPDIR replaced by `tmpDir` (unless empty), so that what a killed
// compiler leaves behind lands in a directory kdlc removes.
std::vector<std::string> compilerEnvironment(const std::string& tmpDir);

// ---- files ----
bool sameContents(const std::string& path, const std::string& contents);
// Creates `path` (it must not exist) with `contents`.
bool writeNewFile(const std::string& path, const std::string& contents, std::string& error);

// An flock(2) on a directory, held while kdlc changes what the directory publishes.
class DirLock {
 public:
  explicit DirLock(const std::string& dir);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  bool held() const { return fd_ >= 0 || unlockable_; }
  const std::string& error() const { return error_; }

 private:
  int fd_ = -1;
  bool unlockable_ = false;  // the file system has no locks: go on without, as kdlc always did
  std::string error_;
};

// A private directory inside `parent` for one run's intermediate files; removed with everything in
// it when the run ends, however it ends.
class RunDir {
 public:
  RunDir(const std::string& parent, const char* what);
  ~RunDir();
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;
  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }

 private:
  std::string path_, error_;
};

}  // namespace kdl::codegen::build_support
