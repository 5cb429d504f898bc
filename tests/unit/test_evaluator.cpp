// The evaluator: the shared examples, each semantic rule and each diagnostic it reports.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <pthread.h>
#include <unistd.h>

#include <fmt/format.h>

#include "dsl/eval/evaluator.h"
#include "dsl/words.h"

using namespace kdl;

namespace {

struct Run {
  SourceManager sm;
  DiagEngine diags{1000};
  EvalResult result;

  size_t count(DiagKind k) const {
    size_t n = 0;
    for (const Diagnostic& d : diags.all()) n += d.kind == k;
    return n;
  }
  // The first diagnostic of kind `k` (fails the test when there is none).
  const Diagnostic& first(DiagKind k) const {
    for (const Diagnostic& d : diags.all())
      if (d.kind == k) return d;
    FAIL("no [" << diagId(k) << "] diagnostic; got:\n" << messages());
    throw std::logic_error("unreachable");
  }
  std::string messages() const {
    std::string out;
    for (const Diagnostic& d : diags.all()) out += std::string(diagId(d.kind)) + ": " + d.message + "\n";
    return out;
  }
  // The text a location covers.
  std::string text(SourceLoc loc) const {
    std::string_view line = sm.lineText(loc.file, loc.line);
    if (loc.col == 0 || loc.col - 1 > line.size()) return "";
    return std::string(line.substr(loc.col - 1, loc.length));
  }
};

std::unique_ptr<Run> evaluate(const std::string& source, const EvalLimits& limits = {}) {
  auto r = std::make_unique<Run>();
  r->result = evaluateSource(r->sm, "test.kdl", source, r->diags, limits);
  return r;
}

std::unique_ptr<Run> evaluateOk(const std::string& source) {
  auto r = evaluate(source);
  INFO(r->messages());
  REQUIRE(r->diags.errorCount() == 0);
  return r;
}

// The value of `let probe = <expr>;` at file scope, via a kernel field (the only output of a script).
Value valueOf(const std::string& expr) {
  auto r = evaluate("kernel probe { v = " + expr + "; }");
  INFO(expr << "\n" << r->messages());
  REQUIRE(r->diags.errorCount() == 0);
  REQUIRE(r->result.kernels.size() == 1);
  return r->result.kernels[0].fields.at(0).value;
}

// The one diagnostic `expr` reports.
const Diagnostic& errorOf(Run& r, DiagKind k) {
  INFO(r.messages());
  CHECK(r.diags.errorCount() == 1);
  return r.first(k);
}

const RawField* field(const RawKernel& k, const std::string& name) {
  for (const RawField& f : k.fields)
    if (f.name == name) return &f;
  return nullptr;
}

const RawOperand* operand(const RawKernel& k, const std::string& name) {
  for (const RawOperand& o : k.operands)
    if (o.name == name) return &o;
  return nullptr;
}

std::string examplePath(const std::string& name) { return std::string(KDL_SHARED_DIR) + "/spec/examples/" + name; }

// A fresh directory of files for import tests, removed afterwards.
struct TempDir {
  std::filesystem::path root;
  TempDir() {
    static int counter = 0;
    root = std::filesystem::temp_directory_path() /
           ("kdl_eval_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(root);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  std::string write(const std::string& rel, const std::string& text) {
    std::filesystem::path p = root / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
};

}  // namespace

// ---- the shared examples -------------------------------------------------------------------------

// Kernels whose evaluation succeeded (poisoned ones go to validation only for independent errors).
template <class R>
static size_t cleanKernels(const R& r) {
  size_t n = 0;
  for (const auto& k : r->result.kernels) n += k.poisoned ? 0 : 1;
  return n;
}

TEST_CASE("the shared examples evaluate without errors", "[eval][examples]") {
  struct Expect {
    const char* file;
    size_t kernels;
  };
  for (Expect e : {Expect{"gemm_basic.kdl", 1}, Expect{"gemm_epilogues.kdl", 3}, Expect{"gemm_sweep.kdl", 12},
                   Expect{"conv_fprop.kdl", 1}}) {
    SourceManager sm;
    DiagEngine diags;
    EvalResult r = evaluateFile(sm, examplePath(e.file), diags);
    INFO(e.file << "\n" << renderText(sm, diags));
    CHECK(diags.errorCount() == 0);
    CHECK(r.kernels.size() == e.kernels);
  }
}

TEST_CASE("gemm_basic keeps every field with its location", "[eval][examples]") {
  SourceManager sm;
  DiagEngine diags;
  EvalResult r = evaluateFile(sm, examplePath("gemm_basic.kdl"), diags);
  REQUIRE(r.kernels.size() == 1);
  const RawKernel& k = r.kernels[0];
  CHECK(k.name == "gemm_bf16_tn");
  CHECK(k.templateName.empty());
  REQUIRE(field(k, "tile"));
  CHECK(field(k, "tile")->value.toString() == "(128, 128, 32)");
  CHECK(field(k, "schedule")->value.isWord(WordCategory::Schedule));
  CHECK_FALSE(field(k, "op")->fromTemplate);
  REQUIRE(k.operands.size() == 4);
  CHECK(k.operands[1].name == "B");
  CHECK(k.operands[1].dtype.isWord(WordCategory::DType));
  CHECK(k.operands[1].layout.asString() == "col");
  CHECK(k.operands[1].align.isNone());
  CHECK_FALSE(k.epilogue);
  SourceLoc tileLoc = field(k, "tile")->valueLoc;
  CHECK(sm.lineText(tileLoc.file, tileLoc.line).substr(tileLoc.col - 1, tileLoc.length) == "(128, 128, 32)");
}

TEST_CASE("gemm_sweep produces twelve named kernels from its template", "[eval][examples]") {
  SourceManager sm;
  DiagEngine diags;
  EvalResult r = evaluateFile(sm, examplePath("gemm_sweep.kdl"), diags);
  INFO(renderText(sm, diags));
  REQUIRE(r.kernels.size() == 12);
  std::vector<std::string> names;
  for (const RawKernel& k : r.kernels) names.push_back(k.name);
  CHECK(names[0] == "gemm_bf16_128x256x64_c1");
  CHECK(std::count(names.begin(), names.end(), "gemm_bf16_128x256x64_c2") == 1);
  CHECK(std::count(names.begin(), names.end(), "gemm_e4m3_64x256x128_c1") == 1);
  CHECK(std::count(names.begin(), names.end(), "gemm_e4m3_128x128x128_c2") == 1);

  const RawKernel& k = r.kernels[0];
  CHECK(k.templateName == "hopper_gemm");
  CHECK(sm.path(k.templateLoc.file).find("common/hopper.kdl") != std::string::npos);
  REQUIRE(field(k, "schedule"));
  CHECK(field(k, "schedule")->fromTemplate);
  CHECK(field(k, "schedule")->value.asString() == "cooperative");
  CHECK(field(r.kernels[4], "schedule")->value.asString() == "pingpong");  // bf16, 64x256x64, c1
  CHECK(field(k, "cluster")->value.toString() == "(1, 1, 1)");
  CHECK(field(r.kernels[1], "cluster")->value.toString() == "(2, 1, 1)");
  CHECK(operand(r.kernels[6], "A")->dtype.asString() == "e4m3");
  CHECK(field(r.kernels[6], "tile")->value.toString() == "(128, 256, 128)");
  REQUIRE(k.epilogue);
  REQUIRE(k.epilogue->items.size() == 3);
  const RawEpilogueItem& d = k.epilogue->items[2];
  CHECK(d.kind == ast::EpilogueItemKind::Assign);
  REQUIRE(d.expr);
  CHECK(d.expr->kind == EpiExpr::Kind::Binary);
  CHECK(k.epilogue->items[0].broadcast.empty());
  CHECK(k.epilogue->items[0].dtype.asString() == "f32");
  // The import is registered under the path as the user would spell it, never made absolute anew.
  CHECK(sm.path(2) == (std::filesystem::path(sm.path(1)).parent_path() / "common/hopper.kdl").lexically_normal().generic_string());
}

// ---- scopes and names ----------------------------------------------------------------------------

TEST_CASE("a name bound twice in one scope is a redefinition pointing at the first", "[eval][scope]") {
  auto r = evaluate("let x = 1;\nlet x = 2;\n");
  const Diagnostic& d = errorOf(*r, DiagKind::Redefinition);
  CHECK(d.message == "`x` is already defined in this scope");
  CHECK(d.loc.line == 2);
  REQUIRE(d.notes.size() == 1);
  CHECK(d.notes[0].loc.line == 1);
  CHECK(r->text(d.notes[0].loc) == "x");
}

TEST_CASE("inner scopes may shadow outer names", "[eval][scope]") {
  auto r = evaluateOk(
      "let t = 1;\n"
      "for i in [1, 2] { let t = i * 10; kernel \"k${t}\" { v = t; } }\n"
      "if true { let t = 5; kernel k5 { v = t; } } else { let t = 6; }\n"
      "kernel k_outer { v = t; }\n");
  REQUIRE(r->result.kernels.size() == 4);
  CHECK(r->result.kernels[0].name == "k10");
  CHECK(r->result.kernels[1].name == "k20");
  CHECK(field(r->result.kernels[2], "v")->value.asInt() == 5);
  CHECK(field(r->result.kernels[3], "v")->value.asInt() == 1);
}

TEST_CASE("a loop variable and the loop body's lets share a scope", "[eval][scope]") {
  auto r = evaluate("for i in [1] { let i = 2; }");
  CHECK(errorOf(*r, DiagKind::Redefinition).message == "`i` is already defined in this scope");
}

TEST_CASE("built-in names cannot be rebound", "[eval][scope]") {
  auto r = evaluate("let bf16 = 2;");
  CHECK(errorOf(*r, DiagKind::Redefinition).message == "cannot redefine `bf16`: it is a built-in dtype; choose another name");
  r = evaluate("fn len(x) = 1;");
  CHECK(errorOf(*r, DiagKind::Redefinition).message.find("a built-in function") != std::string::npos);
  r = evaluate("fn f(row) = 1;");
  CHECK(errorOf(*r, DiagKind::Redefinition).message.find("a built-in layout") != std::string::npos);
  r = evaluate("for sm80 in [1] {}");
  CHECK(errorOf(*r, DiagKind::Redefinition).message.find("a built-in arch") != std::string::npos);
  // The user's binding still wins afterwards, so there is no follow-on error.
  r = evaluate("let gemm = 3;\nlet y = gemm + 1;");
  CHECK(r->diags.errorCount() == 1);
}

TEST_CASE("an undefined name suggests the nearest name in scope", "[eval][scope]") {
  auto r = evaluate("let tiles = [1];\nlet y = len(tile);");
  const Diagnostic& d = errorOf(*r, DiagKind::UndefinedName);
  CHECK(d.message == "`tile` is not defined, did you mean `tiles`?");
  CHECK(r->text(d.loc) == "tile");
  r = evaluate("let y = bf17;");
  CHECK(errorOf(*r, DiagKind::UndefinedName).message == "`bf17` is not defined, did you mean `bf16`?");
  r = evaluate("let y = zzzzzz;");
  CHECK(errorOf(*r, DiagKind::UndefinedName).message == "`zzzzzz` is not defined");
}

TEST_CASE("an error poisons what uses it without follow-on errors", "[eval][recovery]") {
  auto r = evaluate(
      "let a = nope;\n"
      "let b = a + 1;\n"
      "let c = [b, 2][0] * 3;\n"
      "if c > 2 { kernel k1 { v = 1; } }\n"
      "for x in a { kernel k2 { v = 1; } }\n"
      "assert a == 1, \"not reported\";\n"
      "kernel k3 { v = c; }\n"
      "kernel k4 { v = 1; }\n"
      "let d = 1 / 0;\n");
  CHECK(r->diags.errorCount() == 2);
  CHECK(r->count(DiagKind::UndefinedName) == 1);
  CHECK(r->count(DiagKind::DivByZero) == 1);
  REQUIRE(cleanKernels(r) == 1);
  CHECK(r->result.kernels.back().name == "k4");
  CHECK(r->result.kernels.back().poisoned == false);
}

// ---- functions and templates ---------------------------------------------------------------------

TEST_CASE("functions are pure expressions closing over their scope", "[eval][fn]") {
  auto r = evaluateOk(
      "let base = 100;\n"
      "fn add(x) = x + base;\n"
      "fn fact(n) = n <= 1 ? 1 : n * fact(n - 1);\n"
      "fn even(n) = n == 0 ? true : odd(n - 1);\n"
      "fn odd(n) = n == 0 ? false : even(n - 1);\n"
      "for base in [1] { kernel k { a = add(1); f = fact(10); e = even(10); } }\n");
  const RawKernel& k = r->result.kernels.at(0);
  CHECK(field(k, "a")->value.asInt() == 101);  // the closure's `base`, not the loop's
  CHECK(field(k, "f")->value.asInt() == 3628800);
  CHECK(field(k, "e")->value.asBool());
}

TEST_CASE("a function called with the wrong number of arguments", "[eval][fn]") {
  auto r = evaluate("fn smem(t, s, b) = 1;\nlet x = smem(1, 2);");
  const Diagnostic& d = errorOf(*r, DiagKind::CallArity);
  CHECK(d.message == "`smem` takes 3 arguments, not 2");
  CHECK(r->text(d.loc) == "smem(1, 2)");
  REQUIRE(d.notes.size() == 1);
  CHECK(d.notes[0].loc.line == 1);
}

TEST_CASE("duplicate parameters are redefinitions", "[eval][fn]") {
  auto r = evaluate("fn f(a, a) = a;");
  CHECK(errorOf(*r, DiagKind::Redefinition).message == "parameter `a` appears twice in `f`");
}

TEST_CASE("unbounded recursion stops at the depth cap", "[eval][fn][limits]") {
  auto r = evaluate("fn f(n) = f(n + 1) + f(n + 2);\nlet x = f(0);\nlet y = 1;");
  const Diagnostic& d = errorOf(*r, DiagKind::RecursionLimit);
  CHECK(d.message == "calls and nesting go deeper than 256 levels; the cap is 256 (--max-depth)");
  EvalLimits small;
  small.maxCallDepth = 20;
  r = evaluate("fn f(n) = n == 0 ? 0 : 1 + f(n - 1);\nlet x = f(100);", small);
  const Diagnostic& at = errorOf(*r, DiagKind::RecursionLimit);
  CHECK(at.message.find("the cap is 20") != std::string::npos);
  CHECK(r->text(at.loc) == "f(n - 1)");  // the innermost call
  REQUIRE(at.notes.size() == 1);
  CHECK(at.notes[0].message == "reached from this call");
  CHECK(r->text(at.notes[0].loc) == "f(100)");
  r = evaluate("fn f(n) = n == 0 ? 0 : 1 + f(n - 1);\nlet x = f(50);");
  CHECK(r->diags.errorCount() == 0);
}

namespace {
struct StackRun {
  std::unique_ptr<Run> run;
  static void* go(void* self) {
    auto* s = static_cast<StackRun*>(self);
    EvalLimits deep;
    deep.maxCallDepth = 1'000'000;
    s->run = evaluate("fn f(n) = n == 0 ? 0 : 1 + f(n - 1);\nlet x = f(10000000);", deep);
    return nullptr;
  }
};
}  // namespace

TEST_CASE("a depth cap set too high for the stack is still a recursion-limit", "[eval][fn][limits]") {
  // A thread with a 4 MiB stack: the evaluator keeps the lower half free.
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 4u << 20);
  StackRun s;
  pthread_t thread;
  REQUIRE(pthread_create(&thread, &attr, &StackRun::go, &s) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  REQUIRE(s.run);
  const Diagnostic& d = errorOf(*s.run, DiagKind::RecursionLimit);
  CHECK(d.message.find("more than the stack holds; the cap is 1000000 (--max-depth), lower it") != std::string::npos);
}

TEST_CASE("templates bind positional, named and default arguments", "[eval][template]") {
  auto r = evaluateOk(
      "let one = 1;\n"
      "template t(dt, tile, cluster = (one, 1, 1), stages = tile[0] / 32) {\n"
      "  A : dt row; tile = tile; cluster = cluster; stages = stages;\n"
      "}\n"
      "kernel a = t(f16, (128, 64, 32));\n"
      "kernel b = t(bf16, cluster = (2, 1, 1), tile = (64, 64, 32));\n");
  REQUIRE(r->result.kernels.size() == 2);
  const RawKernel& a = r->result.kernels[0];
  CHECK(a.templateName == "t");
  CHECK(a.templateLoc.line == 2);
  CHECK(field(a, "cluster")->value.toString() == "(1, 1, 1)");
  CHECK(field(a, "stages")->value.asInt() == 4);
  CHECK(field(a, "tile")->fromTemplate);
  const RawKernel& b = r->result.kernels[1];
  CHECK(field(b, "cluster")->value.toString() == "(2, 1, 1)");
  CHECK(field(b, "stages")->value.asInt() == 2);
  CHECK(operand(b, "A")->dtype.asString() == "bf16");
}

TEST_CASE("template argument errors are call-arity errors", "[eval][template]") {
  const std::string t = "template t(a, b = 1) { x = a; }\n";
  auto r = evaluate(t + "kernel k = t();");
  CHECK(errorOf(*r, DiagKind::CallArity).message == "template `t` needs an argument for `a`");
  r = evaluate(t + "kernel k = t(1, 2, 3);");
  const Diagnostic& d = errorOf(*r, DiagKind::CallArity);
  CHECK(d.message == "template `t` takes 2 arguments, but is given 3");
  CHECK(r->text(d.loc) == "3");
  CHECK(d.notes.at(0).loc.line == 1);
  r = evaluate(t + "kernel k = t(1, bb = 2);");
  CHECK(errorOf(*r, DiagKind::CallArity).message == "template `t` has no parameter `bb`, did you mean `b`?");
  r = evaluate(t + "kernel k = t(1, a = 2);");
  CHECK(errorOf(*r, DiagKind::CallArity).message == "`a` is given twice");
  r = evaluate(t + "kernel k = t(a = 1, 2);");
  CHECK(errorOf(*r, DiagKind::CallArity).message == "a positional argument cannot follow a named one");
  CHECK(r->result.kernels.empty());
}

TEST_CASE("templates and functions are not interchangeable", "[eval][template]") {
  auto r = evaluate("template t(a) { x = a; }\nlet y = t(1);");
  const Diagnostic& d = errorOf(*r, DiagKind::NotCallable);
  CHECK(d.message == "`t` is a template, not a function; instantiate it with `kernel NAME = t(...);`");
  r = evaluate("fn f(a) = a;\nkernel k = f(1);");
  CHECK(errorOf(*r, DiagKind::NotCallable).message ==
        "`f` is a `function`, not a template; a kernel can only instantiate a template");
  r = evaluate("let l = [1];\nlet y = l(1);");
  CHECK(errorOf(*r, DiagKind::NotCallable).message == "`l` is of type `list`, not a function");
  r = evaluate("kernel k = nothere(1);");
  CHECK(errorOf(*r, DiagKind::UndefinedName).message == "`nothere` is not defined");
}

TEST_CASE("an override replaces template fields in place, in the kernel statement's scope", "[eval][template]") {
  auto r = evaluateOk(
      "let dt2 = bf16;\n"
      "template t(dt) {\n"
      "  op = gemm; tile = (64, 64, 32); A : dt row; B : dt col;\n"
      "  epilogue { D = acc; }\n"
      "}\n"
      "kernel k = t(f16) { tile = (128, 128, 32); stages = 3; B : dt2 row; epilogue { D = relu(acc); } }\n");
  REQUIRE(r->result.kernels.size() == 1);
  const RawKernel& k = r->result.kernels[0];
  REQUIRE(k.fields.size() == 3);
  CHECK(k.fields[0].name == "op");
  CHECK(k.fields[0].fromTemplate);
  CHECK(k.fields[1].name == "tile");
  CHECK_FALSE(k.fields[1].fromTemplate);
  CHECK(k.fields[1].value.toString() == "(128, 128, 32)");
  CHECK(k.fields[2].name == "stages");
  REQUIRE(k.operands.size() == 2);
  CHECK(k.operands[1].name == "B");
  CHECK(k.operands[1].dtype.asString() == "bf16");
  CHECK(k.operands[1].layout.asString() == "row");
  REQUIRE(k.epilogue);
  CHECK(k.epilogue->items.at(0).expr->kind == EpiExpr::Kind::Call);
}

// ---- operators -----------------------------------------------------------------------------------

TEST_CASE("integer and float arithmetic", "[eval][ops]") {
  CHECK(valueOf("7 / 2").asInt() == 3);
  CHECK(valueOf("-7 / 2").asInt() == -3);
  CHECK(valueOf("-7 % 2").asInt() == -1);
  CHECK(valueOf("7 % -2").asInt() == 1);
  CHECK(valueOf("1 + 2 * 3").asInt() == 7);
  CHECK(valueOf("1 + 0.5").isFloat());
  CHECK(valueOf("1 + 0.5").asFloat() == 1.5);
  CHECK(valueOf("7.0 / 2").asFloat() == 3.5);
  CHECK(valueOf("-(3)").asInt() == -3);
  CHECK(valueOf("+3").asInt() == 3);
  CHECK(valueOf("0x80 + 1_024").asInt() == 1152);
}

TEST_CASE("concatenation of strings, lists and tuples", "[eval][ops]") {
  CHECK(valueOf("\"ab\" + \"cd\"").asString() == "abcd");
  CHECK(valueOf("[1] + [2, 3]").toString() == "[1, 2, 3]");
  CHECK(valueOf("(1, 2) + (3, 4)").toString() == "(1, 2, 3, 4)");
}

TEST_CASE("operands of the wrong type name both types", "[eval][ops]") {
  auto r = evaluate("let x = \"a\" + 1;");
  const Diagnostic& d = errorOf(*r, DiagKind::TypeMismatch);
  CHECK(d.message == "cannot add `string` and `int`");
  CHECK(r->text(d.loc) == "+");
  r = evaluate("let x = [1] + (2, 3);");
  CHECK(errorOf(*r, DiagKind::TypeMismatch).message == "cannot add `list` and `tuple`");
  r = evaluate("let x = bf16 * 2;");
  CHECK(errorOf(*r, DiagKind::TypeMismatch).message == "cannot multiply `dtype` and `int`");
  r = evaluate("let x = 1 < \"a\";");
  CHECK(errorOf(*r, DiagKind::TypeMismatch).message == "cannot compare `int` and `string` with `<`");
  r = evaluate("let x = -\"a\";");
  CHECK(errorOf(*r, DiagKind::TypeMismatch).message == "cannot negate a `string`");
  r = evaluate("let x = !1;");
  CHECK(errorOf(*r, DiagKind::TypeMismatch).message == "`!` needs a `bool`, not `int`");
  r = evaluate("let x = 1 && true;");
  CHECK(errorOf(*r, DiagKind::TypeMismatch).message == "`&&` needs `bool` operands, not `int`");
  r = evaluate("let x = 1 ? 2 : 3;");
  const Diagnostic& t = errorOf(*r, DiagKind::TypeMismatch);
  CHECK(t.message == "the condition of `?:` must be a `bool`, not `int`");
  CHECK(r->text(t.loc) == "1");
}

TEST_CASE("division by zero is reported at the operator", "[eval][ops]") {
  auto r = evaluate("let x = 10 / (2 - 2);");
  const Diagnostic& d = errorOf(*r, DiagKind::DivByZero);
  CHECK(d.message == "division by zero");
  CHECK(r->text(d.loc) == "/");
  CHECK(d.loc.col == 12);
  r = evaluate("let x = 10 % 0;");
  CHECK(errorOf(*r, DiagKind::DivByZero).message == "remainder of a division by zero");
  r = evaluate("let x = 1.0 / 0;");
  CHECK(r->count(DiagKind::DivByZero) == 1);
}

TEST_CASE("integer overflow is a number-range error", "[eval][ops]") {
  auto r = evaluate("let x = 9223372036854775807 + 1;");
  CHECK(errorOf(*r, DiagKind::NumberRange).message == "9223372036854775807 + 1 does not fit a 64-bit integer");
  r = evaluate("let x = 4294967296 * 4294967296;");
  CHECK(r->count(DiagKind::NumberRange) == 1);
  r = evaluate("let m = -9223372036854775807 - 1;\nlet x = m / -1;");
  CHECK(r->count(DiagKind::NumberRange) == 1);
  r = evaluate("let m = -9223372036854775807 - 1;\nlet x = m % -1;");
  CHECK(r->diags.errorCount() == 0);
  r = evaluate("let x = 1e308 * 10.0;");
  CHECK(errorOf(*r, DiagKind::NumberRange).message == "the result does not fit a double");
}

TEST_CASE("comparisons, equality and logic", "[eval][ops]") {
  CHECK(valueOf("1 < 2").asBool());
  CHECK(valueOf("2 <= 2.0").asBool());
  CHECK_FALSE(valueOf("\"b\" < \"a\"").asBool());
  CHECK(valueOf("\"abc\" >= \"abb\"").asBool());
  CHECK(valueOf("(1, bf16) == (1, bf16)").asBool());
  CHECK(valueOf("[1] != (1,)").asBool());
  CHECK(valueOf("1 == 1.0").asBool());
  CHECK(valueOf("bf16 != f16").asBool());
  CHECK(valueOf("serial(2) == serial(2)").asBool());
  CHECK(valueOf("!(1 > 2) && true").asBool());
  // Short-circuit: the right side is never evaluated.
  CHECK_FALSE(valueOf("false && 1 / 0 == 1").asBool());
  CHECK(valueOf("true || nope").asBool());
  CHECK(valueOf("true ? 1 : 1 / 0").asInt() == 1);
}

TEST_CASE("indexing tuples, lists and strings", "[eval][ops]") {
  CHECK(valueOf("(4, 5, 6)[2]").asInt() == 6);
  CHECK(valueOf("[[1, 2], [3, 4]][1][0]").asInt() == 3);
  CHECK(valueOf("\"abc\"[1]").asString() == "b");
  auto r = evaluate("let t = (1, 2, 3);\nlet x = t[3];");
  const Diagnostic& d = errorOf(*r, DiagKind::IndexRange);
  CHECK(d.message == "index 3 is out of range for a tuple of length 3 (indices go from 0 to length - 1)");
  CHECK(r->text(d.loc) == "3");
  r = evaluate("let x = [1][-1];");
  CHECK(r->count(DiagKind::IndexRange) == 1);
  r = evaluate("let x = [1][\"0\"];");
  CHECK(errorOf(*r, DiagKind::TypeMismatch).message == "an index must be an `int`, not `string`");
  r = evaluate("let x = 5[0];");
  CHECK(errorOf(*r, DiagKind::TypeMismatch).message == "`int` values cannot be indexed; only tuples, lists and strings can");
}

// ---- strings -------------------------------------------------------------------------------------

TEST_CASE("string interpolation", "[eval][string]") {
  CHECK(valueOf("\"g_${bf16}_${128}x${(1, 2)}_${1.5}_${true}_${[row]}\"").asString() ==
        "g_bf16_128x(1, 2)_1.5_true_[row]");
  CHECK(valueOf("\"${serial(3)}\"").asString() == "serial(3)");
}

TEST_CASE("strings are capped", "[eval][string][limits]") {
  EvalLimits small;
  small.maxString = 64;
  auto r = evaluate("let s = \"0123456789012345678901234567890123456789\";\nlet t = s + s;", small);
  const Diagnostic& d = errorOf(*r, DiagKind::EvalLimit);
  CHECK(d.message == "a string longer than 64 bytes; the cap is 64");
  r = evaluate("let s = str(range(100));", small);
  CHECK(r->count(DiagKind::EvalLimit) == 1);
  r = evaluate("let s = \"${range(100)}\";", small);
  CHECK(r->count(DiagKind::EvalLimit) == 1);
}

// ---- statements ----------------------------------------------------------------------------------

TEST_CASE("for iterates over lists and tuples only", "[eval][stmt]") {
  auto r = evaluateOk("for x in (1, 2, 3) { kernel \"k${x}\" { v = x; } }\nfor y in [] { kernel never {} }");
  CHECK(r->result.kernels.size() == 3);
  r = evaluate("for c in \"abc\" {}");
  const Diagnostic& d = errorOf(*r, DiagKind::TypeMismatch);
  CHECK(d.message == "`for` iterates over a list or tuple, not `string`");
  CHECK(r->text(d.loc) == "\"abc\"");
}

TEST_CASE("if needs a bool and else-if chains work", "[eval][stmt]") {
  auto r = evaluateOk(
      "for i in range(3) {\n"
      "  if i == 0 { kernel a {} } else if i == 1 { kernel b {} } else { kernel c {} }\n"
      "}\n");
  REQUIRE(r->result.kernels.size() == 3);
  CHECK(r->result.kernels[2].name == "c");
  r = evaluate("if 1 {}");
  CHECK(errorOf(*r, DiagKind::TypeMismatch).message == "the condition of `if` must be a `bool`, not `int`");
}

TEST_CASE("a failing assert reports its message at the condition", "[eval][stmt]") {
  auto r = evaluate("let n = 2;\nassert n == 3, \"expected ${3} tiles, got ${n}\";");
  const Diagnostic& d = errorOf(*r, DiagKind::AssertFailed);
  CHECK(d.message == "assertion failed: expected 3 tiles, got 2");
  CHECK(r->text(d.loc) == "n == 3");
  r = evaluate("assert 1 > 2;");
  CHECK(errorOf(*r, DiagKind::AssertFailed).message == "assertion failed");
  r = evaluate("assert 1;");
  CHECK(errorOf(*r, DiagKind::TypeMismatch).message == "the condition of `assert` must be a `bool`, not `int`");
  evaluateOk("assert true, \"fine\";");
}

TEST_CASE("an assert in a kernel body drops that kernel", "[eval][stmt]") {
  auto r = evaluate(
      "template t(m) { assert m % 64 == 0, \"tile M ${m} is not a multiple of 64\"; tile = (m, 64, 32); }\n"
      "for m in [64, 96, 128] { kernel \"k${m}\" = t(m); }\n");
  CHECK(errorOf(*r, DiagKind::AssertFailed).message == "assertion failed: tile M 96 is not a multiple of 64");
  CHECK(cleanKernels(r) == 2);
}

TEST_CASE("loops are capped by the step budget", "[eval][limits]") {
  EvalLimits small;
  small.maxSteps = 1000;
  auto r = evaluate("for i in range(100) { for j in range(100) { let x = i * j; } }\nlet after = nope;", small);
  const Diagnostic& d = errorOf(*r, DiagKind::EvalLimit);
  CHECK(d.message.find("the cap is 1000") != std::string::npos);
  // Exponential recursion within the depth cap is stopped by the step budget, not left to run.
  r = evaluate("fn f(n) = n == 0 ? 0 : f(n - 1) + f(n - 1);\nlet x = f(60);", small);
  CHECK(r->count(DiagKind::EvalLimit) == 1);
}

// ---- built-in functions --------------------------------------------------------------------------

TEST_CASE("built-in functions", "[eval][builtin]") {
  CHECK(valueOf("len([1, 2, 3])").asInt() == 3);
  CHECK(valueOf("len((1, 2))").asInt() == 2);
  CHECK(valueOf("len(\"abcd\")").asInt() == 4);
  CHECK(valueOf("range(3)").toString() == "[0, 1, 2]");
  CHECK(valueOf("range(2, 5)").toString() == "[2, 3, 4]");
  CHECK(valueOf("range(0, 10, 4)").toString() == "[0, 4, 8]");
  CHECK(valueOf("range(5, 0, -2)").toString() == "[5, 3, 1]");
  CHECK(valueOf("range(5, 0)").toString() == "[]");
  CHECK(valueOf("min(3, 1, 2)").asInt() == 1);
  CHECK(valueOf("max(3, 1.5)").asInt() == 3);
  CHECK(valueOf("max([64, 128, 32])").asInt() == 128);
  CHECK(valueOf("min((2.5, 4))").asFloat() == 2.5);
  CHECK(valueOf("str(128)").asString() == "128");
  CHECK(valueOf("str((1, bf16))").asString() == "(1, bf16)");
  CHECK(valueOf("sizeof(bf16)").asInt() == 2);
  CHECK(valueOf("sizeof(e4m3)").asInt() == 1);
  CHECK(valueOf("sizeof(tf32)").asInt() == 4);
  CHECK(valueOf("sizeof(f64)").asInt() == 8);
  CHECK(valueOf("bits(f16)").asInt() == 16);
  CHECK(valueOf("bits(s32)").asInt() == 32);
  CHECK(valueOf("product((128, 256, 64))").asInt() == 128 * 256 * 64);
  CHECK(valueOf("product([2, 0.5])").asFloat() == 1.0);
  CHECK(valueOf("product([])").asInt() == 1);
  Value s = valueOf("serial(4)");
  CHECK(s.isWord(WordCategory::SplitK));
  CHECK(s.asString() == "serial");
  CHECK(s.items().at(0).asInt() == 4);
  CHECK(valueOf("parallel(2)").toString() == "parallel(2)");
  CHECK(valueOf("stream_k").isWord(WordCategory::SplitK));
}

TEST_CASE("built-in functions check their arguments", "[eval][builtin]") {
  auto check = [](const std::string& expr, DiagKind kind, const std::string& message) {
    auto r = evaluate("let x = " + expr + ";");
    INFO(expr);
    CHECK(errorOf(*r, kind).message == message);
  };
  check("len(1)", DiagKind::TypeMismatch, "`len` needs a list, tuple or string, not `int`");
  check("len(1, 2)", DiagKind::CallArity, "`len` takes 1 argument, not 2");
  check("range()", DiagKind::CallArity, "`range` takes 1 to 3 arguments, not 0");
  check("range(0, 10, 0)", DiagKind::BadArgument, "the step of `range` cannot be 0");
  check("range(1.5)", DiagKind::TypeMismatch, "`range` needs `int` arguments, not `float`");
  check("min()", DiagKind::CallArity, "`min` takes two or more numbers, or one list or tuple of numbers");
  check("min(1)", DiagKind::TypeMismatch, "`min` of one value needs a list or tuple, not `int`");
  check("max([])", DiagKind::BadArgument, "`max` of an empty list");
  check("max(1, \"a\")", DiagKind::TypeMismatch, "`max` needs numbers, not `string`");
  check("sizeof(row)", DiagKind::TypeMismatch, "`sizeof` needs a dtype such as `bf16`, not `layout`");
  check("product(3)", DiagKind::TypeMismatch, "`product` needs a list or tuple of numbers, not `int`");
  check("product([1, \"a\"])", DiagKind::TypeMismatch, "`product` needs numbers, but the list holds `string`");
  check("product([4294967296, 4294967296])", DiagKind::NumberRange, "this product does not fit a 64-bit integer");
  check("serial(0)", DiagKind::BadArgument, "`serial` needs a positive number of slices, not 0");
  check("parallel(2.0)", DiagKind::TypeMismatch, "`parallel` needs an `int` number of slices, not `float`");
  check("bf16(2)", DiagKind::NotCallable, "`bf16` is of type `dtype`, not a function");
}

TEST_CASE("sequences are capped", "[eval][limits]") {
  EvalLimits small;
  small.maxSequence = 100;
  auto r = evaluate("let x = range(1000);", small);
  CHECK(errorOf(*r, DiagKind::EvalLimit).message == "this `range` has 1000 elements; the cap is 100");
  r = evaluate("let x = range(60) + range(60);", small);
  CHECK(errorOf(*r, DiagKind::EvalLimit).message == "a sequence of 120 elements; the cap is 100");
  r = evaluate("let x = range(-9223372036854775807, 9223372036854775807);");
  CHECK(r->count(DiagKind::EvalLimit) == 1);
}

// ---- kernels -------------------------------------------------------------------------------------

TEST_CASE("kernel names may be string expressions", "[eval][kernel]") {
  auto r = evaluateOk("let t = (128, 64);\nkernel \"g_${t[0]}x${t[1]}\" { v = 1; }");
  REQUIRE(r->result.kernels.size() == 1);
  CHECK(r->result.kernels[0].name == "g_128x64");
  CHECK(r->text(r->result.kernels[0].nameLoc) == "\"g_${t[0]}x${t[1]}\"");
  r = evaluate("kernel (1 + 2) { v = 1; }");
  CHECK(errorOf(*r, DiagKind::TypeMismatch).message == "a kernel name must be a `string`, not `int`");
  CHECK(r->result.kernels.empty());
}

TEST_CASE("a field or operand set twice in one body", "[eval][kernel]") {
  auto r = evaluate("kernel k {\n  tile = (1, 2, 3);\n  tile = (4, 5, 6);\n}");
  const Diagnostic& d = errorOf(*r, DiagKind::DuplicateField);
  CHECK(d.message == "`tile` is set twice in this kernel body");
  CHECK(d.loc.line == 3);
  REQUIRE(d.notes.size() == 1);
  CHECK(d.notes[0].loc.line == 2);
  CHECK(r->text(d.notes[0].loc) == "tile");
  CHECK(cleanKernels(r) == 0);
  r = evaluate("kernel k { A : f16 row; A : f16 col; }");
  CHECK(errorOf(*r, DiagKind::DuplicateField).message == "operand `A` is declared twice in this kernel body");
  r = evaluate("kernel k { epilogue { D = acc; } epilogue { D = acc; } }");
  CHECK(errorOf(*r, DiagKind::DuplicateField).message == "this kernel body has a second epilogue");
}

TEST_CASE("lets and asserts inside kernel bodies", "[eval][kernel]") {
  auto r = evaluateOk("kernel k { let m = 64; tile = (m * 2, m, 32); assert m > 0; }\nlet m = 1;");
  CHECK(field(r->result.kernels.at(0), "tile")->value.toString() == "(128, 64, 32)");
}

TEST_CASE("operands keep dtype, layout and alignment with locations", "[eval][kernel]") {
  auto r = evaluateOk("let dts = [f16, bf16];\nkernel k { A : dts[1] row align 8; B : f16 col; }");
  const RawKernel& k = r->result.kernels.at(0);
  const RawOperand* a = operand(k, "A");
  REQUIRE(a);
  CHECK(a->dtype.asString() == "bf16");
  CHECK(r->text(a->dtypeLoc) == "dts[1]");
  CHECK(r->text(a->layoutLoc) == "row");
  CHECK(a->align.asInt() == 8);
  CHECK(r->text(a->alignLoc) == "8");
  CHECK(r->text(a->nameLoc) == "A");
  CHECK(operand(k, "B")->align.isNone());
}

TEST_CASE("the kernel count is capped", "[eval][limits]") {
  EvalLimits small;
  small.maxKernels = 5;
  auto r = evaluate("for i in range(10) { kernel \"k${i}\" {} }\nlet after = nope;", small);
  const Diagnostic& d = errorOf(*r, DiagKind::KernelLimit);
  CHECK(d.message == "more than 5 kernels; the cap is 5 (--max-kernels)");
  CHECK(r->result.kernels.size() == 5);
}

// ---- epilogues -----------------------------------------------------------------------------------

TEST_CASE("epilogue names stay symbolic; script names become constants", "[eval][epilogue]") {
  auto r = evaluateOk(
      "let slope = 0.1;\n"
      "let dt = f32;\n"
      "fn half(x) = x / 2;\n"
      "kernel k {\n"
      "  A : f16 row; C : f16 row; D : f16 row;\n"
      "  epilogue {\n"
      "    param alpha = 1.0 * 2;\n"
      "    input bias : dt [col];\n"
      "    let y = alpha * acc + C + bias;\n"
      "    D = cast(bf16, leaky_relu(y, slope) + half(3.0) + unknown + max(slope, 2));\n"
      "    output amax : f32 = max(abs(D));\n"
      "    output Z : f16 row = -y;\n"
      "  }\n"
      "}\n");
  const RawKernel& k = r->result.kernels.at(0);
  REQUIRE(k.epilogue);
  const std::vector<RawEpilogueItem>& items = k.epilogue->items;
  REQUIRE(items.size() == 6);
  CHECK(items[0].kind == ast::EpilogueItemKind::Param);
  CHECK(items[0].defaultValue.asFloat() == 2.0);
  CHECK(items[0].dtype.isNone());
  CHECK(items[1].dtype.asString() == "f32");
  CHECK(items[1].broadcast == "col");
  CHECK(r->text(items[1].broadcastLoc) == "[col]");
  const EpiExpr& let = *items[2].expr;  // (alpha * acc + C) + bias
  CHECK(let.kind == EpiExpr::Kind::Binary);
  CHECK(let.args.at(1).kind == EpiExpr::Kind::Name);
  CHECK(let.args.at(0).args.at(1).name == "C");
  CHECK(let.args.at(0).args.at(0).args.at(1).name == "acc");

  const EpiExpr& cast = *items[3].expr;
  REQUIRE(cast.kind == EpiExpr::Kind::Call);
  CHECK(cast.name == "cast");
  CHECK(r->text(cast.nameLoc) == "cast");
  CHECK(cast.args.at(0).kind == EpiExpr::Kind::Const);
  CHECK(cast.args.at(0).constant.isWord(WordCategory::DType));
  // ((leaky_relu(y, slope) + half(3.0)) + unknown) + max(slope, 2)
  const EpiExpr& sum = cast.args.at(1);
  const EpiExpr& leaky = sum.args.at(0).args.at(0).args.at(0);
  CHECK(leaky.name == "leaky_relu");
  CHECK(leaky.args.at(0).kind == EpiExpr::Kind::Name);
  CHECK(leaky.args.at(1).kind == EpiExpr::Kind::Const);
  CHECK(leaky.args.at(1).constant.asFloat() == 0.1);
  const EpiExpr& half = sum.args.at(0).args.at(0).args.at(1);
  CHECK(half.kind == EpiExpr::Kind::Const);  // a script function of constants, folded
  CHECK(half.constant.asFloat() == 1.5);
  CHECK(sum.args.at(0).args.at(1).kind == EpiExpr::Kind::Name);  // bound nowhere: validation reports it
  CHECK(sum.args.at(0).args.at(1).name == "unknown");
  CHECK(sum.args.at(1).kind == EpiExpr::Kind::Call);  // epilogue functions are never evaluated
  CHECK(items[4].dtype.asString() == "f32");
  CHECK(items[4].layout.isNone());
  CHECK(items[4].expr->args.at(0).args.at(0).name == "D");
  CHECK(items[5].layout.asString() == "row");
  CHECK(items[5].expr->kind == EpiExpr::Kind::Unary);
  CHECK(r->text(items[5].layoutLoc) == "row");
}

TEST_CASE("epilogue types resolve in the template's scope", "[eval][epilogue]") {
  auto r = evaluateOk(
      "template t(dt, s) { A : dt row; epilogue { input scale : dt []; D = acc * s; } }\n"
      "kernel k = t(bf16, 3) { C : f16 row; }\n");
  const RawKernel& k = r->result.kernels.at(0);
  REQUIRE(k.epilogue);
  CHECK(k.epilogue->items.at(0).dtype.asString() == "bf16");
  const EpiExpr& d = *k.epilogue->items.at(1).expr;
  CHECK(d.args.at(1).kind == EpiExpr::Kind::Const);
  CHECK(d.args.at(1).constant.asInt() == 3);
}

TEST_CASE("operands of the final kernel stay symbolic in a template's epilogue", "[eval][epilogue]") {
  auto r = evaluateOk(
      "let C = 5;\n"
      "template t() { epilogue { D = acc + C; } }\n"
      "kernel with_c = t() { C : f16 row; }\n"
      "kernel without_c = t();\n");
  REQUIRE(r->result.kernels.size() == 2);
  CHECK(r->result.kernels[0].epilogue->items.at(0).expr->args.at(1).kind == EpiExpr::Kind::Name);
  CHECK(r->result.kernels[1].epilogue->items.at(0).expr->args.at(1).kind == EpiExpr::Kind::Const);
}

TEST_CASE("epilogue expressions that cannot be symbolic", "[eval][epilogue]") {
  auto r = evaluate("kernel k { epilogue { D = (acc, 1)[0]; } }");
  CHECK(errorOf(*r, DiagKind::TypeMismatch).message ==
        "an epilogue value cannot be indexed or put in a tuple, list or string; only script values can");
  CHECK(cleanKernels(r) == 0);
  r = evaluate("let fs = [1];\nkernel k { epilogue { D = fs[0](acc); } }");
  CHECK(errorOf(*r, DiagKind::NotCallable).message == "an epilogue can only call a function by its name");
  auto ok = evaluateOk("let s = (2, 3);\nkernel k { epilogue { D = acc * s[1]; } }");
  CHECK(ok->result.kernels.at(0).epilogue->items.at(0).expr->args.at(1).constant.asInt() == 3);
}

// ---- imports -------------------------------------------------------------------------------------

TEST_CASE("imports bind the imported file's names and produce its kernels once", "[eval][import]") {
  TempDir dir;
  dir.write("lib/common.kdl", "let tiles = [1, 2];\nfn twice(x) = 2 * x;\nkernel from_common {}\n");
  dir.write("lib/a.kdl", "import \"common.kdl\";\nlet a = twice(1);\n");
  dir.write("lib/b.kdl", "import \"./common.kdl\";\nlet b = twice(2);\n");
  std::string main = dir.write("main.kdl",
                               "import \"lib/a.kdl\";\nimport \"lib/b.kdl\";\n"
                               "kernel k { v = a + b + len(tiles); }\n");
  Run r;
  r.result = evaluateFile(r.sm, main, r.diags);
  INFO(r.messages());
  CHECK(r.diags.errorCount() == 0);
  REQUIRE(r.result.kernels.size() == 2);
  CHECK(r.result.kernels[0].name == "from_common");
  CHECK(field(r.result.kernels[1], "v")->value.asInt() == 8);
  CHECK(r.sm.fileCount() == 4);
  CHECK(r.sm.path(3) == (dir.root / "lib/common.kdl").lexically_normal().generic_string());
}

TEST_CASE("imported paths are spelt relative to how the root file was named", "[eval][import]") {
  TempDir dir;
  dir.write("x/common/h.kdl", "let v = 1;\n");
  dir.write("x/root.kdl", "import \"common/h.kdl\";\n");
  std::error_code ec;
  auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.root);
  Run r;
  r.result = evaluateFile(r.sm, "x/root.kdl", r.diags);
  std::filesystem::current_path(cwd);
  CHECK(r.diags.errorCount() == 0);
  CHECK(r.sm.path(2) == "x/common/h.kdl");
}

TEST_CASE("an import cycle names the whole cycle", "[eval][import]") {
  TempDir dir;
  dir.write("a.kdl", "import \"b.kdl\";\nlet a = 1;\n");
  dir.write("b.kdl", "let b = 1;\nimport \"a.kdl\";\nlet c = a;\n");
  Run r;
  r.result = evaluateFile(r.sm, (dir.root / "a.kdl").string(), r.diags);
  INFO(r.messages());
  const Diagnostic& d = errorOf(r, DiagKind::ImportCycle);
  std::string a = (dir.root / "a.kdl").string(), b = (dir.root / "b.kdl").generic_string();
  CHECK(d.message == "import cycle: " + a + " -> " + b + " -> " + a);
  CHECK(d.loc.line == 2);
}

TEST_CASE("a missing import is reported at its path, once", "[eval][import]") {
  TempDir dir;
  std::string main = dir.write("main.kdl", "import \"nope.kdl\";\nlet x = from_nope + 1;\n");
  Run r;
  r.result = evaluateFile(r.sm, main, r.diags);
  const Diagnostic& d = errorOf(r, DiagKind::ImportNotFound);
  CHECK(d.message.find("cannot import `nope.kdl`") == 0);
  CHECK(d.message.find("no such file") != std::string::npos);
  CHECK(r.text(d.loc) == "\"nope.kdl\"");
}

TEST_CASE("an import larger than the file cap is an io error at its path", "[eval][import]") {
  TempDir dir;
  dir.write("big.kdl", "let x = 1; // " + std::string(200, 'x') + "\n");
  std::string main = dir.write("main.kdl", "import \"big.kdl\";\n");
  EvalLimits small;
  small.maxFileBytes = 100;
  Run r;
  r.result = evaluateFile(r.sm, main, r.diags, small);
  const Diagnostic& d = errorOf(r, DiagKind::Io);
  CHECK(d.message.find("larger than 100 bytes, the cap") != std::string::npos);
  CHECK(r.text(d.loc) == "\"big.kdl\"");
}

TEST_CASE("an import inside a loop binds in each iteration and evaluates once", "[eval][import]") {
  TempDir dir;
  dir.write("lib.kdl", "let step = 10;\nkernel once {}\n");
  std::string main = dir.write("main.kdl", "for i in [1, 2] {\n  import \"lib.kdl\";\n  kernel \"k${i * step}\" {}\n}\n");
  Run r;
  r.result = evaluateFile(r.sm, main, r.diags);
  INFO(r.messages());
  CHECK(r.diags.errorCount() == 0);
  REQUIRE(r.result.kernels.size() == 3);
  CHECK(r.result.kernels[0].name == "once");
  CHECK(r.result.kernels[2].name == "k20");
}

TEST_CASE("an import with syntax errors is not evaluated", "[eval][import]") {
  TempDir dir;
  dir.write("bad.kdl", "let = ;\nkernel never {}\n");
  std::string main = dir.write("main.kdl", "import \"bad.kdl\";\nlet x = y;\nkernel k {}\n");
  Run r;
  r.result = evaluateFile(r.sm, main, r.diags);
  CHECK(r.count(DiagKind::Syntax) >= 1);
  CHECK(r.count(DiagKind::UndefinedName) == 0);
  REQUIRE(r.result.kernels.size() == 1);
  CHECK(r.result.kernels[0].name == "k");
}

TEST_CASE("an imported name clashing with the importer's is a redefinition", "[eval][import]") {
  TempDir dir;
  dir.write("lib.kdl", "let x = 1;\n");
  std::string main = dir.write("main.kdl", "let x = 2;\nimport \"lib.kdl\";\n");
  Run r;
  r.result = evaluateFile(r.sm, main, r.diags);
  const Diagnostic& d = errorOf(r, DiagKind::Redefinition);
  CHECK(d.message.find("which is already defined in this scope") != std::string::npos);
  CHECK(d.notes.size() == 2);
  std::string main2 = dir.write("main2.kdl", "import \"lib.kdl\";\nlet x = 2;\n");
  Run r2;
  r2.result = evaluateFile(r2.sm, main2, r2.diags);
  CHECK(errorOf(r2, DiagKind::Redefinition).notes.at(0).loc.file == 2);
}

TEST_CASE("a root file that cannot be read is an io error without a location", "[eval][import]") {
  Run r;
  r.result = evaluateFile(r.sm, "/nonexistent/dir/x.kdl", r.diags);
  const Diagnostic& d = errorOf(r, DiagKind::Io);
  CHECK(d.message == "cannot read `/nonexistent/dir/x.kdl`: no such file");
  CHECK_FALSE(d.loc.valid());
  EvalLimits small;
  small.maxFileBytes = 10;
  Run big;
  big.result = evaluateSource(big.sm, "big.kdl", "let x = 12345678901234567890;", big.diags, small);
  CHECK(big.count(DiagKind::Io) == 1);
}

// ---- speed ---------------------------------------------------------------------------------------

TEST_CASE("ten thousand kernels from a template in a triple loop", "[eval][speed]") {
  std::string script =
      "template g(dt, tile, c) {\n"
      "  op = gemm; arch = sm90a; A : dt row; B : dt col; D : bf16 row; accum = f32;\n"
      "  tile = tile; cluster = (c, 1, 1); stages = auto; schedule = tile[0] >= 128 ? cooperative : pingpong;\n"
      "  epilogue { param alpha = 1.0; input bias : f32 [col]; D = relu(alpha * acc + bias); }\n"
      "}\n"
      "for m in range(25) { for n in range(20) { for c in range(20) {\n"
      "  kernel \"k_${m}_${n}_${c}\" = g(bf16, (64 * (m + 1), 8 * (n + 1), 64), c + 1) { stages = 3; }\n"
      "} } }\n";
  auto start = std::chrono::steady_clock::now();
  auto r = evaluate(script);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(r->messages());
  CHECK(r->diags.errorCount() == 0);
  CHECK(r->result.kernels.size() == 10000);
  WARN("evaluated 10000 kernels in " << seconds << " s (" << 10000 / seconds << " kernels/s)");
}

// ---- robustness ----------------------------------------------------------------------------------

TEST_CASE("deep nesting and odd inputs give their value or their error", "[eval][robust]") {
  std::string deep = "let x = " + std::string(150, '(') + "1" + std::string(150, ')') + ";\nassert x == 1;";
  CHECK(evaluate(deep)->diags.errorCount() == 0);
  std::string deepList = "let x = " + std::string(150, '[') + "1" + std::string(150, ']') + ";\nassert len(x) == 1;";
  CHECK(evaluate(deepList)->diags.errorCount() == 0);
  // Self-application recurses until the depth cap: one error at the call, not a crash.
  auto r = evaluate("fn f(x) = x(x);\nlet y = f(f);");
  CHECK(errorOf(*r, DiagKind::RecursionLimit).loc.line == 1);
  // A template or a built-in function used as a value is a value, not a crash; adding one to a
  // number is a type mismatch at the `+`.
  r = evaluate("template t(a) { x = t; }\nkernel k = t(t);");
  INFO(r->messages());
  CHECK(r->diags.errorCount() == 0);
  REQUIRE(r->result.kernels.size() == 1);
  CHECK(r->result.kernels[0].fields.at(0).name == "x");
  r = evaluate("let f = len;\nlet y = f([1]) + f;");
  CHECK(r->text(errorOf(*r, DiagKind::TypeMismatch).loc) == "+");
  r = evaluate("kernel k { v = len; w = range; }");
  INFO(r->messages());
  CHECK(r->diags.errorCount() == 0);
  REQUIRE(r->result.kernels.size() == 1);
  CHECK(r->result.kernels[0].fields.size() == 2);
}

// A chain of one precedence level is evaluated with a loop: 300 terms need no --max-depth, 100000
// terms do not overflow the stack; short-circuiting and error locations are as for nested operators.
TEST_CASE("long chains of binary operators evaluate without nesting", "[eval][robust]") {
  for (size_t terms : {size_t(300), size_t(100000)}) {
    // (The string chain stays short: each `+` copies the string so far, quadratic in its length.)
    const size_t textTerms = std::min<size_t>(terms, 1000);
    std::string sum = "1", all = "true", text = "\"a\"";
    for (size_t i = 1; i < terms; ++i) sum += " + 1", all += " && true";
    for (size_t i = 1; i < textTerms; ++i) text += " + \"a\"";
    EvalLimits limits;
    limits.maxCallDepth = 64;
    auto r = evaluate(fmt::format("let x = {};\nassert x == {};\nlet b = {};\nassert b;\nlet s = {};\n"
                                  "assert len(s) == {};",
                                  sum, terms, all, text, textTerms),
                      limits);
    INFO(terms << " terms\n" << r->messages());
    CHECK(r->diags.errorCount() == 0);
  }
  CHECK(valueOf("10 - 2 - 3 * 2 - 1").asInt() == 1);
  CHECK(valueOf("false && 1 / 0 == 0 && true").asBool() == false);  // never divides
  CHECK(valueOf("true || x_undefined || false").asBool() == true);
  auto r = evaluate("let x = 1 + 2 + \"a\" + 3;");
  CHECK(r->text(errorOf(*r, DiagKind::TypeMismatch).loc) == "+");
  CHECK(errorOf(*r, DiagKind::TypeMismatch).loc.col == 15);
  r = evaluate("let x = 9223372036854775807 - 1 + 1 + 1;");
  CHECK(r->text(errorOf(*r, DiagKind::NumberRange).loc) == "9223372036854775807 - 1 + 1 + 1");
}
