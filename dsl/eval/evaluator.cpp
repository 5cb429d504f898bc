// The evaluator: statements, scopes and imports. Expressions are in eval_expr.cpp, kernel bodies,
// templates and epilogues in eval_kernel.cpp.
//
// Semantics (the choices the language sketch leaves open):
// - Scopes. Built-in words (dtypes, layouts, archs, ops, schedules, rasters, stream_k) and built-in
//   functions live in an outermost scope. Each file has its own top-level scope; `for` iterations,
//   `if`/`else` branches, kernel and template bodies and calls open a nested one. `let`, `fn`,
//   `template`, parameters and loop variables bind names. Binding a name twice in one scope is
//   [redefinition] (a note points at the first); shadowing a name of an enclosing scope is allowed;
//   binding a built-in name (`let bf16 = 2;`, `fn max(a) = a;`) is [redefinition] everywhere, so a
//   built-in word always means itself. A loop variable and the lets of the loop body share a scope.
// - Functions close over their defining scope and see names bound there later too (so recursion and
//   mutual recursion work). A call's depth counts against maxCallDepth.
// - Template parameters bind positionally, then by name (`tile = t`); a default is evaluated at each
//   instantiation in the template's defining scope, where the earlier parameters are visible.
// - Values are never mutated. Errors make a value None, which silently poisons every operation on it
//   (one error, no cascade); a kernel statement that saw an error or a None value produces no kernel.
// - Integers are 64-bit; overflow is [number-range]. `/` on two ints truncates toward zero, `%` is C's
//   remainder (sign of the dividend); division or remainder by zero is [div-by-zero], for floats too.
//   `+` also concatenates strings, lists with lists and tuples with tuples. `< <= > >=` compare
//   numbers or strings; `==` and `!=` compare any two values structurally (1 == 1.0).
// - Indexing takes an int from 0 to length - 1 (no negative indices); strings index to one-byte
//   strings. `for` iterates over lists and tuples only.
// - `assert cond, msg` reports [assert-failed] at the condition; the message may be any value.
// - Imports resolve against the importing file's directory; a file is parsed and evaluated once per
//   run (keyed by its canonical path) and its kernels are produced once, where it is first imported.
//   Its top-level names (including those it imported itself) are bound in the importing scope; the
//   same binding arriving twice (a diamond) is fine, two different ones clash. A file with syntax
//   errors is not evaluated; names that the importer then misses are not reported again.
// - Kernels. `kernel NAME` takes NAME literally; `kernel "..."` or `kernel (expr)` needs a string. A
//   field or operand set twice in one body, or a second epilogue, is [duplicate-field]. For
//   `kernel K = t(args) { overrides }` the template body runs in a scope of its parameters (its fields
//   marked fromTemplate), then the override body in the kernel statement's own scope (it does not see
//   the parameters); an override field or operand replaces the template's where it stood, a new one
//   goes last, and an override epilogue replaces the template's whole epilogue. Kernel names are not
//   checked here (validation does).
// - Epilogue expressions are kept symbolic: `acc`, operand names and names the epilogue declares stay
//   names; other names bound in the script become constants; a call of an epilogue function stays a
//   call; a call of a script function on constants only, and indexing, tuples and lists of
//   constants, are evaluated to a constant. The symbolic names are those of the final kernel
//   (template plus overrides); an epilogue's dtypes, layouts and param defaults are script values.
// - Limits stop the whole run at the first one hit: [recursion-limit] (maxCallDepth, counting calls,
//   imports, blocks and expression nesting), [eval-limit] (maxSteps counting loop iterations, calls,
//   4 per list or tuple element built and 1 per 4 string bytes built, which also bounds the memory a
//   script can hold; maxSequence; maxString), [kernel-limit] (maxKernels). A depth cap too large
//   for the thread's stack still ends in [recursion-limit] as the stack nears its end, never a crash.
//   Once the error cap of the DiagEngine is passed, evaluation stops too.
#include "dsl/eval/evaluator.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <pthread.h>

#include <fmt/format.h>

#include "dsl/eval/eval_internal.h"
#include "dsl/parse/parser.h"
#include "dsl/words.h"

