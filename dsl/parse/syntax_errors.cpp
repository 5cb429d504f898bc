#include "dsl/parse/syntax_errors.h"

#include <set>
#include <vector>

#include "KDLParser.h"
#include "dsl/parse/string_scan.h"

namespace kdl::parser {

using P = grammar::KDLParser;

namespace {

// The tokens an expression may start with, and the ones that may follow a complete operand
// (binary operators, `?`, a call's `(` or an index's `[`): summarised so that messages stay short.
const std::set<ssize_t> kExprStart = {P::INT,    P::FLOAT,  P::STRING, P::TRUE,  P::FALSE, P::AUTO, P::IDENT,
                                      P::LPAREN, P::LBRACK, P::MINUS,  P::NOT,   P::PLUS};
const std::set<ssize_t> kOperators = {P::STAR, P::SLASH, P::PERCENT, P::PLUS, P::MINUS, P::LT,     P::LE,
                                      P::GT,   P::GE,    P::EQ,      P::NE,   P::AND,   P::OR,     P::QUESTION,
                                      P::LPAREN, P::LBRACK};
const std::set<ssize_t> kStatementStart = {P::IMPORT, P::LET, P::FN, P::TEMPLATE, P::KERNEL, P::FOR, P::IF, P::ASSERT};

std::string tokenKindName(const antlr4::dfa::Vocabulary& vocabulary, ssize_t type) {
  switch (type) {
    case -1: return "the end of the file";
    case P::IDENT: return "a name";
    case P::INT: return "an integer";
    case P::FLOAT: return "a number";
    case P::STRING: return "a string";
    default: break;
  }
  std::string literal = vocabulary.getLiteralName(static_cast<size_t>(type));
  if (literal.size() >= 2 && literal.front() == '\'') return "`" + literal.substr(1, literal.size() - 2) + "`";
  return vocabulary.getDisplayName(static_cast<size_t>(type));
}

// Removes `group` from `set` and returns true when `set` held all of `key`.
bool takeGroup(std::set<ssize_t>& set, const std::set<ssize_t>& group, std::initializer_list<ssize_t> key) {
  for (ssize_t k : key)
    if (!set.count(k)) return false;
  for (ssize_t t : group) set.erase(t);
  return true;
}

std::string joinAlternatives(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " or " : ", ";
    out += items[i];
  }
  return out;
}

std::string describeExpected(const antlr4::dfa::Vocabulary& vocabulary, const antlr4::misc::IntervalSet& expected) {
  std::set<ssize_t> types;
  for (ssize_t t : expected.toList()) types.insert(t);
  std::vector<std::string> items;
  if (takeGroup(types, kOperators, {P::STAR, P::EQ})) items.push_back("an operator");
  if (takeGroup(types, kStatementStart, {P::LET, P::KERNEL, P::FOR, P::IF})) items.push_back("a statement");
  if (takeGroup(types, kExprStart, {P::INT, P::IDENT, P::LPAREN})) items.push_back("an expression");
  for (ssize_t t : types) items.push_back(tokenKindName(vocabulary, t));
  return joinAlternatives(items);
}

// What a missing `;` closes, from the rule the parser was in.
std::string semicolonContext(size_t rule) {
  switch (rule) {
    case P::RuleFieldItem: return " after the field value";
    case P::RuleLetStmt: return " after the `let` value";
    case P::RuleFnStmt: return " after the function body";
    case P::RuleImportStmt: return " after the import path";
    case P::RuleAssertStmt: return " after the assert";
    case P::RuleOperandItem: return " after the operand declaration";
    case P::RuleEpilogueItem: return " after the epilogue item";
    case P::RuleKernelStmt: return " after the template call";
    default: return "";
  }
}

// A hint for items whose shape is easy to get wrong, from the innermost such rule around the error.
const char* ruleHint(antlr4::RuleContext* ctx) {
  for (; ctx; ctx = dynamic_cast<antlr4::RuleContext*>(ctx->parent)) {
    switch (ctx->getRuleIndex()) {
      case P::RuleOperandItem:
      case P::RuleOperandSuffix:
        return " (an operand is declared as `NAME : dtype layout [align N] [scale (BM, BK)];`)";
      case P::RuleEpilogueItem:
        return " (epilogue items are `param`, `input`, `output`, `let` and `NAME = expr;`)";
      case P::RuleStmt:
      case P::RuleBodyItem:
        return "";
      default: break;
    }
  }
  return "";
}

// The innermost bracket still open at the end of the tokens: where a missing closer belongs.
antlr4::Token* unclosedBracket(antlr4::TokenStream* tokens) {
  std::vector<antlr4::Token*> open;
  for (size_t i = 0; i < tokens->size(); ++i) {
    antlr4::Token* t = tokens->get(i);
    if (t->getChannel() != antlr4::Token::DEFAULT_CHANNEL) continue;
    size_t type = t->getType();
    if (type == P::LPAREN || type == P::LBRACK || type == P::LBRACE)
      open.push_back(t);
    else if ((type == P::RPAREN || type == P::RBRACK || type == P::RBRACE) && !open.empty())
      open.pop_back();
  }
  return open.empty() ? nullptr : open.back();
}

}  // namespace

