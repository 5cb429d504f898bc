// Values of the KDL scripting language. Immutable; compound values share their storage.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kdl {

namespace ast {
struct Stmt;
}

// Built-in words are values of their own kind, grouped by category.
enum class WordCategory { DType, Layout, Arch, Op, Schedule, Raster, SplitK, Promotion, Fallback, Other };

class Value {
 public:
  enum class Kind { None, Int, Float, Bool, String, Tuple, List, Word, Auto, Function, Template, Builtin };

  Value() = default;
  static Value integer(int64_t v);
  static Value floating(double v);
  static Value boolean(bool v);
  static Value string(std::string s);
  static Value tuple(std::vector<Value> items);
  static Value list(std::vector<Value> items);
  // A built-in word such as bf16 or cooperative; `args` for words applied to arguments (serial(4)).
  static Value word(WordCategory cat, std::string name, std::vector<Value> args = {});
  static Value autoValue();
  // Callables: a user fn or template (decl + the environment it closes over), or a built-in by name.
  static Value function(const ast::Stmt* decl, std::shared_ptr<const void> closure);
  static Value templ(const ast::Stmt* decl, std::shared_ptr<const void> closure);
  static Value builtin(std::string name);

  Kind kind() const { return kind_; }
  bool isNone() const { return kind_ == Kind::None; }
  bool isInt() const { return kind_ == Kind::Int; }
  bool isFloat() const { return kind_ == Kind::Float; }
  bool isNumber() const { return kind_ == Kind::Int || kind_ == Kind::Float; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isString() const { return kind_ == Kind::String; }
  bool isTuple() const { return kind_ == Kind::Tuple; }
  bool isList() const { return kind_ == Kind::List; }
  bool isSequence() const { return kind_ == Kind::Tuple || kind_ == Kind::List; }
  bool isWord() const { return kind_ == Kind::Word; }
  bool isWord(WordCategory c) const { return kind_ == Kind::Word && cat_ == c; }
  bool isAuto() const { return kind_ == Kind::Auto; }
  bool isCallable() const { return kind_ == Kind::Function || kind_ == Kind::Template || kind_ == Kind::Builtin; }

  int64_t asInt() const { return i_; }
  double asFloat() const { return kind_ == Kind::Int ? static_cast<double>(i_) : f_; }  // ints widen
  bool asBool() const { return b_; }
  const std::string& asString() const;      // String, and the name of a Word/Builtin/Function/Template
  const std::vector<Value>& items() const;  // Tuple/List elements, or a Word's arguments
  WordCategory wordCategory() const { return cat_; }
  const ast::Stmt* decl() const { return decl_; }
  const std::shared_ptr<const void>& closure() const { return closure_; }

  // The type's name for messages: "int", "float", "bool", "string", "tuple", "list", "dtype", "layout",
  // "arch", "op", "schedule", "raster", "split-k mode", "auto", "function", "template", "built-in".
  std::string typeName() const;
  // Source-like spelling: 128, 1.5, true, "text", (1, 2), [a, b], bf16, serial(4), auto.
  std::string toString() const;
  // Text used by ${...} interpolation: like toString, but strings appear without quotes.
  std::string interpolate() const;
  // interpolate() appended to `out`, stopping once `out` is longer than `maxBytes`; false when it
  // stopped (so a huge list never builds a huge string).
  bool interpolateInto(std::string& out, size_t maxBytes) const;
  // Structural equality (1 == 1.0 is true; different kinds otherwise unequal).
  bool equals(const Value& other) const;

 private:
  Kind kind_ = Kind::None;
  WordCategory cat_ = WordCategory::Other;
  int64_t i_ = 0;
  double f_ = 0;
  bool b_ = false;
  std::shared_ptr<const std::string> s_;
  std::shared_ptr<const std::vector<Value>> items_;
  const ast::Stmt* decl_ = nullptr;
  std::shared_ptr<const void> closure_;
};

}  // namespace kdl
