// The evaluator's private parts, shared by dsl/eval/evaluator.cpp (statements, imports), dsl/eval/eval_expr.cpp
// (expressions, built-in functions) and dsl/eval/eval_kernel.cpp (kernel bodies, templates, epilogues).
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dsl/ast.h"
#include "dsl/diagnostics.h"
#include "dsl/eval/evaluator.h"
#include "dsl/eval/raw_kernel.h"
#include "dsl/source.h"
#include "dsl/eval/value.h"

namespace kdl::eval {

// One name bound in a scope. `name` points into the syntax tree, which outlives every scope of a run.
struct Binding {
  std::string_view name;
  Value value;
  SourceLoc loc;
};

// A scope: its bindings and the enclosing scope. Most scopes hold a handful of names, where a vector
// searched from the back beats a hash map; a scope that grows large (a file of thousands of lets)
// gets a hash index so lookups stay constant-time.
class Env {
 public:
  explicit Env(std::shared_ptr<Env> parent) : parent_(std::move(parent)) {}
  const Binding* findLocal(std::string_view name) const;
  const Binding* find(std::string_view name) const;
  void bind(std::string_view name, Value value, SourceLoc loc);
  const std::vector<Binding>& bindings() const { return bindings_; }
  const Env* parent() const { return parent_.get(); }

 private:
  std::shared_ptr<Env> parent_;
  std::vector<Binding> bindings_;
  std::unordered_map<std::string_view, size_t> index_;  // name -> last binding; only for large scopes
  static constexpr size_t kIndexFrom = 32;
};
using EnvPtr = std::shared_ptr<Env>;

// A built-in word or function by name (the outermost scope), or nullptr.
const Value* lookupBuiltin(std::string_view name);
// "a built-in dtype", "a built-in function", ... for a name lookupBuiltin knows.
std::string describeBuiltin(std::string_view name, const Value& v);

// A kernel body (the template's or the kernel's own) after evaluation, before merging.
struct BodyResult {
  std::vector<RawField> fields;
  std::vector<RawOperand> operands;
  const ast::EpilogueBlock* epilogue = nullptr;
  EnvPtr epilogueEnv;  // the scope the epilogue's script names resolve in
  bool failed = false;  // some value is an error (None)
};

// While an epilogue is converted: the scope its script names resolve in, and the names that stay
// symbolic (acc, the kernel's operands, what the epilogue declares).
struct EpiScope {
  const Env& env;
  std::vector<std::string_view> symbols;
  bool failed = false;
  bool isSymbol(std::string_view name) const {
    for (std::string_view s : symbols)
      if (s == name) return true;
    return false;
  }
};

// One source file of the run: parsed once, evaluated once.
struct FileUnit {
  std::string display;  // the path as the user would name it (used in messages)
  uint32_t fileId = 0;
  std::unique_ptr<ast::File> tree;
  EnvPtr env;  // its top-level scope, once evaluated
  bool inProgress = false;
  bool ok = false;
};

class Evaluator {
 public:
  Evaluator(SourceManager& sm, DiagEngine& diags, const EvalLimits& limits)
      : sm_(sm), diags_(diags), limits_(limits) {}
  EvalResult run(const std::string& path, std::optional<std::string> text);

 private:
  // ---- statements (evaluator.cpp)
  void execBlock(const std::vector<ast::StmtPtr>& stmts, const EnvPtr& env);
  void exec(const ast::Stmt& s, const EnvPtr& env);
  void execLet(const ast::Stmt& s, const EnvPtr& env);
  void execFor(const ast::Stmt& s, const EnvPtr& env);
  void execIf(const ast::Stmt& s, const EnvPtr& env);
  void execAssert(const ast::Stmt& s, const Env& env);
  void execImport(const ast::Stmt& s, const EnvPtr& env);
  // Binds a user name in `env`, reporting a clash with a built-in or a name of the same scope.
  void define(Env& env, std::string_view name, SourceLoc loc, Value v);
  bool checkNotBuiltin(std::string_view name, SourceLoc loc);
  bool checkDistinctParams(const ast::Stmt& s);
  Value makeClosure(const ast::Stmt& s, const EnvPtr& env);

  // ---- files and imports (evaluator.cpp)
  FileUnit* loadUnit(const std::string& key, const std::string& display, std::string text);
  void evaluateUnit(FileUnit& unit);
  void bindImported(const FileUnit& unit, const ast::Stmt& s, Env& into);