namespace kdl {
namespace eval {

namespace fs = std::filesystem;

void Env::bind(std::string_view name, Value value, SourceLoc loc) {
  bindings_.push_back(Binding{name, std::move(value), loc});
  if (bindings_.size() == kIndexFrom) {
    for (size_t i = 0; i < bindings_.size(); ++i) index_[bindings_[i].name] = i;
  } else if (bindings_.size() > kIndexFrom) {
    index_[name] = bindings_.size() - 1;
  }
}

const Binding* Env::findLocal(std::string_view name) const {
  if (!index_.empty()) {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &bindings_[it->second];
  }
  for (auto it = bindings_.rbegin(); it != bindings_.rend(); ++it)
    if (it->name == name) return &*it;
  return nullptr;
}

const Binding* Env::find(std::string_view name) const {
  for (const Env* e = this; e; e = e->parent_.get())
    if (const Binding* b = e->findLocal(name)) return b;
  return nullptr;
}

// ---- statements ----------------------------------------------------------------------------------

void Evaluator::execBlock(const std::vector<ast::StmtPtr>& stmts, const EnvPtr& env) {
  Depth depth(*this, stmts.empty() ? SourceLoc{} : stmts.front()->loc);
  if (!depth.ok()) return;
  for (const ast::StmtPtr& s : stmts) {
    if (stopped()) return;
    if (s) exec(*s, env);
  }
}

void Evaluator::exec(const ast::Stmt& s, const EnvPtr& env) {
  switch (s.kind) {
    case ast::StmtKind::Let: execLet(s, env); break;
    case ast::StmtKind::Fn:
    case ast::StmtKind::Template:
      checkDistinctParams(s);
      define(*env, s.name, s.nameLoc, makeClosure(s, env));
      break;
    case ast::StmtKind::Kernel: execKernel(s, env); break;
    case ast::StmtKind::For: execFor(s, env); break;
    case ast::StmtKind::If: execIf(s, env); break;
    case ast::StmtKind::Assert: execAssert(s, *env); break;
    case ast::StmtKind::Import: execImport(s, env); break;
  }
}

void Evaluator::execLet(const ast::Stmt& s, const EnvPtr& env) {
  Value v = s.value ? eval(*s.value, *env) : Value();
  define(*env, s.name, s.nameLoc, std::move(v));
}

// The closure holds its scope weakly: the scope holds the function, and a strong pointer back would
// be a cycle that is never freed. A function can only be called while its scope is alive (it can
// reach no enclosing scope, only kernels), so the weak pointer always resolves when called.
Value Evaluator::makeClosure(const ast::Stmt& s, const EnvPtr& env) {
  auto closure = std::make_shared<const std::weak_ptr<Env>>(env);
  return s.kind == ast::StmtKind::Fn ? Value::function(&s, std::move(closure))
                                     : Value::templ(&s, std::move(closure));
}

bool Evaluator::checkDistinctParams(const ast::Stmt& s) {
  bool ok = true;
  for (size_t i = 0; i < s.params.size(); ++i) {
    ok = checkNotBuiltin(s.params[i].name, s.params[i].loc) && ok;
    for (size_t j = 0; j < i; ++j) {
      if (s.params[j].name != s.params[i].name) continue;
      diags_.error(DiagKind::Redefinition, s.params[i].loc,
                   fmt::format("parameter `{}` appears twice in `{}`", s.params[i].name, s.name))
          .notes.push_back({s.params[j].loc, "first here"});
      ok = false;
      break;
    }
  }
  return ok;
}

bool Evaluator::checkNotBuiltin(std::string_view name, SourceLoc loc) {
  const Value* builtin = lookupBuiltin(name);
  if (!builtin) return true;
  diags_.error(DiagKind::Redefinition, loc,
               fmt::format("cannot redefine `{}`: it is {}; choose another name", name,
                           describeBuiltin(name, *builtin)));
  return false;
}

void Evaluator::define(Env& env, std::string_view name, SourceLoc loc, Value v) {
  if (const Binding* first = env.findLocal(name)) {
    diags_.error(DiagKind::Redefinition, loc, fmt::format("`{}` is already defined in this scope", name))
        .notes.push_back({first->loc, fmt::format("`{}` is first defined here", name)});
    return;
  }
  // A built-in name is still bound after the error, so later uses see the user's value and do not
  // report follow-on type errors.
  checkNotBuiltin(name, loc);
  env.bind(name, std::move(v), loc);
}

void Evaluator::execFor(const ast::Stmt& s, const EnvPtr& env) {
  if (!s.value) return;
  Value seq = eval(*s.value, *env);
  if (seq.isNone()) return;
  if (!seq.isSequence()) {
    reportTypeMismatch(s.value->loc,
                       fmt::format("`for` iterates over a list or tuple, not `{}`", seq.typeName()));
    return;
  }
  checkNotBuiltin(s.name, s.nameLoc);
  for (const Value& item : seq.items()) {
    if (stopped() || !step(s.loc)) return;
    auto scope = std::make_shared<Env>(env);
    scope->bind(s.name, item, s.nameLoc);
    execBlock(s.body, scope);
  }
}

void Evaluator::execIf(const ast::Stmt& s, const EnvPtr& env) {
  if (!s.value) return;
  Value cond = eval(*s.value, *env);
  if (cond.isNone()) return;
  if (!cond.isBool()) {
    reportTypeMismatch(s.value->loc,
                       fmt::format("the condition of `if` must be a `bool`, not `{}`", cond.typeName()));
    return;
  }
  const std::vector<ast::StmtPtr>& branch = cond.asBool() ? s.body : s.elseBody;
  if (!branch.empty()) execBlock(branch, std::make_shared<Env>(env));
}

void Evaluator::execAssert(const ast::Stmt& s, const Env& env) {
  if (!s.value) return;
  Value cond = eval(*s.value, env);
  if (cond.isNone()) return;
  if (!cond.isBool()) {
    reportTypeMismatch(s.value->loc,
                       fmt::format("the condition of `assert` must be a `bool`, not `{}`", cond.typeName()));
    return;
  }
  if (cond.asBool()) return;
  std::string text = "assertion failed";
  if (s.message) {
    Value msg = eval(*s.message, env);
    if (msg.isNone()) return;
    text += ": ";
    msg.interpolateInto(text, limits_.maxString);
  }
  diags_.error(DiagKind::AssertFailed, s.value->loc, std::move(text));
}

// ---- limits --------------------------------------------------------------------------------------

Evaluator::Depth::Depth(Evaluator& ev, SourceLoc loc, bool isCall) : ev_(ev), isCall_(isCall) {
  ++ev_.depth_;
  if (isCall_) ev_.callSites_.push_back(loc);
  bool stackFull = ev_.stackLimit_ && static_cast<const char*>(__builtin_frame_address(0)) < ev_.stackLimit_;
  ok_ = ev_.depth_ <= ev_.limits_.maxCallDepth && !stackFull;
  if (!ok_) ev_.reportTooDeep(loc, stackFull);
}

void Evaluator::reportTooDeep(SourceLoc loc, bool stackFull) {
  if (stopped_) return;
  int cap = limits_.maxCallDepth;
  std::string message =
      stackFull ? fmt::format("calls and nesting go {} levels deep, more than the stack holds; the cap is {} "
                              "(--max-depth), lower it",
                              depth_, cap)
                : fmt::format("calls and nesting go deeper than {} levels; the cap is {} (--max-depth)", cap, cap);
  // A runaway recursion is clearest at its innermost call, with the call that started it.
  Diagnostic& d = diags_.error(DiagKind::RecursionLimit, callSites_.empty() ? loc : callSites_.back(), message);
  if (callSites_.size() > 1 && callSites_.front() != callSites_.back())
    d.notes.push_back({callSites_.front(), "reached from this call"});
  stop();
}

bool Evaluator::step(SourceLoc loc, size_t n) {
  steps_ += n;
  if (steps_ <= limits_.maxSteps) return true;
  if (!stopped_) {
    diags_.error(DiagKind::EvalLimit, loc,
                 fmt::format("the script runs more than {} steps (loop iterations, calls and values "
                             "built); the cap is {}",
                             limits_.maxSteps, limits_.maxSteps));
    stop();
  }
  return false;
}

bool Evaluator::stringFits(size_t bytes, SourceLoc loc) {
  if (bytes > limits_.maxString) {
    diags_.error(DiagKind::EvalLimit, loc,
                 fmt::format("a string longer than {} bytes; the cap is {}", limits_.maxString,
                             limits_.maxString));
    stop();
    return false;
  }
  return step(loc, bytes / 4);
}

bool Evaluator::sequenceFits(size_t elements, SourceLoc loc) {
  if (elements > limits_.maxSequence) {
    diags_.error(DiagKind::EvalLimit, loc,
                 fmt::format("a sequence of {} elements; the cap is {}", elements,
                             limits_.maxSequence));
    stop();
    return false;
  }
  return step(loc, elements * 4);
}

// ---- files and imports ---------------------------------------------------------------------------

namespace {

enum class ReadStatus { Ok, Missing, NotAFile, TooLarge, Unreadable };

ReadStatus readFile(const std::string& path, size_t maxBytes, std::string& out) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return ReadStatus::Missing;
  if (!fs::is_regular_file(st)) return ReadStatus::NotAFile;
  uintmax_t size = fs::file_size(path, ec);
  if (ec) return ReadStatus::Unreadable;
  if (size > maxBytes) return ReadStatus::TooLarge;
  std::ifstream in(path, std::ios::binary);
  if (!in) return ReadStatus::Unreadable;
  out.resize(static_cast<size_t>(size));
  in.read(out.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size)) return ReadStatus::Unreadable;
  return ReadStatus::Ok;
}

std::string readProblem(ReadStatus st, size_t maxBytes) {
  switch (st) {
    case ReadStatus::Ok: return "";
    case ReadStatus::Missing: return "no such file";
    case ReadStatus::NotAFile: return "not a regular file";
    case ReadStatus::TooLarge: return fmt::format("larger than {} bytes, the cap", maxBytes);
    case ReadStatus::Unreadable: return "it cannot be read";
  }
  return "";
}

// One key per file however it is named, so that a file reached along two paths is evaluated once.
std::string canonicalKey(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::path(path), ec);
  return ec ? fs::path(path).lexically_normal().generic_string() : p.generic_string();
}

