// ANTLR's error recovery with KDL's messages: "expected `;` after the field value, found `arch`"
// instead of "missing ';' at 'arch'".
#pragma once
#include <cstddef>
#include <string>

#include "antlr4-runtime.h"
#include "dsl/diagnostics.h"
#include "dsl/parse/source_map.h"

namespace kdl::parser {

// How a found token reads in a message: "`foo`", "a string", "the end of the file".
std::string describeToken(const antlr4::Token* t);

// Reports syntax errors as [syntax] diagnostics at the offending token, then recovers like ANTLR's
// default strategy so that one run reports every error.
class ErrorStrategy : public antlr4::DefaultErrorStrategy {
 public:
  ErrorStrategy(const SegmentMap& map, DiagEngine& diags) : map_(map), diags_(diags) {}

 protected:
  void reportNoViableAlternative(antlr4::Parser* parser, const antlr4::NoViableAltException& e) override;
  void reportInputMismatch(antlr4::Parser* parser, const antlr4::InputMismatchException& e) override;
  void reportFailedPredicate(antlr4::Parser* parser, const antlr4::FailedPredicateException& e) override;
  void reportUnwantedToken(antlr4::Parser* parser) override;
  void reportMissingToken(antlr4::Parser* parser) override;

 private:
  void report(antlr4::Parser* parser, antlr4::Token* at, const antlr4::misc::IntervalSet& expected,
              bool unwanted);
  bool followsUnterminatedString(antlr4::Parser* parser, antlr4::Token* at) const;

  const SegmentMap& map_;
  DiagEngine& diags_;
};

}  // namespace kdl::parser