std::string describeToken(const antlr4::Token* t) {
  if (!t || t->getType() == antlr4::Token::EOF) return "the end of the file";
  switch (t->getType()) {
    case P::STRING: return "a string";
    default: return "`" + t->getText() + "`";
  }
}

// True when the token before `at` is a string that ran to the end of its line: it swallowed what
// followed it there (typically the `;`), and scanTokens has already reported it.
bool ErrorStrategy::followsUnterminatedString(antlr4::Parser* parser, antlr4::Token* at) const {
  if (!at || at->getTokenIndex() == INVALID_INDEX) return false;
  antlr4::TokenStream* tokens = parser->getTokenStream();
  for (size_t i = at->getTokenIndex(); i-- > 0;) {
    antlr4::Token* prev = tokens->get(i);
    if (prev->getChannel() != antlr4::Token::DEFAULT_CHANNEL) continue;
    if (prev->getType() != P::STRING) return false;
    size_t start = map_.begin(prev);
    std::string_view text = map_.lines().text().substr(start, map_.end(prev) - start);
    return scanToClose(text, 1, 0, true, nullptr) == std::string_view::npos;
  }
  return false;
}

void ErrorStrategy::report(antlr4::Parser* parser, antlr4::Token* at, const antlr4::misc::IntervalSet& expected,
                           bool unwanted) {
  if (followsUnterminatedString(parser, at)) return;
  size_t rule = parser->getContext() ? parser->getContext()->getRuleIndex() : size_t{P::RuleFile};
  std::string want = describeExpected(parser->getVocabulary(), expected);
  std::string message;
  bool semicolon = expected.contains(static_cast<size_t>(P::SEMI));
  if (unwanted || want.empty()) {
    message = at && at->getType() == antlr4::Token::EOF ? "unexpected end of the file" : "unexpected " + describeToken(at);
    if (!want.empty()) message += ", expected " + want;
  } else {
    message = "expected " + want;
    if (semicolon) message += semicolonContext(rule);
    message += ", found " + describeToken(at);
  }
  if (!semicolon) message += ruleHint(parser->getContext());
  Diagnostic& d = diags_.error(DiagKind::Syntax, map_.token(at), message);
  if (at && at->getType() == antlr4::Token::EOF)
    if (antlr4::Token* opener = unclosedBracket(parser->getTokenStream()))
      d.notes.push_back({map_.token(opener), "`" + opener->getText() + "` opened here is never closed"});
}

void ErrorStrategy::reportNoViableAlternative(antlr4::Parser* parser, const antlr4::NoViableAltException& e) {
  // Several alternatives matched a prefix; the token where all of them failed is the one to show.
  report(parser, e.getOffendingToken(), e.getExpectedTokens(), false);
}

void ErrorStrategy::reportInputMismatch(antlr4::Parser* parser, const antlr4::InputMismatchException& e) {
  report(parser, e.getOffendingToken(), e.getExpectedTokens(), false);
}

void ErrorStrategy::reportFailedPredicate(antlr4::Parser* parser, const antlr4::FailedPredicateException& e) {
  report(parser, e.getOffendingToken(), e.getExpectedTokens(), false);
}

void ErrorStrategy::reportUnwantedToken(antlr4::Parser* parser) {
  if (inErrorRecoveryMode(parser)) return;
  beginErrorCondition(parser);
  report(parser, parser->getCurrentToken(), getExpectedTokens(parser), true);
}

void ErrorStrategy::reportMissingToken(antlr4::Parser* parser) {
  if (inErrorRecoveryMode(parser)) return;
  beginErrorCondition(parser);
  report(parser, parser->getCurrentToken(), getExpectedTokens(parser), false);
}

}  // namespace kdl::parser
