// Checks that run before the parser: the bytes are text, and the token stream is safe to parse.
#pragma once
#include <cstddef>
#include <string_view>
#include <vector>

#include "antlr4-runtime.h"
#include "dsl/diagnostics.h"
#include "dsl/parse/source_map.h"

namespace kdl::parser {

// Reports the first byte that is not UTF-8 text (NUL, a control byte other than tab, CR and LF, or
// invalid UTF-8) as one [encoding] error. Returns false when there is one.
bool checkEncoding(const FileLines& lines, DiagEngine& diags);

// Fills `tokens` from its lexer and reports what the lexer could only mark: stray characters,
// unterminated strings and comments (then hidden from, or repaired for, the parser). Returns false,
// after reporting it, when brackets, operator chains or `else if` chains nest deeper than `maxDepth`:
// the recursive-descent parser and every later pass would need that much stack. `startDepth` is the
// nesting around the segment (for the text of a `${...}`); `depthAt` gets the nesting at each token.
bool scanTokens(antlr4::CommonTokenStream& tokens, const SegmentMap& map, DiagEngine& diags, int maxDepth,
                int startDepth, std::vector<int>& depthAt);

}  // namespace kdl::parser
