#include "dsl/parse/source_map.h"

#include <algorithm>

#include "antlr4-runtime.h"

namespace kdl::parser {

FileLines::FileLines(uint32_t fileId, std::string_view text) : fileId_(fileId), text_(text) {
  lineStarts_.push_back(0);
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') lineStarts_.push_back(i + 1);
}

size_t FileLines::lineStart(size_t line) const {
  if (line < 1 || line > lineStarts_.size()) return text_.size();
  return lineStarts_[line - 1];
}

SourceLoc FileLines::at(size_t begin, size_t end) const {
  begin = std::min(begin, text_.size());
  end = std::max(begin, std::min(end, text_.size()));
  size_t line = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), begin) - lineStarts_.begin();
  size_t lineEnd = line < lineStarts_.size() ? lineStarts_[line] - 1 : text_.size();
  if (lineEnd > begin && text_[lineEnd - 1] == '\r') --lineEnd;
  size_t length = std::min(end, std::max(lineEnd, begin)) - begin;
  return SourceLoc{fileId_, static_cast<uint32_t>(line), static_cast<uint32_t>(begin - lineStarts_[line - 1] + 1),
                   static_cast<uint32_t>(length)};
}

SegmentMap::SegmentMap(const FileLines& lines, size_t base, size_t size) : lines_(lines), base_(base), size_(size) {
  std::string_view t = text();
  cpStarts_.reserve(t.size() + 1);
  for (size_t i = 0; i < t.size(); ++i)
    if ((static_cast<unsigned char>(t[i]) & 0xC0) != 0x80) cpStarts_.push_back(i);
  cpStarts_.push_back(t.size());
}

size_t SegmentMap::byteOf(size_t cp) const { return base_ + cpStarts_[std::min(cp, cpStarts_.size() - 1)]; }

// A token that error recovery conjured up has no index; it sits where the parser stood, which
// ANTLR gives as a line and a code-point column.
static size_t conjuredBegin(const SegmentMap& map, const antlr4::Token* t) {
  size_t lineBegin = t->getLine() <= 1 ? map.base() : map.lines().lineStart(t->getLine());
  std::string_view text = map.lines().text();
  size_t pos = lineBegin;
  for (size_t cps = 0; pos < text.size() && text[pos] != '\n' && cps < t->getCharPositionInLine(); ++cps) {
    ++pos;
    while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
  }
  return pos;
}

size_t SegmentMap::begin(const antlr4::Token* t) const {
  if (t->getStartIndex() == INVALID_INDEX) return conjuredBegin(*this, t);
  return byteOf(t->getStartIndex());
}

size_t SegmentMap::end(const antlr4::Token* t) const {
  if (t->getStartIndex() == INVALID_INDEX || t->getStopIndex() == INVALID_INDEX ||
      t->getStopIndex() + 1 < t->getStartIndex())
    return begin(t);
  return byteOf(t->getStopIndex() + 1);
}

SourceLoc SegmentMap::token(const antlr4::Token* t) const { return lines_.at(begin(t), end(t)); }

SourceLoc SegmentMap::span(const antlr4::Token* first, const antlr4::Token* last) const {
  size_t b = begin(first);
  size_t e = last ? end(last) : end(first);
  return lines_.at(b, std::max(e, end(first)));
}

SourceLoc SegmentMap::span(antlr4::ParserRuleContext* ctx) const {
  if (!ctx->getStart()) return SourceLoc{lines_.fileId(), 0, 0, 0};
  // A rule that matched nothing has its stop before its start.
  const antlr4::Token* stop = ctx->getStop();
  if (stop && stop->getTokenIndex() < ctx->getStart()->getTokenIndex()) stop = nullptr;
  return span(ctx->getStart(), stop);
}

}  // namespace kdl::parser