// `imported` relative to the directory of `importer`, spelt the way the user named the root file.
std::string resolveImport(const std::string& importer, const std::string& imported) {
  fs::path target(imported);
  if (target.is_absolute()) return target.lexically_normal().generic_string();
  return (fs::path(importer).parent_path() / target).lexically_normal().generic_string();
}

// The lowest address the evaluator lets its stack reach: the thread's stack bottom plus a margin for
// the work done between depth checks (parsing an import, printing a value).
const char* stackLimit() {
#if defined(__GLIBC__)
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return nullptr;
  void* bottom = nullptr;
  size_t size = 0;
  int rc = pthread_attr_getstack(&attr, &bottom, &size);
  pthread_attr_destroy(&attr);
  if (rc != 0 || !bottom) return nullptr;
  return static_cast<const char*>(bottom) + std::min<size_t>(size / 2, 2u << 20);
#else
  return nullptr;
#endif
}

}  // namespace

FileUnit* Evaluator::loadUnit(const std::string& key, const std::string& display, std::string text) {
  auto unit = std::make_unique<FileUnit>();
  unit->display = display;
  unit->fileId = sm_.add(display, std::move(text));
  size_t errorsBefore = diags_.errorCount();
  unit->tree = parseFile(sm_, unit->fileId, diags_, limits_.maxCallDepth);
  unit->ok = unit->tree && diags_.errorCount() == errorsBefore;
  FileUnit* raw = unit.get();
  units_.push_back(std::move(unit));
  unitsByKey_[key] = raw;
  return raw;
}

