// Maps ANTLR token positions to byte-based SourceLocs. ANTLR counts code points (it decodes UTF-8),
// while SourceLoc columns and lengths are bytes, so every token position goes through this table.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "dsl/source.h"

namespace antlr4 {
class Token;
class ParserRuleContext;
}  // namespace antlr4

namespace kdl::parser {

// The lines of one file, for turning byte offsets into line and column.
class FileLines {
 public:
  FileLines(uint32_t fileId, std::string_view text);
  // The location of the bytes [begin, end), cut at the end of begin's line.
  SourceLoc at(size_t begin, size_t end) const;
  size_t lineStart(size_t line) const;  // 1-based line; the file's end when out of range
  std::string_view text() const { return text_; }
  uint32_t fileId() const { return fileId_; }

 private:
  uint32_t fileId_;
  std::string_view text_;
  std::vector<size_t> lineStarts_;
};

// One stretch of a file that a lexer ran on: the whole file, or the text inside one `${...}`.
class SegmentMap {
 public:
  SegmentMap(const FileLines& lines, size_t base, size_t size);
  // The file byte offset of the code point at index `cp` of the segment.
  size_t byteOf(size_t cp) const;
  size_t begin(const antlr4::Token* t) const;
  size_t end(const antlr4::Token* t) const;  // one past the token's last byte
  SourceLoc token(const antlr4::Token* t) const;
  // From the start of `first` to the end of `last` (cut at the end of the first line).
  SourceLoc span(const antlr4::Token* first, const antlr4::Token* last) const;
  SourceLoc span(antlr4::ParserRuleContext* ctx) const;
  std::string_view text() const { return lines_.text().substr(base_, size_); }
  const FileLines& lines() const { return lines_; }
  size_t base() const { return base_; }

 private:
  const FileLines& lines_;
  size_t base_;
  size_t size_;
  std::vector<size_t> cpStarts_;  // byte offset in the segment of each code point, then the size
};

}  // namespace kdl::parser
