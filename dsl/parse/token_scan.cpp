#include "dsl/parse/token_scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include <string>
#include <vector>

#include "KDLLexer.h"
#include "dsl/parse/string_scan.h"

namespace kdl::parser {

using L = grammar::KDLLexer;

namespace {

bool isControl(unsigned char c) { return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F; }

// Tokens after which `(` is a call and `[` an index: each adds a level to the tree like an operator.
bool endsOperand(size_t type) {
  return type == L::IDENT || type == L::RPAREN || type == L::RBRACK || type == L::STRING;
}

// Tokens after which `+` and `-` are binary (after anything else they are unary).
bool endsValue(size_t type) {
  return endsOperand(type) || type == L::INT || type == L::FLOAT || type == L::TRUE || type == L::FALSE ||
         type == L::AUTO;
}

// The precedence level (0..5) of a binary operator token, or -1. Binary operators are
// left-associative: a chain of one level is one node's worth of nesting, however long (the parser
// and every pass take it with a loop), so each level counts once, not each operator.
int binaryLevel(size_t type, size_t prev) {
  switch (type) {
    case L::STAR: case L::SLASH: case L::PERCENT: return 0;
    case L::PLUS: case L::MINUS: return endsValue(prev) ? 1 : -1;
    case L::LT: case L::LE: case L::GT: case L::GE: return 2;
    case L::EQ: case L::NE: return 3;
    case L::AND: return 4;
    case L::OR: return 5;
    default: return -1;
  }
}

// Prefix operators: `!`, and `+` / `-` where no value precedes them.
bool isPrefix(size_t type, size_t prev) {
  return type == L::NOT || ((type == L::PLUS || type == L::MINUS) && !endsValue(prev));
}

// Tokens that end an expression or start a statement: the operator chain count starts again.
bool resetsChain(size_t type, size_t prev) {
  switch (type) {
    case L::SEMI: case L::COMMA: case L::ASSIGN: case L::LET: case L::FN: case L::TEMPLATE: case L::KERNEL:
    case L::FOR: case L::IMPORT: case L::ASSERT: case L::EPILOGUE: case L::PARAM: case L::INPUT: case L::OUTPUT:
      return true;
    case L::IF:
      return prev != L::ELSE;
    default:
      return false;
  }
}

std::string strayHint(std::string_view text) {
  if (text == "'") return "; strings are written in double quotes";
  if (text == "\\") return "; a backslash escape belongs inside a string";
  if (text == "$") return "; `${...}` interpolates only inside a string";
  return "";
}

// Counts how deep the tree for the tokens seen so far would nest: open brackets, plus at each open
// level (since its last separator) the `?:`s and `else if`s, one per precedence level of binary
// operators used (a left-associative chain is a loop, not nesting), and the deepest operand's
// prefix operators, calls and indexes (the operands of a chain are siblings, not nested).
class DepthCounter {
 public:
  DepthCounter(int maxDepth, int startDepth) : maxDepth_(maxDepth), sum_(startDepth) {}
  // Returns the nesting after the token.
  long add(size_t type) {
    bool open = type == L::LPAREN || type == L::LBRACK || type == L::LBRACE;
    Level& level = levels_.back();
    long before = level.depth();
    if (((type == L::LPAREN || type == L::LBRACK) && endsOperand(prev_)) || isPrefix(type, prev_)) ++level.operand;
    if (type == L::QUESTION || type == L::COLON || (type == L::IF && prev_ == L::ELSE)) {
      ++level.nested;
      level.endOperand();
    }
    if (int b = binaryLevel(type, prev_); b >= 0) {
      level.binaryLevels |= 1u << b;
      level.endOperand();
    }
    if (resetsChain(type, prev_)) level = Level{};
    sum_ += level.depth() - before;
    if (open) levels_.push_back(Level{});
    if ((type == L::RPAREN || type == L::RBRACK || type == L::RBRACE) && levels_.size() > 1) {
      sum_ -= levels_.back().depth();
      levels_.pop_back();
    }
    prev_ = type;
    return static_cast<long>(levels_.size() - 1) + sum_;
  }
  bool tooDeep(long depth) const { return depth > maxDepth_; }

