// Source files and locations. Every AST node, value origin and diagnostic carries a SourceLoc.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kdl {

// A range in one source file: 1-based line and column (in bytes), and a length in bytes on that line.
// file == 0 means "no location" (built-in defaults, command line).
struct SourceLoc {
  uint32_t file = 0;
  uint32_t line = 0;
  uint32_t col = 0;
  uint32_t length = 0;
  bool valid() const { return file != 0 && line != 0; }
  friend bool operator==(const SourceLoc&, const SourceLoc&) = default;
};

// The length of the UTF-8 sequence that starts at byte `i` of `s`, or 0 when it is not valid UTF-8
// (overlong forms and surrogates included). The one UTF-8 decoder of the front end: the parser's
// encoding check and the diagnostics printer both use it.
size_t utf8SequenceLength(std::string_view s, size_t i);

// Orders locations by file (in load order), then line, then column.
inline bool locBefore(const SourceLoc& a, const SourceLoc& b) {
  if (a.file != b.file) return a.file < b.file;
  if (a.line != b.line) return a.line < b.line;
  return a.col < b.col;
}

class SourceManager {
 public:
  // Registers a file's text; returns its id (1-based). `path` is kept as given (used in messages).
  uint32_t add(std::string path, std::string text);
  const std::string& path(uint32_t file) const;
  const std::string& text(uint32_t file) const;
  // The text of one line, without its newline; empty when out of range.
  std::string_view lineText(uint32_t file, uint32_t line) const;
  size_t fileCount() const { return files_.size(); }

 private:
  struct File {
    std::string path;
    std::string text;
    std::vector<uint32_t> lineStarts;
  };
  std::vector<std::unique_ptr<File>> files_;
};

}  // namespace kdl