void Evaluator::evaluateUnit(FileUnit& unit) {
  unit.env = std::make_shared<Env>(nullptr);
  if (!unit.ok) return;
  unit.inProgress = true;
  importStack_.push_back(&unit);
  execBlock(unit.tree->stmts, unit.env);
  importStack_.pop_back();
  unit.inProgress = false;
}

void Evaluator::execImport(const ast::Stmt& s, const EnvPtr& env) {
  Depth depth(*this, s.loc);
  if (!depth.ok()) return;
  std::string display = resolveImport(sm_.path(s.loc.file), s.path);
  std::string key = canonicalKey(display);
  auto found = unitsByKey_.find(key);
  FileUnit* unit = found == unitsByKey_.end() ? nullptr : found->second;
  if (unit && unit->inProgress) {
    std::string cycle;
    auto first = std::find(importStack_.begin(), importStack_.end(), unit);
    for (auto it = first; it != importStack_.end(); ++it) cycle += (*it)->display + " -> ";
    diags_.error(DiagKind::ImportCycle, s.loc, fmt::format("import cycle: {}{}", cycle, unit->display));
    filesWithFailedImports_.insert(s.loc.file);
    return;
  }
  if (!unit) {
    std::string text;
    ReadStatus st = readFile(display, limits_.maxFileBytes, text);
    if (st != ReadStatus::Ok) {
      DiagKind kind = st == ReadStatus::TooLarge ? DiagKind::Io : DiagKind::ImportNotFound;
      diags_.error(kind, s.pathLoc,
                   fmt::format("cannot import `{}` (`{}`): {}", s.path, display, readProblem(st, limits_.maxFileBytes)));
      filesWithFailedImports_.insert(s.loc.file);
      return;
    }
    unit = loadUnit(key, display, std::move(text));
    evaluateUnit(*unit);
  }
  if (!unit->ok) {
    filesWithFailedImports_.insert(s.loc.file);
    return;
  }
  bindImported(*unit, s, *env);
}