 private:
  struct Level {
    long nested = 0;            // `?`, `:` and `else if`: each nests the rest
    unsigned binaryLevels = 0;  // bit i: a binary operator of precedence level i was used
    long operand = 0;           // prefix operators, calls and indexes of the operand being read
    long deepestOperand = 0;    // the most of them in an earlier operand
    void endOperand() {
      deepestOperand = std::max(deepestOperand, operand);
      operand = 0;
    }
    long depth() const { return nested + std::popcount(binaryLevels) + std::max(operand, deepestOperand); }
  };
  int maxDepth_;
  std::vector<Level> levels_{Level{}};
  long sum_;
  size_t prev_ = 0;
};

}  // namespace

bool checkEncoding(const FileLines& lines, DiagEngine& diags) {
  std::string_view text = lines.text();
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t n = utf8SequenceLength(text, i);
    if (n == 0 || isControl(c)) {
      std::string what = c == 0 ? "a NUL byte"
                         : n == 0 ? fmt::format("the byte 0x{:02x}, which is not valid UTF-8", c)
                                  : fmt::format("the control byte 0x{:02x}", c);
      diags.error(DiagKind::Encoding, lines.at(i, i + 1),
                  "the file holds " + what + "; KDL files are UTF-8 text, with tab, CR and LF the only control bytes");
      return false;
    }
    i += n;
  }
  return true;
}

// Says which opener a string that reached the end of its line left open: the string's own quote,
// a `${`, or the quote of a string inside a `${...}`.
static void reportUnterminatedString(const SegmentMap& map, const antlr4::Token* t, DiagEngine& diags) {
  size_t start = map.begin(t);
  std::string_view text = map.lines().text().substr(start, map.end(t) - start);
  size_t unclosed = 0;
  scanToClose(text, 1, 0, true, &unclosed);
  if (text.substr(unclosed, 2) == "${")
    diags.error(DiagKind::Syntax, map.lines().at(start + unclosed, start + unclosed + 2),
                "unterminated `${` in a string: expected `}` before the end of the line (write `\\${` for a "
                "literal `${`)");
  else
    diags.error(DiagKind::Syntax, map.lines().at(start + unclosed, start + unclosed + 1),
                "unterminated string: expected `\"` before the end of the line");
}

bool scanTokens(antlr4::CommonTokenStream& tokens, const SegmentMap& map, DiagEngine& diags, int maxDepth,
                int startDepth, std::vector<int>& depthAt) {
  tokens.fill();
  DepthCounter depth(maxDepth, startDepth);
  const std::vector<antlr4::Token*> all = tokens.getTokens();
  depthAt.assign(all.size(), startDepth);
  for (size_t i = 0; i < all.size(); ++i) {
    auto* t = dynamic_cast<antlr4::WritableToken*>(all[i]);
    if (!t) continue;
    switch (t->getType()) {
      case L::ERROR_CHAR: {
        // One message for a run of adjacent stray characters.
        size_t last = i;
        while (last + 1 < all.size() && all[last + 1]->getType() == L::ERROR_CHAR &&
               map.begin(all[last + 1]) == map.end(all[last]))
          static_cast<antlr4::WritableToken*>(all[++last])->setChannel(antlr4::Token::HIDDEN_CHANNEL);
        std::string_view text = map.lines().text().substr(map.begin(t), map.end(all[last]) - map.begin(t));
        diags.error(DiagKind::Syntax, map.span(t, all[last]),
                    fmt::format("unexpected character{} `{}`{}", last > i ? "s" : "", text, strayHint(text)));
        t->setChannel(antlr4::Token::HIDDEN_CHANNEL);
        i = last;
        continue;
      }
      case L::UNTERMINATED_COMMENT:
        diags.error(DiagKind::Syntax, map.lines().at(map.begin(t), map.begin(t) + 2),
                    "unterminated comment: `/*` has no `*/` after it");
        t->setChannel(antlr4::Token::HIDDEN_CHANNEL);
        continue;
      case L::UNTERMINATED_STRING:
        reportUnterminatedString(map, t, diags);
        // Parsed as a string so that the statement around it still makes sense.
        t->setType(L::STRING);
        break;
      default:
        break;
    }
    long level = depth.add(t->getType());
    depthAt[i] = static_cast<int>(level);
    if (depth.tooDeep(level)) {
      diags.error(DiagKind::Syntax, map.token(t),
                  fmt::format("nesting deeper than {} levels (brackets, prefix operators, `?:`, calls, indexes "
                              "and `else if` chains; the cap is --max-depth); name the inner parts with `let`",
                              maxDepth));
      return false;
    }
  }
  return true;
}

}  // namespace kdl::parser
