// buildTorchExtension: `kdlc build --torch`'s last step, the emitted <stem>_torch_build.py run with the
// include directory and nvcc the kernels were built with, linking lib<stem>.a instead of compiling the
// kernels again (codegen/torch_build.py).
#include <fmt/format.h>

#include <chrono>

#include "codegen/build.h"
#include "codegen/build_support.h"

namespace kdl::codegen {

using namespace build_support;

std::string findPython(const std::string& option, std::string& error) {
  if (!option.empty()) {
    std::string p = resolveProgram(option);
    if (p.empty()) error = fmt::format("cannot run --python {}: not an executable", option);
    return p;
  }
  if (std::string v = getEnv(kPythonEnv); !v.empty()) {
    std::string p = resolveProgram(v);
    if (p.empty()) error = fmt::format("cannot run ${}={}: not an executable", kPythonEnv, v);
    return p;
  }
  std::string p = findOnPath("python3");
  if (p.empty())
    error = fmt::format("cannot find python3 on PATH to build the PyTorch extension; pass --python PATH or set ${} "
                        "(a Python with torch)",
                        kPythonEnv);
  return p;
}

StepResult buildTorchExtension(const TorchBuildRequest& req, const Progress& progress) {
  const std::string& python = req.python;
  const std::string script = req.outDir + "/" + req.stem + "_torch_build.py";
  const std::string library = req.outDir + "/" + req.stem + "_torch.so";
  std::vector<std::string> argv = {python, script, "--kdl-include", req.kernels.includeDir,
                                   "--nvcc", req.kernels.nvcc, "--kernels-lib",
                                   req.outDir + "/lib" + req.stem + ".a", "--out", library,
                                   "--jobs", std::to_string(req.jobs)};
  progress(fmt::format("building the PyTorch extension: {}", fmt::join(argv, " ")));
  auto t0 = std::chrono::steady_clock::now();
  std::string output;
  int status = runProcess(argv, compilerEnvironment(""), output);
  if (interrupted()) return interruptedResult();
  while (!output.empty() && output.back() == '\n') output.pop_back();
  if (status != 0)
    return failure(fmt::format("building the PyTorch extension failed (exit {}):\n{}\n{}", status, fmt::join(argv, " "),
                               output),
                   fmt::format("the emitted sources are in {}; run the command again to retry", req.outDir));
  if (!output.empty()) progress(output);
  progress(fmt::format("kdlc: built {} ({:.1f} s; load it with torch.ops.load_library)", library, secondsSince(t0)));
  return {};
}

}  // namespace kdl::codegen
