// The kernel hash: sha256 of a canonical text of what determines a kernel's emitted files, i.e.
// its resolved spec without source locations or origins (so a comment, a moved line or an edit to
// another kernel changes nothing), the order of its arguments (which follows the order of
// declarations, not their lines), and the kdlc version. NAME.h and NAME.cu carry it in their first
// line instead of the spec file's hash, so build systems rebuild only the kernels that changed.
#include <fmt/format.h>

#include "codegen/emit_internal.h"
#include "codegen/lower_steps.h"
#include "codegen/sha256.h"

namespace kdl::codegen {

namespace {

// Doubles as exact hex floats, so that 0.1 and 0.1000000001 differ.
std::string exact(double v) { return fmt::format("{:a}", v); }

void writeNode(std::string& out, const EpiNode& n) {
  out += fmt::format("({} {} {} {}", name(n.op), exact(n.constant), n.index, name(n.castTo));
  for (const EpiNode& a : n.args) {
    out += ' ';
    writeNode(out, a);
  }
  out += ')';
}

void writeEpilogue(std::string& out, const Epilogue& e) {
  out += fmt::format("epilogue implicit={} uses_source={}\n", e.implicit, e.usesSource);
  for (const EpiParam& x : e.params) out += fmt::format("param {} {}\n", x.name, exact(x.defaultValue));
  for (const EpiInput& x : e.inputs) out += fmt::format("input {} {} {}\n", x.name, name(x.dtype), name(x.broadcast));
  for (const EpiLet& x : e.lets) {
    out += fmt::format("let {} ", x.name);
    writeNode(out, x.value);
    out += '\n';
  }
  for (const EpiOutput& x : e.outputs) {
    out += fmt::format("output {} {} {} {} ", int(x.kind), x.name, name(x.dtype), name(x.layout));
    writeNode(out, x.value);
    out += '\n';
  }
}

// Every field of KernelSpec but its locations, origins, template name and the validator's
// shared-memory figure (the plan recomputes it from the fields here).
std::string canonicalText(const KernelPlan& p) {
  const KernelSpec& s = p.spec;
  std::string out = fmt::format("kdlc {}\nkernel {}\nop {}\narch {}\n", kdlcVersion(), s.name, name(s.op.value),
                                name(s.arch.value));
  for (const Operand& o : s.operands) {
    out += fmt::format("operand {} {} {} {}", o.name, name(o.dtype), name(o.layout), o.align);
    if (o.scaleBlock) out += fmt::format(" scale {} {}", (*o.scaleBlock)[0], (*o.scaleBlock)[1]);
    out += '\n';
  }
  out += fmt::format("accum {}\ntile {} {} {}\ncluster {} {} {}\nstages {}\nschedule {}\nraster {}\nsplit_k {} {}\n",
                     name(s.accum.value), s.tile.value[0], s.tile.value[1], s.tile.value[2], s.cluster.value[0],
                     s.cluster.value[1], s.cluster.value[2], s.stages.value, name(s.schedule.value), name(s.raster.value),
                     name(s.splitK.value), s.splitKSlices.value);
  // Written when not 0 (`fast`, and the value of every non-fp8 kernel), so other kernels keep their hash.
  if (s.promoteEvery.value != 0) out += fmt::format("promotion {}\n", s.promoteEvery.value);
  // Written when set, so kernels without a fallback keep their hash.
  if (s.fallback.value != Fallback::None) out += fmt::format("fallback {}\n", name(s.fallback.value));
  out += fmt::format("filter {} {}\nstride {} {}\n", s.filter.value[0], s.filter.value[1], s.stride.value[0],
                     s.stride.value[1]);
  writeEpilogue(out, s.epilogue);
  out += "arguments";
  for (const ArgPlan& a : p.args) out += " " + a.name;
  return out + "\n";
}

}  // namespace

std::string kernelHash(const KernelPlan& p) { return sha256Hex(canonicalText(p)); }

}  // namespace kdl::codegen
