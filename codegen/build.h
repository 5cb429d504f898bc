// `kdlc emit` and `kdlc build` as library functions: the CLI parses options, calls these and prints.
//
// emitToDirectory writes a spec's emitted files into a directory all-or-nothing (a temporary
// directory inside it first, then rename(2) into place), refuses a directory that holds another
// spec's output, and removes the files of kernels the previous manifest listed and the new one does
// not. buildKernels compiles those files with nvcc through the compile cache into lib<stem>.a and
// lib<stem>.so, in named steps: find the toolchain, compute the cache keys, compile with a pool of
// workers, gate on ptxas's report, archive and link, publish. Every build works in its own temporary
// directory and publishes under an flock(2) of the output directory, so builds into one directory can
// run at once. The ptxas gate (codegen/build_ptxas.h): every compile runs with -Xptxas -v, and a
// kernel that spills, whose setmaxnreg ptxas ignored or whose wgmma it serialized fails the build
// (unless allowPtxasWarnings); the report (registers, spills, shared memory per function) is
// published as lib<stem>.ptxas.txt beside the libraries.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/codegen.h"

namespace kdl::codegen {

// One line for the user ("[3/10] nvcc k.cu (2.1 s)", warnings); the CLI decides where it goes.
using Progress = std::function<void(const std::string& line)>;

// While one is alive, SIGINT and SIGTERM do not kill kdlc at once: the handler records the signal
// and terminates the process group of every compiler kdlc started, and emitToDirectory and
// buildKernels stop, remove their temporary files and report the signal, so that the CLI can exit
// with 128 + signal.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  // The signal that arrived, or 0.
  static int signal();
};

// The sha256 of the spec and every file it imports, in load order (manifest.json's spec_sha256).
std::string hashSpecSources(const SourceManager& sm);

struct EmitRequest {
  std::string outDir;                 // created when missing
  std::string specName;               // as in EmitOptions::specName; manifest.json records it
  std::vector<EmittedFile> files;     // emit()'s output, manifest.json included
  bool touchManifest = false;         // update manifest.json's time even when its bytes are unchanged
  std::string depfile;                // when not empty: DIR/manifest.json depends on depInputs
  std::vector<std::string> depInputs;
};

struct StepResult {
  bool ok = true;
  int signal = 0;      // not 0: interrupted by this signal (ok is false)
  std::string error;   // when !ok and no signal: what went wrong, in kdlc's words
  std::string note;    // optional hint that follows the error
};

StepResult emitToDirectory(const EmitRequest& request);

struct KernelToBuild {
  std::string name;                  // NAME.cu and NAME.h in the output directory
  std::vector<std::string> gencode;  // its -gencode flags
};

// Default cap on the compile cache's size, and its environment variable.
inline constexpr uint64_t kDefaultCacheMaxBytes = uint64_t(2) << 30;
inline constexpr const char* kCacheMaxSizeEnv = "KDL_CACHE_MAX_SIZE";
inline constexpr const char* kLauncherEnv = "KDL_LAUNCHER";
inline constexpr const char* kNvccFlagsEnv = "KDL_NVCC_FLAGS";

struct BuildRequest {
  std::string outDir;                 // holds the files emitToDirectory wrote
  std::string libStem;                // lib<stem>.a, lib<stem>.so
  std::vector<KernelToBuild> kernels;  // not empty
  std::string nvcc;                   // --nvcc; empty: $KDL_NVCC, $CUDACXX, PATH, /usr/local/cuda/bin/nvcc
  std::string sourceIncludeDir;       // the source tree's include/, the last place to find kdl/*.cuh
  std::string launcher;               // e.g. "sccache" or "distcc": run as LAUNCHER nvcc ARGS...
  std::vector<std::string> extraNvccFlags;  // after kdlc's own flags (--nvcc-flag, $KDL_NVCC_FLAGS)
  bool allowPtxasWarnings = false;    // report spills / ignored setmaxnreg / serialized wgmma, build anyway
  std::vector<std::string> allowPtxasWarningsFor;  // the same for these kernels only
  bool verbose = false;               // print every kernel's ptxas report
  int jobs = 1;
  bool useCache = true;
  std::string cacheDir;               // empty: defaultCacheDir()
  uint64_t cacheMaxBytes = kDefaultCacheMaxBytes;
};

// What a build used, for the steps after it (`kdlc build --torch`).
struct BuiltWith {
  std::string nvcc;        // absolute path
  std::string includeDir;  // the directory holding kdl/
};
StepResult buildKernels(const BuildRequest& request, const Progress& progress, BuiltWith* used = nullptr);

// `kdlc ptxas-gate`: one compile started by a build system (kdl_add_kernels' compiler launcher),
// gated like buildKernels' compiles. Runs `argv` (a compile with -Xptxas -v; argv[0] a program on
// PATH or a path), passes its output on (without ptxas's info lines when it succeeded), writes the
// report to <object>.ptxas.txt (object: the -o argument) and, on a spill, an ignored setmaxnreg or
// serialized wgmma, removes the object and fails (unless allowPtxasWarnings). A command that does
// not compile an object (-E, -M, no -c or -o) is exec'd as it is. Returns the exit status: the
// compiler's when it failed, 1 when the gate refused, else 0.
struct GatedCompile {
  std::vector<std::string> argv;
  bool allowPtxasWarnings = false;
};
int runGatedCompile(const GatedCompile& c, const Progress& progress);

// The words of $KDL_NVCC_FLAGS (split at blanks, like NVCC_APPEND_FLAGS).
std::vector<std::string> nvccFlagsFromEnvironment();

// Where nvcc is, as buildKernels finds it; empty (and `tried` lists the places) when nowhere.
std::string findNvcc(const std::string& option, std::string& tried);

// The directory that holds kdl/ (the device templates), as buildKernels finds it: $KDL_INCLUDE_DIR,
// <exe dir>/../include when installed, else `sourceIncludeDir` (the source tree's include/); empty when
// none holds them.
std::string findIncludeDir(const std::string& sourceIncludeDir);

// `kdlc build --torch`: after buildKernels, runs DIR/<stem>_torch_build.py (emitted by --torch) with
// Python (findPython), the include directory and nvcc that buildKernels used (BuiltWith), and
// DIR/lib<stem>.a for the kernels, into DIR/<stem>_torch.so. A failure reports the command and its output.
inline constexpr const char* kPythonEnv = "KDL_PYTHON";
// The Python that runs the build script: `option` (--python), else $KDL_PYTHON, else python3 on PATH;
// its absolute path, or empty with `error` saying why.
std::string findPython(const std::string& option, std::string& error);
struct TorchBuildRequest {
  std::string outDir;
  std::string stem;
  std::string python;  // findPython's
  BuiltWith kernels;   // what buildKernels used
  int jobs = 1;
};
StepResult buildTorchExtension(const TorchBuildRequest& request, const Progress& progress);

}  // namespace kdl::codegen
