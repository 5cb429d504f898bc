// parseFile: the driver that runs the checks, ANTLR's lexer and parser, and the AST builder.
#include <fmt/format.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "KDLLexer.h"
#include "KDLParser.h"
#include "antlr4-runtime.h"
#include "dsl/parse/parser.h"
#include "dsl/parse/builder.h"
#include "dsl/parse/source_map.h"
#include "dsl/parse/syntax_errors.h"
#include "dsl/parse/token_scan.h"

namespace kdl {

namespace parser {
namespace {

// ANTLR's pieces for one segment, kept together because the parse tree borrows from all of them.
struct Run {
  explicit Run(const SegmentMap& map)
      : input(std::string(map.text())), lexer(&input), tokens(&lexer), parser(&tokens) {
    lexer.removeErrorListeners();
    parser.removeErrorListeners();
  }
  antlr4::ANTLRInputStream input;
  grammar::KDLLexer lexer;
  antlr4::CommonTokenStream tokens;
  grammar::KDLParser parser;
};

// Parses with the fast SLL prediction first; only input that fails there (nearly always input with
// a syntax error) is parsed again with full LL prediction and error recovery, which reports.
template <class Rule>
auto parseTwoStage(Run& run, const SegmentMap& map, DiagEngine& diags, Rule rule) {
  auto* sim = run.parser.getInterpreter<antlr4::atn::ParserATNSimulator>();
  sim->setPredictionMode(antlr4::atn::PredictionMode::SLL);
  run.parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
  try {
    return (run.parser.*rule)();
  } catch (const antlr4::ParseCancellationException&) {
  }
  run.tokens.seek(0);
  run.parser.reset();
  sim->setPredictionMode(antlr4::atn::PredictionMode::LL);
  run.parser.setErrorHandler(std::make_shared<ErrorStrategy>(map, diags));
  return (run.parser.*rule)();
}

}  // namespace

ast::ExprPtr parseInterpolation(const FileLines& lines, size_t begin, size_t end, DiagEngine& diags, int maxDepth,
                                int startDepth) {
  SegmentMap map(lines, begin, end - begin);
  Run run(map);
  size_t errorsBefore = diags.errorCount();
  std::vector<int> depthAt;
  if (!scanTokens(run.tokens, map, diags, maxDepth, startDepth, depthAt)) return nullptr;
  auto* tree = parseTwoStage(run, map, diags, &grammar::KDLParser::interpolation);
  ast::ExprPtr e = Builder(map, diags, maxDepth, depthAt).expr(tree->expr());
  return diags.errorCount() == errorsBefore ? std::move(e) : nullptr;
}

static void parseInto(ast::File& file, const FileLines& lines, DiagEngine& diags, int maxDepth) {
  if (!checkEncoding(lines, diags)) return;
  // A UTF-8 byte order mark is not part of the text.
  size_t base = lines.text().substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  SegmentMap map(lines, base, lines.text().size() - base);
  Run run(map);
  std::vector<int> depthAt;
  if (!scanTokens(run.tokens, map, diags, maxDepth, 0, depthAt)) return;
  auto* tree = parseTwoStage(run, map, diags, &grammar::KDLParser::file);
  file.stmts = Builder(map, diags, maxDepth, depthAt).stmts(tree->stmt());
}

}  // namespace parser

std::unique_ptr<ast::File> parseFile(const SourceManager& sm, uint32_t fileId, DiagEngine& diags, int maxDepth) {
  auto file = std::make_unique<ast::File>();
  file->fileId = fileId;
  parser::FileLines lines(fileId, sm.text(fileId));
  try {
    parser::parseInto(*file, lines, diags, maxDepth);
  } catch (const std::exception& e) {
    diags.error(DiagKind::Syntax, lines.at(0, 0),
                fmt::format("internal error while parsing ({}); please report this as a kdlc bug", e.what()));
  } catch (...) {
    diags.error(DiagKind::Syntax, lines.at(0, 0), "internal error while parsing; please report this as a kdlc bug");
  }
  return file;
}

}  // namespace kdl
