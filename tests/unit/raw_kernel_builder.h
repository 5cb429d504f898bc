// Hand-built RawKernels for validation and listing tests: every field, operand and epilogue node gets
// its own line in a registered file, so tests can check where a diagnostic points.
#pragma once
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "dsl/diagnostics.h"
#include "dsl/eval/raw_kernel.h"
#include "dsl/source.h"
#include "dsl/eval/value.h"

namespace kdl::testing {

inline Value dtype(const char* n) { return Value::word(WordCategory::DType, n); }
inline Value layout(const char* n) { return Value::word(WordCategory::Layout, n); }
inline Value archWord(const char* n) { return Value::word(WordCategory::Arch, n); }
inline Value opWord(const char* n) { return Value::word(WordCategory::Op, n); }
inline Value scheduleWord(const char* n) { return Value::word(WordCategory::Schedule, n); }
inline Value int3(int64_t a, int64_t b, int64_t c) {
  return Value::tuple({Value::integer(a), Value::integer(b), Value::integer(c)});
}

// A file of blank lines to hang locations on; `next()` hands out a fresh line each time.
struct Harness {
  SourceManager sm;
  uint32_t file;
  DiagEngine diags{1000};
  uint32_t line = 0;
  Harness() : file(sm.add("test.kdl", std::string(4000, '\n'))) {}
  SourceLoc next(uint32_t col = 3, uint32_t length = 1) { return SourceLoc{file, ++line, col, length}; }

  std::vector<const Diagnostic*> errors(DiagKind k) const {
    std::vector<const Diagnostic*> out;
    for (const Diagnostic& d : diags.all())
      if (d.kind == k && d.severity == Severity::Error) out.push_back(&d);
    return out;
  }
  // The one error reported, which must be of kind `k` (nullptr otherwise).
  const Diagnostic* only(DiagKind k) const {
    if (diags.errorCount() != 1) return nullptr;
    auto e = errors(k);
    return e.size() == 1 ? e[0] : nullptr;
  }
  std::string dump() const {
    std::string out;
    for (const Diagnostic& d : diags.all()) out += std::string(diagId(d.kind)) + ": " + d.message + "\n";
    return out;
  }
};

// Epilogue expressions.
struct Epi {
  Harness& h;
  EpiExpr num(double v) {
    EpiExpr e;
    e.kind = EpiExpr::Kind::Const;
    e.constant = Value::floating(v);
    e.loc = h.next();
    return e;
  }
  EpiExpr constant(Value v) {
    EpiExpr e;
    e.kind = EpiExpr::Kind::Const;
    e.constant = std::move(v);
    e.loc = h.next();
    return e;
  }
  EpiExpr name(std::string n) {
    EpiExpr e;
    e.kind = EpiExpr::Kind::Name;
    e.name = std::move(n);
    e.loc = h.next();
    return e;
  }
  EpiExpr call(std::string fn, std::vector<EpiExpr> args) {
    EpiExpr e;
    e.kind = EpiExpr::Kind::Call;
    e.name = std::move(fn);
    e.loc = h.next();
    e.nameLoc = SourceLoc{e.loc.file, e.loc.line, e.loc.col, static_cast<uint32_t>(e.name.size())};
    e.args = std::move(args);
    return e;
  }
  EpiExpr bin(ast::BinaryOp op, EpiExpr a, EpiExpr b) {
    EpiExpr e;
    e.kind = EpiExpr::Kind::Binary;
    e.binaryOp = op;
    e.loc = h.next();
    e.args.push_back(std::move(a));
    e.args.push_back(std::move(b));
    return e;
  }
  EpiExpr un(ast::UnaryOp op, EpiExpr a) {
    EpiExpr e;
    e.kind = EpiExpr::Kind::Unary;
    e.unaryOp = op;
    e.loc = h.next();
    e.args.push_back(std::move(a));
    return e;
  }
  EpiExpr ternary(EpiExpr c, EpiExpr a, EpiExpr b) {
    EpiExpr e;
    e.kind = EpiExpr::Kind::Ternary;
    e.loc = h.next();
    e.args.push_back(std::move(c));
    e.args.push_back(std::move(a));
    e.args.push_back(std::move(b));
    return e;
  }
};

class KernelBuilder {
 public:
  KernelBuilder(Harness& h, std::string name) : h_(h) {
    k_.nameLoc = h.next(8, static_cast<uint32_t>(name.size()));
    k_.name = std::move(name);
  }

  // A gemm on sm80: A bf16 row, B bf16 col, D bf16 row, nothing else set.
  static KernelBuilder gemm(Harness& h, std::string name = "k", const char* dt = "bf16", const char* arch = "sm80") {
    KernelBuilder b(h, std::move(name));
    b.field("op", opWord("gemm")).field("arch", archWord(arch));
    const char* out = std::string(dt) == "tf32" ? "f32" : dt;  // tf32 is no storage type
    b.operand("A", dtype(dt), layout("row")).operand("B", dtype(dt), layout("col")).operand("D", dtype(out), layout("row"));
    return b;
  }
  static KernelBuilder conv(Harness& h, const char* op = "conv2d_fprop", std::string name = "c") {
    KernelBuilder b(h, std::move(name));
    b.field("op", opWord(op)).field("arch", archWord("sm80"));
    b.operand("X", dtype("f16"), layout("nhwc")).operand("W", dtype("f16"), layout("krsc"));
    b.operand("Y", dtype("f16"), layout("nhwc"));
    return b;
  }

