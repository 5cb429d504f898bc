#include "dsl/source.h"

namespace kdl {

uint32_t SourceManager::add(std::string path, std::string text) {
  auto f = std::make_unique<File>();
  f->path = std::move(path);
  f->text = std::move(text);
  f->lineStarts.push_back(0);
  for (uint32_t i = 0; i < f->text.size(); ++i)
    if (f->text[i] == '\n') f->lineStarts.push_back(i + 1);
  files_.push_back(std::move(f));
  return static_cast<uint32_t>(files_.size());
}

static const std::string kEmpty;

const std::string& SourceManager::path(uint32_t file) const {
  return file >= 1 && file <= files_.size() ? files_[file - 1]->path : kEmpty;
}

const std::string& SourceManager::text(uint32_t file) const {
  return file >= 1 && file <= files_.size() ? files_[file - 1]->text : kEmpty;
}

std::string_view SourceManager::lineText(uint32_t file, uint32_t line) const {
  if (file < 1 || file > files_.size()) return {};
  const File& f = *files_[file - 1];
  if (line < 1 || line > f.lineStarts.size()) return {};
  uint32_t begin = f.lineStarts[line - 1];
  uint32_t end = line < f.lineStarts.size() ? f.lineStarts[line] - 1 : static_cast<uint32_t>(f.text.size());
  std::string_view v(f.text.data() + begin, end - begin);
  if (!v.empty() && v.back() == '\r') v.remove_suffix(1);
  return v;
}

size_t utf8SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  auto cont = [&](size_t k) { return (byte(k) & 0xC0) == 0x80; };
  unsigned c = byte(i);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    return byte(i + 1) >= lo && byte(i + 1) <= hi && cont(i + 2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return byte(i + 1) >= lo && byte(i + 1) <= hi && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}

}  // namespace kdl
