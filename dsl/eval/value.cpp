#include "dsl/eval/value.h"

#include <fmt/format.h>

#include "dsl/ast.h"
#include "dsl/words.h"

namespace kdl {

namespace {

const std::string kNoString;
const std::vector<Value> kNoItems;

// Shortest round-trip spelling that still reads as a float (1.0, not 1).
std::string floatSpelling(double d) {
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".eEni") == std::string::npos) s += ".0";
  return s;
}

void appendQuoted(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      default: out += c;
    }
  }
  out += '"';
}

// Writes `v` to `out`; strings quoted when `quote`. Stops (returns false) once out passes maxBytes,
// so printing a huge nested list costs at most maxBytes.
bool appendValue(std::string& out, const Value& v, bool quote, size_t maxBytes) {
  auto appendItems = [&](const char* open, const char* close, bool singleComma) {
    out += open;
    const std::vector<Value>& items = v.items();
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += ", ";
      if (!appendValue(out, items[i], true, maxBytes)) return false;
    }
    if (singleComma && items.size() == 1) out += ',';
    out += close;
    return out.size() <= maxBytes;
  };
  switch (v.kind()) {
    case Value::Kind::None: out += "<error>"; break;
    case Value::Kind::Int: out += fmt::format("{}", v.asInt()); break;
    case Value::Kind::Float: out += floatSpelling(v.asFloat()); break;
    case Value::Kind::Bool: out += v.asBool() ? "true" : "false"; break;
    case Value::Kind::String:
      if (quote)
        appendQuoted(out, v.asString());
      else
        out += v.asString();
      break;
    case Value::Kind::Tuple: return appendItems("(", ")", true);
    case Value::Kind::List: return appendItems("[", "]", false);
    case Value::Kind::Word:
      out += v.asString();
      if (!v.items().empty()) return appendItems("(", ")", false);
      break;
    case Value::Kind::Auto: out += "auto"; break;
    case Value::Kind::Function:
    case Value::Kind::Template:
    case Value::Kind::Builtin: out += v.asString(); break;
  }
  return out.size() <= maxBytes;
}

}  // namespace

Value Value::integer(int64_t v) {
  Value r;
  r.kind_ = Kind::Int;
  r.i_ = v;
  return r;
}

Value Value::floating(double v) {
  Value r;
  r.kind_ = Kind::Float;
  r.f_ = v;
  return r;
}

Value Value::boolean(bool v) {
  Value r;
  r.kind_ = Kind::Bool;
  r.b_ = v;
  return r;
}

Value Value::string(std::string s) {
  Value r;
  r.kind_ = Kind::String;
  r.s_ = std::make_shared<const std::string>(std::move(s));
  return r;
}

Value Value::tuple(std::vector<Value> items) {
  Value r;
  r.kind_ = Kind::Tuple;
  r.items_ = std::make_shared<const std::vector<Value>>(std::move(items));
  return r;
}

Value Value::list(std::vector<Value> items) {
  Value r;
  r.kind_ = Kind::List;
  r.items_ = std::make_shared<const std::vector<Value>>(std::move(items));
  return r;
}

Value Value::word(WordCategory cat, std::string name, std::vector<Value> args) {
  Value r;
  r.kind_ = Kind::Word;
  r.cat_ = cat;
  r.s_ = std::make_shared<const std::string>(std::move(name));
  if (!args.empty()) r.items_ = std::make_shared<const std::vector<Value>>(std::move(args));
  return r;
}

Value Value::autoValue() {
  Value r;
  r.kind_ = Kind::Auto;
  return r;
}

// The name is copied out of the declaration so that a function value can still be printed after the
// syntax tree it came from is gone (kernels outlive the evaluator's trees).
Value Value::function(const ast::Stmt* decl, std::shared_ptr<const void> closure) {
  Value r;
  r.kind_ = Kind::Function;
  r.decl_ = decl;
  r.closure_ = std::move(closure);
  r.s_ = std::make_shared<const std::string>(decl ? decl->name : std::string());
  return r;
}

Value Value::templ(const ast::Stmt* decl, std::shared_ptr<const void> closure) {
  Value r = function(decl, std::move(closure));
  r.kind_ = Kind::Template;
  return r;
}

Value Value::builtin(std::string name) {
  Value r;
  r.kind_ = Kind::Builtin;
  r.s_ = std::make_shared<const std::string>(std::move(name));
  return r;
}

const std::string& Value::asString() const { return s_ ? *s_ : kNoString; }

const std::vector<Value>& Value::items() const { return items_ ? *items_ : kNoItems; }

std::string Value::typeName() const {
  switch (kind_) {
    case Kind::None: return "error";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Bool: return "bool";
    case Kind::String: return "string";
    case Kind::Tuple: return "tuple";
    case Kind::List: return "list";
    case Kind::Word: return categoryName(cat_);
    case Kind::Auto: return "auto";
    case Kind::Function: return "function";
    case Kind::Template: return "template";
    case Kind::Builtin: return "built-in";
  }
  return "error";
}

std::string Value::toString() const {
  std::string out;
  appendValue(out, *this, true, SIZE_MAX);
  return out;
}

std::string Value::interpolate() const {
  std::string out;
  appendValue(out, *this, false, SIZE_MAX);
  return out;
}

bool Value::interpolateInto(std::string& out, size_t maxBytes) const {
  return appendValue(out, *this, false, maxBytes);
}

bool Value::equals(const Value& other) const {
  if (isNumber() && other.isNumber()) {
    if (isInt() && other.isInt()) return i_ == other.i_;
    return asFloat() == other.asFloat();
  }
  if (kind_ != other.kind_) return false;
  auto sameItems = [&] {
    const std::vector<Value>& a = items();
    const std::vector<Value>& b = other.items();
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!a[i].equals(b[i])) return false;
    return true;
  };
  switch (kind_) {
    case Kind::None:
    case Kind::Auto: return true;
    case Kind::Bool: return b_ == other.b_;
    case Kind::String:
    case Kind::Builtin: return asString() == other.asString();
    case Kind::Tuple:
    case Kind::List: return sameItems();
    case Kind::Word: return cat_ == other.cat_ && asString() == other.asString() && sameItems();
    case Kind::Function:
    case Kind::Template: return decl_ == other.decl_ && closure_ == other.closure_;
    case Kind::Int:
    case Kind::Float: break;  // handled above
  }
  return false;
}

}  // namespace kdl
