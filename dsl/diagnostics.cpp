#include "dsl/diagnostics.h"

#include <algorithm>
#include <fmt/format.h>

namespace kdl {

const std::vector<DiagKindInfo>& allDiagKinds() {
  static const std::vector<DiagKindInfo> kinds = {
#define KDL_DIAG(E, ID, DESC) {DiagKind::E, ID, DESC},
#include "dsl/diagnostic_kinds.def"
#undef KDL_DIAG
  };
  return kinds;
}

const char* diagId(DiagKind k) { return allDiagKinds()[static_cast<size_t>(k)].id; }

Diagnostic& DiagEngine::error(DiagKind k, SourceLoc loc, std::string message) {
  ++errorCount_;
  if (errorCount_ > errorCap_) {
    overflow_ = Diagnostic{k, Severity::Error, loc, std::move(message), {}};
    return overflow_;
  }
  diags_.push_back(Diagnostic{k, Severity::Error, loc, std::move(message), {}});
  return diags_.back();
}

Diagnostic& DiagEngine::warning(DiagKind k, SourceLoc loc, std::string message) {
  diags_.push_back(Diagnostic{k, Severity::Warning, loc, std::move(message), {}});
  return diags_.back();
}

std::vector<Diagnostic> DiagEngine::sorted() const {
  std::vector<Diagnostic> out = diags_;
  std::stable_sort(out.begin(), out.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return locBefore(a.loc, b.loc); });
  return out;
}

static const char* severityName(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

namespace {

// How one byte or character of a source line shows on a terminal: a control byte or a byte that is
// not UTF-8 as `\xNN` (echoed raw, ESC ] 0 ; ... BEL would retitle the user's terminal), a UTF-8
// character as itself in one column, a tab as a tab.
struct Shown {
  std::string text;
  size_t bytes = 1;   // of the source
  size_t width = 1;   // terminal columns (a tab counts 1; the marker repeats the tab instead)
  bool tab = false;
};

Shown showAt(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c == '\t') return Shown{"\t", 1, 1, true};
  size_t n = utf8SequenceLength(s, i);
  if (n == 0 || c < 0x20 || c == 0x7f) return Shown{fmt::format("\\x{:02x}", c), 1, 4, false};
  return Shown{std::string(s.substr(i, n)), n, 1, false};
}

// `s` with every control byte but tab, and every byte that is not UTF-8, written as `\xNN`.
std::string printable(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    Shown piece = showAt(s, i);
    out += piece.text;
    i += piece.bytes;
  }
  return out;
}

// The source line as shown, and under it the caret and underline for bytes [begin, begin + length),
// aligned with what is shown (an escaped byte is four columns wide, a UTF-8 character one).
std::pair<std::string, std::string> snippet(std::string_view line, size_t begin, size_t length) {
  std::string shown, marker;
  size_t underline = 0;
  for (size_t i = 0; i < line.size();) {
    Shown piece = showAt(line, i);
    shown += piece.text;
    if (i < begin)
      marker += piece.tab ? std::string("\t") : std::string(piece.width, ' ');
    else if (i < begin + length)
      underline += piece.width;
    i += piece.bytes;
  }
  marker += '^';
  if (underline > 1) marker += std::string(underline - 1, '~');
  return {shown, marker};
}

}  // namespace

// `withSnippet`: the source line and caret under the header (not for a note at the place just shown).
static void renderOne(std::string& out, const SourceManager& sm, SourceLoc loc, Severity sev,
                      const std::string& message, const char* id, bool color, bool withSnippet = true) {
  const char* bold = color ? "\x1b[1m" : "";
  const char* reset = color ? "\x1b[0m" : "";
  const char* sevColor = !color ? "" : sev == Severity::Error ? "\x1b[1;31m" : sev == Severity::Warning ? "\x1b[1;35m" : "\x1b[1;36m";
  if (loc.valid())
    out += fmt::format("{}{}:{}:{}:{} ", bold, printable(sm.path(loc.file)), loc.line, loc.col, reset);
  else
    out += fmt::format("{}kdlc:{} ", bold, reset);
  out += fmt::format("{}{}:{} {}", sevColor, severityName(sev), reset, printable(message));
  if (id) out += fmt::format(" [{}]", id);
  out += '\n';
  if (!loc.valid() || !withSnippet) return;
  std::string_view line = sm.lineText(loc.file, loc.line);
  if (line.size() > 400) return;  // an enormous line helps nobody
  std::string gutter = fmt::format("{:>5}", loc.line);
  auto [shown, marker] = snippet(line, std::max<uint32_t>(loc.col, 1) - 1, loc.length);
  out += fmt::format("{} | {}\n", gutter, shown);
  out += fmt::format("{} | {}{}{}\n", std::string(gutter.size(), ' '), color ? "\x1b[1;32m" : "", marker, reset);
}

std::string renderText(const SourceManager& sm, const DiagEngine& diags, bool color) {
  std::string out;
  for (const Diagnostic& d : diags.sorted()) {
    renderOne(out, sm, d.loc, d.severity, d.message, diagId(d.kind), color);
    SourceLoc shown = d.loc;  // a note at the place whose line was just shown does not repeat it
    for (const DiagNote& n : d.notes) {
      renderOne(out, sm, n.loc, Severity::Note, n.message, nullptr, color, !(n.loc == shown));
      shown = n.loc;
    }
  }
  if (diags.capped())
    out += fmt::format("kdlc: note: too many errors; stopped after the first {} (raise the cap with --max-errors)\n",
                       diags.errorCap());
  return out;
}

std::string jsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      // JSON text is UTF-8: a valid sequence is copied, a byte that is not UTF-8 becomes U+FFFD.
      size_t n = utf8SequenceLength(s, i);
      if (n == 0) {
        out += "\\ufffd";
      } else {
        out += s.substr(i, n);
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) out += fmt::format("\\u{:04x}", c);
        else out += static_cast<char>(c);
    }
  }
  return out;
}

static std::string jsonLoc(const SourceManager& sm, SourceLoc loc) {
  if (!loc.valid()) return "\"file\":null,\"line\":null,\"column\":null,\"length\":null";
  return fmt::format("\"file\":\"{}\",\"line\":{},\"column\":{},\"length\":{}", jsonEscape(sm.path(loc.file)),
                     loc.line, loc.col, loc.length);
}

std::string renderJson(const SourceManager& sm, const DiagEngine& diags) {
  return "{" + renderJsonMembers(sm, diags) + "}\n";
}

std::string renderJsonMembers(const SourceManager& sm, const DiagEngine& diags) {
  std::string out = "\"diagnostics\":[";
  bool first = true;
  for (const Diagnostic& d : diags.sorted()) {
    if (!first) out += ',';
    first = false;
    out += fmt::format("{{\"id\":\"{}\",\"severity\":\"{}\",\"message\":\"{}\",{},\"notes\":[", diagId(d.kind),
                       severityName(d.severity), jsonEscape(d.message), jsonLoc(sm, d.loc));
    for (size_t i = 0; i < d.notes.size(); ++i)
      out += fmt::format("{}{{\"message\":\"{}\",{}}}", i ? "," : "", jsonEscape(d.notes[i].message),
                         jsonLoc(sm, d.notes[i].loc));
    out += "]}";
  }
  out += fmt::format("],\"errors\":{}", diags.errorCount());
  return out;
}

}  // namespace kdl