  // ---- expressions (eval_expr.cpp)
  Value eval(const ast::Expr& e, const Env& env);
  Value evalName(const ast::Expr& e, const Env& env);
  Value evalString(const ast::Expr& e, const Env& env);
  Value evalSequence(const ast::Expr& e, const Env& env);
  Value evalIndex(const ast::Expr& e, const Env& env);
  Value evalCall(const ast::Expr& e, const Env& env);
  Value evalUnary(const ast::Expr& e, const Env& env);
  Value evalBinary(const ast::Expr& e, const Env& env);
  Value applyBinary(const ast::Expr& e, Value left, const Env& env);
  Value applyLogic(const ast::Expr& e, Value left, const Env& env);
  Value evalTernary(const ast::Expr& e, const Env& env);
  Value arithmetic(const ast::Expr& e, const Value& a, const Value& b);
  Value compare(const ast::Expr& e, const Value& a, const Value& b);
  Value concat(const ast::Expr& e, const Value& a, const Value& b);
  Value callFunction(const ast::Expr& call, const Value& fn, std::vector<Value>& args);
  Value callBuiltin(const ast::Expr& call, const std::string& name, std::vector<Value>& args);
  Value builtinRange(const ast::Expr& call, const std::vector<Value>& args);
  Value builtinMinMax(const ast::Expr& call, const std::string& name, const std::vector<Value>& args);
  Value builtinProduct(const ast::Expr& call, const std::vector<Value>& args);
  Value builtinDtypeSize(const ast::Expr& call, const std::string& name, const std::vector<Value>& args);
  Value builtinSplitK(const ast::Expr& call, const std::string& name, const std::vector<Value>& args);
  // Looks a name up in `env` and the built-in scope; nullptr when nothing binds it.
  const Value* lookup(std::string_view name, const Env& env) const;
  void reportUndefined(std::string_view name, SourceLoc loc, const Env& env);
  void reportTypeMismatch(SourceLoc loc, std::string message);
  // The scope a callable closes over (reported when it is gone).
  std::shared_ptr<Env> closureEnv(const Value& callable, SourceLoc loc);

  // ---- kernels (eval_kernel.cpp)
  void execKernel(const ast::Stmt& s, const EnvPtr& env);
  bool kernelName(const ast::Stmt& s, const Env& env, RawKernel& k);
  bool instantiate(const ast::Stmt& s, const EnvPtr& env, RawKernel& k, BodyResult& out);
  bool bindTemplateArgs(const ast::Stmt& s, const Env& env, const ast::Stmt& decl, Env& params);
  void evalBody(const ast::KernelBody& body, const EnvPtr& env, bool fromTemplate, BodyResult& out);
  void evalOperand(const ast::OperandDecl& d, const Env& env, BodyResult& out);
  static void mergeOverrides(BodyResult& base, BodyResult&& overrides);
  std::optional<RawEpilogue> convertEpilogue(const ast::EpilogueBlock& block, const Env& env,
                                             const std::vector<RawOperand>& operands, bool& failed);
  Value epilogueValue(const ast::Expr& e, EpiScope& scope);
  EpiExpr convertEpiExpr(const ast::Expr& e, EpiScope& scope);
  EpiExpr convertEpiCall(const ast::Expr& e, EpiScope& scope);
  // True when `e` uses no symbolic epilogue name and calls no epilogue function: a script constant.
  bool isScriptConstant(const ast::Expr& e, const EpiScope& scope) const;

  // ---- limits
  // Counts `n` steps of work against maxSteps; false (after one report) once the cap is passed.
  bool step(SourceLoc loc, size_t n = 1);
  bool stringFits(size_t bytes, SourceLoc loc);
  bool sequenceFits(size_t elements, SourceLoc loc);
  // Stops the whole run: limits are hit by runaway scripts, where going on only repeats the error.
  void stop() { stopped_ = true; }
  bool stopped() const { return stopped_ || diags_.capped(); }

  // Scoped nesting counter: every statement block, expression and call goes one level deeper; a
  // call also records its call site, where a runaway recursion is reported.
  class Depth {
   public:
    Depth(Evaluator& ev, SourceLoc loc, bool isCall = false);
    ~Depth() {
      --ev_.depth_;
      if (isCall_) ev_.callSites_.pop_back();
    }
    bool ok() const { return ok_; }

   private:
    Evaluator& ev_;
    bool isCall_;
    bool ok_;
  };
  void reportTooDeep(SourceLoc loc, bool stackFull);

  SourceManager& sm_;
  DiagEngine& diags_;
  const EvalLimits& limits_;
  EvalResult result_;
  std::vector<std::unique_ptr<FileUnit>> units_;
  std::map<std::string, FileUnit*> unitsByKey_;
  std::vector<const FileUnit*> importStack_;
  std::set<uint32_t> filesWithFailedImports_;  // undefined names there are likely the import's
  size_t steps_ = 0;
  int depth_ = 0;
  std::vector<SourceLoc> callSites_;  // of the calls in progress, innermost last
  // Below this address the thread's stack is nearly full: a --max-depth set too high for the stack
  // becomes a [recursion-limit] instead of a crash. Null where the stack's bounds are unknown.
  const char* stackLimit_ = nullptr;
  bool stopped_ = false;
};

}  // namespace kdl::eval
