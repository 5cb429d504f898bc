// Diagnostics as data: an id from diagnostic_kinds.def, a severity, a message, a primary location
// and notes. The engine collects them; printers render text (file:line:col, source line, caret) or JSON.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "dsl/source.h"

namespace kdl {

enum class DiagKind {
#define KDL_DIAG(E, ID, DESC) E,
#include "dsl/diagnostic_kinds.def"
#undef KDL_DIAG
};

struct DiagKindInfo {
  DiagKind kind;
  const char* id;
  const char* description;
};
const std::vector<DiagKindInfo>& allDiagKinds();
const char* diagId(DiagKind k);

enum class Severity { Error, Warning, Note };

struct DiagNote {
  SourceLoc loc;
  std::string message;
};

struct Diagnostic {
  DiagKind kind;
  Severity severity = Severity::Error;
  SourceLoc loc;
  std::string message;
  std::vector<DiagNote> notes;
};

class DiagEngine {
 public:
  explicit DiagEngine(size_t errorCap = 50) : errorCap_(errorCap) {}
  // Reports an error; returns a reference so callers can attach notes.
  Diagnostic& error(DiagKind k, SourceLoc loc, std::string message);
  Diagnostic& warning(DiagKind k, SourceLoc loc, std::string message);
  size_t errorCount() const { return errorCount_; }
  bool hasErrors() const { return errorCount_ > 0; }
  // Diagnostics in source order (stable for equal locations).
  std::vector<Diagnostic> sorted() const;
  const std::vector<Diagnostic>& all() const { return diags_; }
  // The i-th kept diagnostic (i < all().size()), for a pass that adds notes afterwards.
  Diagnostic& at(size_t i) { return diags_[i]; }
  size_t errorCap() const { return errorCap_; }
  // True once more errors than the cap were reported (the rest are counted, not kept).
  bool capped() const { return errorCount_ > errorCap_; }

 private:
  std::vector<Diagnostic> diags_;
  Diagnostic overflow_;
  size_t errorCount_ = 0;
  size_t errorCap_;
};

// Renders diagnostics like a compiler: `path:line:col: error: message [id]`, the source line, a caret
// and underline, then the notes the same way. `color` adds ANSI colours.
std::string renderText(const SourceManager& sm, const DiagEngine& diags, bool color = false);
// The same as a JSON document: {"diagnostics":[{id,severity,message,file,line,column,length,notes:[...]}],
// "errors":N}
std::string renderJson(const SourceManager& sm, const DiagEngine& diags);
// The members of that document (`"diagnostics":[...],"errors":N`), for a command that folds them into
// a document of its own (`kdlc list --json`), so stdout holds exactly one JSON document.
std::string renderJsonMembers(const SourceManager& sm, const DiagEngine& diags);

// Escapes a string for a JSON string literal (without the quotes).
std::string jsonEscape(std::string_view s);

}  // namespace kdl