  KernelBuilder& field(const std::string& n, Value v, bool fromTemplate = false) {
    RawField f;
    f.name = n;
    f.nameLoc = h_.next(3, static_cast<uint32_t>(n.size()));
    f.value = std::move(v);
    f.valueLoc = SourceLoc{f.nameLoc.file, f.nameLoc.line, 14, 4};
    f.fromTemplate = fromTemplate;
    auto it = std::find_if(k_.fields.begin(), k_.fields.end(), [&](const RawField& x) { return x.name == n; });
    if (it != k_.fields.end())
      *it = std::move(f);
    else
      k_.fields.push_back(std::move(f));
    return *this;
  }
  KernelBuilder& without(const std::string& n) {
    k_.fields.erase(std::remove_if(k_.fields.begin(), k_.fields.end(), [&](const RawField& x) { return x.name == n; }),
                    k_.fields.end());
    k_.operands.erase(
        std::remove_if(k_.operands.begin(), k_.operands.end(), [&](const RawOperand& x) { return x.name == n; }),
        k_.operands.end());
    return *this;
  }
  KernelBuilder& operand(const std::string& n, Value dt, Value lay, Value align = Value()) {
    RawOperand o;
    o.name = n;
    o.loc = h_.next(3, 10);
    o.nameLoc = SourceLoc{o.loc.file, o.loc.line, 3, static_cast<uint32_t>(n.size())};
    o.dtype = std::move(dt);
    o.dtypeLoc = SourceLoc{o.loc.file, o.loc.line, 7, 4};
    o.layout = std::move(lay);
    o.layoutLoc = SourceLoc{o.loc.file, o.loc.line, 12, 3};
    o.align = std::move(align);
    o.alignLoc = SourceLoc{o.loc.file, o.loc.line, 22, 2};
    auto it = std::find_if(k_.operands.begin(), k_.operands.end(), [&](const RawOperand& x) { return x.name == n; });
    if (it != k_.operands.end())
      *it = std::move(o);
    else
      k_.operands.push_back(std::move(o));
    return *this;
  }

  // Epilogue items; the first one opens the block.
  KernelBuilder& param(const std::string& n, Value def, Value dt = Value()) {
    RawEpilogueItem& i = item(ast::EpilogueItemKind::Param, n);
    i.defaultValue = std::move(def);
    i.defaultLoc = h_.next();
    i.dtype = std::move(dt);
    i.dtypeLoc = h_.next();
    return *this;
  }
  KernelBuilder& input(const std::string& n, Value dt, std::string broadcast) {
    RawEpilogueItem& i = item(ast::EpilogueItemKind::Input, n);
    i.dtype = std::move(dt);
    i.dtypeLoc = h_.next();
    i.broadcast = std::move(broadcast);
    i.broadcastLoc = h_.next();
    return *this;
  }
  KernelBuilder& output(const std::string& n, Value dt, Value lay, std::optional<EpiExpr> e) {
    RawEpilogueItem& i = item(ast::EpilogueItemKind::Output, n);
    i.dtype = std::move(dt);
    i.dtypeLoc = h_.next();
    i.layout = std::move(lay);
    i.layoutLoc = h_.next();
    i.expr = std::move(e);
    return *this;
  }
  KernelBuilder& let(const std::string& n, EpiExpr e) {
    item(ast::EpilogueItemKind::Let, n).expr = std::move(e);
    return *this;
  }
  KernelBuilder& assign(const std::string& n, EpiExpr e) {
    item(ast::EpilogueItemKind::Assign, n).expr = std::move(e);
    return *this;
  }
  KernelBuilder& emptyEpilogue() {
    if (!k_.epilogue) k_.epilogue = RawEpilogue{{}, h_.next(3, 8)};
    return *this;
  }

  SourceLoc fieldValueLoc(const std::string& n) const {
    for (const RawField& f : k_.fields)
      if (f.name == n) return f.valueLoc;
    return {};
  }
  const RawOperand& rawOperand(const std::string& n) const {
    for (const RawOperand& o : k_.operands)
      if (o.name == n) return o;
    return k_.operands.front();
  }
  const RawKernel& kernel() const { return k_; }
  RawKernel& kernel() { return k_; }
  EvalResult result() const { return EvalResult{{k_}}; }

 private:
  RawEpilogueItem& item(ast::EpilogueItemKind kind, const std::string& n) {
    emptyEpilogue();
    RawEpilogueItem i;
    i.kind = kind;
    i.name = n;
    i.loc = h_.next();
    i.nameLoc = SourceLoc{i.loc.file, i.loc.line, i.loc.col, static_cast<uint32_t>(n.size())};
    k_.epilogue->items.push_back(std::move(i));
    return k_.epilogue->items.back();
  }

  Harness& h_;
  RawKernel k_;
};

}  // namespace kdl::testing