void Evaluator::bindImported(const FileUnit& unit, const ast::Stmt& s, Env& into) {
  for (const Binding& b : unit.env->bindings()) {
    if (const Binding* mine = into.findLocal(b.name)) {
      if (mine->loc == b.loc) continue;  // the same definition, reached through two imports
      Diagnostic& d = diags_.error(
          DiagKind::Redefinition, s.pathLoc,
          fmt::format("`{}` imports `{}`, which is already defined in this scope", unit.display, b.name));
      d.notes.push_back({mine->loc, fmt::format("`{}` is defined here", b.name)});
      d.notes.push_back({b.loc, fmt::format("and `{}` defines it here", unit.display)});
      continue;
    }
    into.bind(b.name, b.value, b.loc);
  }
}

EvalResult Evaluator::run(const std::string& path, std::optional<std::string> text) {
  if (!text) {
    std::string contents;
    ReadStatus st = readFile(path, limits_.maxFileBytes, contents);
    if (st != ReadStatus::Ok) {
      diags_.error(DiagKind::Io, SourceLoc{},
                   fmt::format("cannot read `{}`: {}", path, readProblem(st, limits_.maxFileBytes)));
      return {};
    }
    text = std::move(contents);
  }
  if (text->size() > limits_.maxFileBytes) {
    diags_.error(DiagKind::Io, SourceLoc{},
                 fmt::format("cannot read `{}`: {}", path, readProblem(ReadStatus::TooLarge, limits_.maxFileBytes)));
    return {};
  }
  stackLimit_ = stackLimit();
  FileUnit* root = loadUnit(canonicalKey(path), path, std::move(*text));
  evaluateUnit(*root);
  return std::move(result_);
}

}  // namespace eval

EvalResult evaluateFile(SourceManager& sm, const std::string& path, DiagEngine& diags,
                        const EvalLimits& limits) {
  try {
    return eval::Evaluator(sm, diags, limits).run(path, std::nullopt);
  } catch (const std::exception& e) {
    // Only std::bad_alloc and the like can get here; report it instead of crashing the driver.
    diags.error(DiagKind::EvalLimit, SourceLoc{}, fmt::format("evaluation stopped: {}", e.what()));
    return {};
  }
}

EvalResult evaluateSource(SourceManager& sm, const std::string& path, std::string text, DiagEngine& diags,
                          const EvalLimits& limits) {
  try {
    return eval::Evaluator(sm, diags, limits).run(path, std::move(text));
  } catch (const std::exception& e) {
    diags.error(DiagKind::EvalLimit, SourceLoc{}, fmt::format("evaluation stopped: {}", e.what()));
    return {};
  }
}

}  // namespace kdl
