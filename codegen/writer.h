// A small code writer: lines with indentation, formatted with fmt (named arguments welcome:
// w.line("{type}* {name};", fmt::arg("type", t), fmt::arg("name", n))).
#pragma once
#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>

namespace kdl::codegen {

class CodeWriter {
 public:
  explicit CodeWriter(int indentWidth = 2) : width_(indentWidth) {}

  template <class... T>
  CodeWriter& line(fmt::format_string<T...> f, T&&... args) {
    return raw(fmt::format(f, std::forward<T>(args)...));
  }
  // One line as is (indented unless empty).
  CodeWriter& raw(std::string_view text) {
    if (!text.empty()) out_.append(size_t(depth_ * width_), ' ');
    out_.append(text);
    out_ += '\n';
    return *this;
  }
  // Several lines (a fixed block), each indented.
  CodeWriter& lines(std::string_view text) {
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      raw(text.substr(start, end - start));
      start = end + 1;
    }
    return *this;
  }
  CodeWriter& blank() {
    out_ += '\n';
    return *this;
  }
  // Opens a block: writes the line (e.g. "struct X {") and indents what follows.
  template <class... T>
  CodeWriter& open(fmt::format_string<T...> f, T&&... args) {
    line(f, std::forward<T>(args)...);
    ++depth_;
    return *this;
  }
  // Closes a block: dedents and writes the closing line (e.g. "};").
  CodeWriter& close(std::string_view closing = "}") {
    --depth_;
    return raw(closing);
  }
  CodeWriter& indent() { ++depth_; return *this; }
  CodeWriter& dedent() { --depth_; return *this; }
  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
  int depth_ = 0;
  int width_;
};

}  // namespace kdl::codegen
