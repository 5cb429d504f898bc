// emit(): every plan's NAME.h and NAME.cu, with --torch the PyTorch extension's two files, then manifest.json.
#include <fmt/format.h>

#include "codegen/codegen.h"
#include "codegen/emit_internal.h"
#include "codegen/lower_steps.h"
#include "codegen/epilogue_expr.h"
#include "codegen/plan.h"
#include "codegen/writer.h"

namespace kdl::codegen {

namespace {

std::string q(std::string_view s) { return "\"" + jsonEscape(s) + "\""; }

const char* kindWord(ArgPlan::Kind k) {
  switch (k) {
    case ArgPlan::Kind::Tensor: return "tensor";
    case ArgPlan::Kind::Vector: return "vector";
    case ArgPlan::Kind::DeviceScalar: return "device_scalar";
    case ArgPlan::Kind::Param: return "param";
  }
  return "";
}
const char* roleWord(ArgPlan::Role r) {
  switch (r) {
    case ArgPlan::Role::OperandIn: return "input";
    case ArgPlan::Role::OperandOut: return "output";
    case ArgPlan::Role::Param: return "param";
    case ArgPlan::Role::Input: return "input";
    case ArgPlan::Role::TensorOutput: return "output";
    case ArgPlan::Role::AmaxOutput: return "output";
    case ArgPlan::Role::BlockScale: return "input";
  }
  return "";
}

}  // namespace

std::string emitManifest(const std::vector<KernelPlan>& plans, const EmitOptions& o) {
  CodeWriter w;
  w.open("{{");
  w.line("\"generator\": {},", q("kdlc " + kdlcVersion()));
  w.line("\"abi_version\": 1,");
  w.line("\"spec\": {},", q(o.specName));
  w.line("\"spec_sha256\": {},", q(o.specHash));
  w.open("\"kernels\": [");
  for (size_t ki = 0; ki < plans.size(); ++ki) {
    const KernelPlan& p = plans[ki];
    w.open("{{");
    w.line("\"name\": {},", q(p.name));
    w.line("\"op\": {},", q(opWord(p.spec.op.value)));
    w.line("\"arch\": {},", q(p.archName));
    w.line("\"kernel_sha256\": {},", q(p.kernelHash));
    w.line("\"path\": {},", q(pathWord(p.path)));
    w.line("\"template\": {},", q(p.deviceTemplate()));
    std::vector<std::string> gc;
    for (const std::string& g : p.gencode) gc.push_back(q(g));
    w.line("\"gencode\": [{}],", fmt::join(gc, ", "));
    w.line("\"cuda_architectures\": {},", q(p.cmakeArchitectures));
    w.line("\"min_compute_capability\": {},", p.minComputeCapability);
    w.line("\"exact_compute_capability\": {},", p.exactComputeCapability ? "true" : "false");
    w.line("\"files\": {{\"header\": {}, \"source\": {}}},", q(p.name + ".h"), q(p.name + ".cu"));
    w.open("\"symbols\": {{");
    w.line("\"cpp\": {{\"namespace\": {}, \"arguments\": {}, \"can_implement\": {}, \"workspace_size\": {}, \"run\": {}}},",
           q("kdl_kernels::" + p.name), q("kdl_kernels::" + p.name + "::Arguments"),
           q("kdl_kernels::" + p.name + "::can_implement"), q("kdl_kernels::" + p.name + "::workspace_size"),
           q("kdl_kernels::" + p.name + "::run"));
    w.line("\"c\": {{\"info\": {}, \"can_implement\": {}, \"workspace_size\": {}, \"run\": {}{}}}", q("kdl_" + p.name + "_info"),
           q("kdl_" + p.name + "_can_implement"), q("kdl_" + p.name + "_workspace_size"), q("kdl_" + p.name + "_run"),
           p.fallback || p.convPatch ? fmt::format(", \"path\": {}", q("kdl_" + p.name + "_path")) : std::string());
    w.close("},");
    // fallback = sm80: the sm80-path kernel the host side runs where this one cannot (codegen/lower_fallback.cpp).
    if (const KernelPlan* f = p.fallback.get())
      w.line("\"fallback\": {{\"arch\": {}, \"path\": {}, \"template\": {}, \"instance\": {}, \"tile\": [{}, {}, {}], "
             "\"warps\": [{}, {}], \"stages\": {}, \"smem_bytes\": {}}},",
             q(f->archName), q(pathWord(f->path)), q(f->deviceTemplate()), q(f->templateInstance()), f->tileM, f->tileN,
             f->tileK, f->warpsM, f->warpsN, f->stages, f->smemBytes);
    w.open("\"parameters\": {{");
    auto operand = [&](const OperandPlan& x) {
      return fmt::format("{{\"name\": {}, \"dtype\": {}, \"cpp_type\": {}, \"layout\": {}, \"align\": {}}}", q(x.name),
                         q(dtypeWord(x.dtype)), q(x.cppType), q(layoutWord(x.layout)), x.align);
    };
    std::vector<std::string> ops = {operand(p.argA), operand(p.argB)};  // as the caller passes them
    if (p.hasSource) ops.push_back(operand(p.c));
    ops.push_back(operand(p.d));
    w.open("\"operands\": [");
    for (size_t i = 0; i < ops.size(); ++i) w.line("{}{}", ops[i], i + 1 < ops.size() ? "," : "");
    w.close("],");
    w.line("\"accumulator\": {},", q(p.accumCpp));
    w.line("\"mma\": {},", q(p.mmaShape));
    w.line("\"tile\": [{}, {}, {}],", p.tileM, p.tileN, p.tileK);
    w.line("\"warps\": [{}, {}],", p.warpsM, p.warpsN);
    w.line("\"warp_tile\": [{}, {}],", p.warpTileM, p.warpTileN);
    w.line("\"threads\": {},", p.threads);
    if (p.sm90()) {
      w.line("\"schedule\": {},", q(name(p.schedule)));
      w.line("\"cluster\": [{}, {}, 1],", p.clusterM, p.clusterN);
      w.line("\"promote_every\": {},", p.promoteEvery);
      w.line("\"block_scaling\": {},", p.blockScaling ? fmt::format("[{}, {}, {}]", p.blockMA, p.blockNB, p.blockK)
                                                       : std::string("null"));
    }
    w.line("\"stages\": {},", p.stages);
    w.line("\"smem_bytes\": {},", p.smemBytes);
    if (p.smemBytes != p.cpAsyncSmemBytes) w.line("\"smem_bytes_without_tma\": {},", p.cpAsyncSmemBytes);
    if (p.conv()) {  // the filter and stride the spec fixes (null: given at run time); no raster parameter
      auto fixed = [](int x, int y) { return x ? fmt::format("[{}, {}]", x, y) : std::string("null"); };
      w.line("\"conv_kind\": {},", q(toLower(p.convKind())));
      w.line("\"filter\": {},", fixed(p.filterR, p.filterS));
      w.line("\"stride\": {},", fixed(p.strideH, p.strideW));
    } else {
      w.line("\"raster\": {},", q(p.rasterAlongM ? "along_m" : "along_n"));
    }
    w.line("\"split_k\": {},", p.serialSplitK ? fmt::format("{{\"mode\": \"serial\", \"max_slices\": {}}}", p.maxSplitK)
                                              : std::string("{\"mode\": \"none\"}"));
    w.line("\"epilogue\": {}", q(renderEpilogueSummary(p.epilogue)));
    w.close("},");
    w.open("\"arguments\": [");
    for (size_t i = 0; i < p.args.size(); ++i) {
      const ArgPlan& a = p.args[i];
      std::string extra;
      if (a.kind == ArgPlan::Kind::Param) extra = fmt::format(", \"default\": {}", a.defaultValue);
      if (a.kind == ArgPlan::Kind::Vector) extra = fmt::format(", \"broadcast\": {}", q(a.broadcast));
      w.line("{{\"name\": {}, \"kind\": {}, \"role\": {}, \"dtype\": {}{}}}{}", q(a.name), q(kindWord(a.kind)),
             q(roleWord(a.role)), q(dtypeWord(a.dtype)), extra, i + 1 < p.args.size() ? "," : "");
    }
    w.close("],");
    w.open("\"decisions\": [");
    for (size_t i = 0; i < p.decisions.size(); ++i) {
      const Decision& d = p.decisions[i];
      w.line("{{\"what\": {}, \"value\": {}, \"why\": {}}}{}", q(d.what), q(d.value), q(d.why),
             i + 1 < p.decisions.size() ? "," : "");
    }
    w.close("]");
    w.close(ki + 1 < plans.size() ? "}," : "}");
  }
  w.close(o.torchNamespace.empty() ? "]" : "],");
  if (!o.torchNamespace.empty()) {
    w.open("\"torch\": {{");
    w.line("\"namespace\": {},", q(o.torchNamespace));
    w.line("\"source\": {},", q(o.torchStem + "_torch.cpp"));
    w.line("\"build_script\": {},", q(o.torchStem + "_torch_build.py"));
    w.line("\"library\": {},", q(o.torchStem + "_torch.so"));
    w.open("\"ops\": [");
    for (size_t i = 0; i < plans.size(); ++i)
      w.line("{{\"name\": {}, \"schema\": {}}}{}", q(plans[i].name), q(torchSchema(plans[i])), i + 1 < plans.size() ? "," : "");
    w.close("]");
    w.close("}");
  }
  w.close("}");
  return w.take();
}

std::vector<EmittedFile> emit(const std::vector<KernelPlan>& plans, const EmitOptions& options) {
  std::vector<EmittedFile> files;
  for (const KernelPlan& p : plans) {
    files.push_back({p.name + ".h", emitKernelHeader(p, options)});
    files.push_back({p.name + ".cu", emitKernelSource(p, options)});
  }
  if (!options.torchNamespace.empty()) {
    files.push_back({options.torchStem + "_torch.cpp", emitTorchExtension(plans, options)});
    files.push_back({options.torchStem + "_torch_build.py", emitTorchBuildScript(plans, options)});
  }
  files.push_back({"manifest.json", emitManifest(plans, options)});
  return files;
}

}  // namespace kdl::codegen
