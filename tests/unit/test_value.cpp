// Script values: spelling, interpolation, equality, type names.
#include <catch2/catch.hpp>

#include "dsl/eval/value.h"

using kdl::Value;
using kdl::WordCategory;

TEST_CASE("values spell themselves like source", "[value]") {
  CHECK(Value::integer(-128).toString() == "-128");
  CHECK(Value::floating(1.0).toString() == "1.0");
  CHECK(Value::floating(1.5).toString() == "1.5");
  CHECK(Value::floating(2.5e-3).toString() == "0.0025");
  CHECK(Value::boolean(true).toString() == "true");
  CHECK(Value::string("a\"b\n").toString() == "\"a\\\"b\\n\"");
  CHECK(Value::tuple({Value::integer(1), Value::integer(2)}).toString() == "(1, 2)");
  CHECK(Value::tuple({Value::integer(1)}).toString() == "(1,)");
  CHECK(Value::list({Value::word(WordCategory::DType, "bf16"), Value::string("x")}).toString() == "[bf16, \"x\"]");
  CHECK(Value::list({}).toString() == "[]");
  CHECK(Value::word(WordCategory::SplitK, "serial", {Value::integer(4)}).toString() == "serial(4)");
  CHECK(Value::autoValue().toString() == "auto");
  CHECK(Value::builtin("len").toString() == "len");
}

TEST_CASE("interpolation leaves the outer string unquoted", "[value]") {
  CHECK(Value::string("abc").interpolate() == "abc");
  CHECK(Value::word(WordCategory::DType, "e4m3").interpolate() == "e4m3");
  CHECK(Value::integer(256).interpolate() == "256");
  CHECK(Value::tuple({Value::integer(1), Value::string("s")}).interpolate() == "(1, \"s\")");
}

TEST_CASE("capped interpolation stops just past the cap", "[value]") {
  std::vector<Value> many(1000, Value::string("0123456789"));
  Value big = Value::list(many);
  std::string out;
  CHECK_FALSE(big.interpolateInto(out, 100));
  CHECK(out.size() > 100);
  CHECK(out.size() < 200);
  std::string small;
  CHECK(Value::integer(7).interpolateInto(small, 100));
  CHECK(small == "7");
}

TEST_CASE("equality is structural and numbers compare across int and float", "[value]") {
  CHECK(Value::integer(1).equals(Value::floating(1.0)));
  CHECK_FALSE(Value::integer(1).equals(Value::integer(2)));
  CHECK_FALSE(Value::integer(1).equals(Value::string("1")));
  CHECK(Value::tuple({Value::integer(1), Value::integer(2)}).equals(Value::tuple({Value::integer(1), Value::floating(2)})));
  CHECK_FALSE(Value::tuple({Value::integer(1)}).equals(Value::list({Value::integer(1)})));
  CHECK(Value::word(WordCategory::DType, "bf16").equals(Value::word(WordCategory::DType, "bf16")));
  CHECK_FALSE(Value::word(WordCategory::DType, "bf16").equals(Value::word(WordCategory::DType, "f16")));
  CHECK_FALSE(Value::word(WordCategory::SplitK, "serial", {Value::integer(2)})
                  .equals(Value::word(WordCategory::SplitK, "serial", {Value::integer(4)})));
  CHECK(Value::autoValue().equals(Value::autoValue()));
}

TEST_CASE("type names are the words messages use", "[value]") {
  CHECK(Value::integer(1).typeName() == "int");
  CHECK(Value::floating(1).typeName() == "float");
  CHECK(Value::string("").typeName() == "string");
  CHECK(Value::tuple({}).typeName() == "tuple");
  CHECK(Value::list({}).typeName() == "list");
  CHECK(Value::word(WordCategory::DType, "f16").typeName() == "dtype");
  CHECK(Value::word(WordCategory::Layout, "row").typeName() == "layout");
  CHECK(Value::word(WordCategory::SplitK, "stream_k").typeName() == "split-k mode");
  CHECK(Value::autoValue().typeName() == "auto");
  CHECK(Value::builtin("len").typeName() == "built-in");
  CHECK(Value().isNone());
}
