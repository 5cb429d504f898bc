// The nesting of a string literal's text: strings inside `${...}` inside strings. The lexer's
// scanStringRest() (grammar/KDL.g4) follows the same rules on its character stream.
#pragma once
#include <cstddef>
#include <string_view>
#include <vector>

namespace kdl::parser {

// Scans `text` from `pos`, just after an opener at `openerPos` (a `"` when `inString`, else a
// `${`), until that opener closes. Returns the index just past its closing `"` or `}`, or npos when
// the text ends first; then `*unclosed` is the position of the innermost `${` still open (a quote
// meant to close the string then opened a nested one), or else of the opener itself.
inline size_t scanToClose(std::string_view text, size_t pos, size_t openerPos, bool inString, size_t* unclosed) {
  struct Opener {
    size_t pos;
    bool string;
  };
  std::vector<Opener> open{{openerPos, inString}};
  for (size_t i = pos; i < text.size();) {
    char c = text[i];
    if (open.back().string) {
      if (c == '"') {
        open.pop_back();
      } else if (c == '\\' && i + 1 < text.size()) {
        ++i;
      } else if (c == '$' && i + 1 < text.size() && text[i + 1] == '{') {
        open.push_back({i++, false});
      }
    } else if (c == '"') {
      open.push_back({i, true});
    } else if (c == '}') {
      open.pop_back();
    }
    ++i;
    if (open.empty()) return i;
  }
  if (unclosed) {
    *unclosed = openerPos;
    for (auto it = open.rbegin(); it != open.rend(); ++it)
      if (!it->string) {
        *unclosed = it->pos;
        break;
      }
  }
  return std::string_view::npos;
}

}  // namespace kdl::parser
