#include "codegen/render_plan_json.h"

#include <fmt/format.h>

#include "dsl/diagnostics.h"

namespace kdl::codegen {

namespace {

std::string quoted(const std::string& s) { return "\"" + jsonEscape(s) + "\""; }

std::string decisionJson(const Decision& d) {
  return fmt::format("{{\"what\":{},\"value\":{},\"why\":{}}}", quoted(d.what), quoted(d.value), quoted(d.why));
}

std::string planJson(const KernelPlan& p) {
  std::string out = fmt::format(
      "{{\"name\":{},\"op\":{},\"arch\":{},\"min_compute_capability\":{},"
      "\"tile\":[{},{},{}],\"warps\":[{},{}],\"threads\":{},\"mma\":{},\"stages\":{},"
      "\"max_split_k\":{},\"smem_bytes\":{},\"instance\":{},\"decisions\":[",
      quoted(p.name), quoted(opWord(p.spec.op.value)), quoted(p.archName), p.minComputeCapability, p.tileM, p.tileN,
      p.tileK, p.warpsM, p.warpsN, p.threads, quoted(p.mmaShape), p.stages, p.maxSplitK, p.smemBytes,
      quoted(p.templateInstance()));
  for (size_t i = 0; i < p.decisions.size(); ++i) out += (i ? "," : "") + decisionJson(p.decisions[i]);
  out += "]";
  if (p.fallback) out += ",\"fallback\":" + planJson(*p.fallback);  // fallback = sm80: its own plan
  out += "}";
  return out;
}

}  // namespace

std::string renderPlansJson(const std::vector<KernelPlan>& plans) {
  std::string out = "[";
  for (size_t i = 0; i < plans.size(); ++i) out += (i ? ",\n" : "\n") + planJson(plans[i]);
  out += plans.empty() ? "]" : "\n]";
  return out;
}

}  // namespace kdl::codegen
