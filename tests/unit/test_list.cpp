// `kdlc list` rendering: epilogue expressions, the text block and the JSON document.
#include <catch2/catch.hpp>

#include <cctype>
#include <string_view>

#include "tools/kdlc/list.h"
#include "dsl/check/validate.h"
#include "raw_kernel_builder.h"

using namespace kdl;
using namespace kdl::testing;
using ast::BinaryOp;

namespace {

// A strict JSON syntax check (RFC 8259), enough to prove the document parses.
class JsonChecker {
 public:
  explicit JsonChecker(std::string_view s) : s_(s) {}
  bool valid() {
    skipSpace();
    if (!value(0)) return false;
    skipSpace();
    return pos_ == s_.size();
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;

  void skipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  bool string() {
    if (!eat('"')) return false;
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c == '\\') {
        if (pos_ >= s_.size()) return false;
        char e = s_[pos_++];
        if (e == 'u') {
          for (int i = 0; i < 4; ++i)
            if (pos_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[pos_++]))) return false;
        } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
          return false;
        }
      }
    }
    return false;
  }
  bool number() {
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    auto digits = [&] {
      size_t d = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      return pos_ > d;
    };
    if (!digits()) return false;
    if (s_[start] == '0' && pos_ - start > 1 && s_[start + 1] != '.') return false;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!digits()) return false;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digits()) return false;
    }
    return true;
  }
  bool value(int depth) {
    if (depth > 100) return false;
    skipSpace();
    if (pos_ >= s_.size()) return false;
    char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      if (eat('}')) return true;
      do {
        skipSpace();
        if (!string() || !eat(':') || !value(depth + 1)) return false;
      } while (eat(','));
      return eat('}');
    }
    if (c == '[') {
      ++pos_;
      if (eat(']')) return true;
      do {
        if (!value(depth + 1)) return false;
      } while (eat(','));
      return eat(']');
    }
    if (c == '"') return string();
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    return number();
  }
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The one spec a builder validates to (an empty spec and a failed REQUIRE otherwise).
std::vector<KernelSpec> specsOf(Harness& h, const KernelBuilder& b) {
  auto specs = validate(b.result(), h.diags);
  INFO(h.dump());
  REQUIRE(specs.size() == 1);
  return specs;
}

std::string renderOnly(Harness& h, const KernelBuilder& b) {
  auto specs = specsOf(h, b);
  return renderEpiNode(specs[0].epilogue, specs[0].epilogue.outputs[0].value);
}

}  // namespace

TEST_CASE("JSON checker sanity", "[list]") {
  CHECK(JsonChecker(R"({"a":[1,2.5,-3e-2,true,null,"x\n"]})").valid());
  CHECK_FALSE(JsonChecker(R"({"a":[1,]})").valid());
  CHECK_FALSE(JsonChecker(R"({"a":01})").valid());
  CHECK_FALSE(JsonChecker("{\"a\":\"\x01\"}").valid());
}

TEST_CASE("epilogue expressions render like source, with only the parentheses needed", "[list]") {
  Harness h;
  Epi e{h};
  auto b = KernelBuilder::gemm(h);
  b.param("alpha", Value::floating(1.0)).input("bias", dtype("f32"), "col");
  b.assign("D", e.call("gelu", {e.bin(BinaryOp::Add, e.bin(BinaryOp::Mul, e.name("alpha"), e.name("acc")), e.name("bias"))}));
  CHECK(renderOnly(h, b) == "gelu(alpha * acc + bias)");

  Harness h2;
  Epi e2{h2};
  auto b2 = KernelBuilder::gemm(h2);
  b2.input("bias", dtype("f32"), "col");
  b2.assign("D", e2.bin(BinaryOp::Mul, e2.bin(BinaryOp::Add, e2.name("acc"), e2.name("bias")),
                        e2.bin(BinaryOp::Sub, e2.num(2), e2.bin(BinaryOp::Sub, e2.name("acc"), e2.num(0.5)))));
  CHECK(renderOnly(h2, b2) == "(acc + bias) * (2.0 - (acc - 0.5))");

  Harness h3;
  Epi e3{h3};
  auto b3 = KernelBuilder::gemm(h3);
  b3.assign("D", e3.un(ast::UnaryOp::Neg,
                       e3.call("select", {e3.bin(BinaryOp::Or, e3.bin(BinaryOp::Gt, e3.name("acc"), e3.num(0)),
                                                 e3.un(ast::UnaryOp::Not, e3.bin(BinaryOp::Lt, e3.name("acc"), e3.num(-1)))),
                                          e3.call("cast", {e3.constant(dtype("e4m3")), e3.name("acc")}),
                                          e3.un(ast::UnaryOp::Neg, e3.num(2.5e-3))})));
  CHECK(renderOnly(h3, b3) == "-select(acc > 0.0 || !(acc < -1.0), cast(e4m3, acc), -0.0025)");

  Harness h4;
  Epi e4{h4};
  auto b4 = KernelBuilder::gemm(h4);
  b4.assign("D", e4.un(ast::UnaryOp::Neg, e4.un(ast::UnaryOp::Neg, e4.bin(BinaryOp::Div, e4.name("acc"), e4.num(3)))));
  CHECK(renderOnly(h4, b4) == "-(-(acc / 3.0))");
}

TEST_CASE("the text listing shows every field with its origin and location", "[list]") {
  Harness h;
  auto b = KernelBuilder::gemm(h, "gemm_bf16");
  b.field("tile", int3(128, 128, 32)).field("stages", Value::autoValue());
  b.operand("C", dtype("bf16"), layout("row"), Value::integer(4));
  auto specs = specsOf(h, b);
  std::string text = renderSpecsText(h.sm, specs);
  INFO(text);
  CHECK(text.rfind("kernel gemm_bf16  # test.kdl:1:8\n", 0) == 0);
  SourceLoc tileLoc = b.fieldValueLoc("tile");
  CHECK(contains(text, "  tile     = (128, 128, 32)      # explicit, test.kdl:" + std::to_string(tileLoc.line) + ":14\n"));
  CHECK(contains(text, "  op       = gemm                # explicit, test.kdl:"));
  CHECK(contains(text, "  accum    = f32                 # default, test.kdl:1:8\n"));
  CHECK(contains(text, "  cluster  = (1, 1, 1)           # default, test.kdl:1:8\n"));
  CHECK(contains(text, "  stages   = 4                   # auto, test.kdl:"));
  CHECK(contains(text, "  schedule = multistage          # default (auto), test.kdl:1:8\n"));
  CHECK(contains(text, "  raster   = along_n             # default"));
  CHECK(contains(text, "  split_k  = 1                   # default"));
  CHECK(contains(text, "  A        : bf16 row align 8    # test.kdl:"));
  CHECK(contains(text, "  C        : bf16 row align 4    # test.kdl:"));
  CHECK(contains(text, ", align explicit\n"));
  CHECK(contains(text, "  mainloop shared memory: 65536 bytes (4 stages; the launch's total: kdlc list --plan)\n"));
  CHECK(contains(text, "  epilogue                       # implicit (no epilogue block)\n"));
  CHECK(contains(text, "    param alpha = 1.0;\n    param beta = 0.0;\n    D = alpha * acc + beta * C;\n"));
  CHECK_FALSE(contains(text, "filter"));
}

TEST_CASE("the text listing of a conv kernel and an explicit epilogue", "[list]") {
  Harness h;
  Epi e{h};
  auto b = KernelBuilder::conv(h);
  b.field("filter", Value::tuple({Value::integer(3), Value::integer(3)}));
  b.input("bias", dtype("f32"), "channel");
  b.let("y", e.bin(BinaryOp::Add, e.name("acc"), e.name("bias")));
  b.assign("Y", e.call("relu", {e.name("y")}));
  b.output("amax", dtype("f32"), Value(), e.call("max", {e.call("abs", {e.name("Y")})}));
  b.output("Z", dtype("f16"), layout("nhwc"), e.name("y"));
  auto specs = specsOf(h, b);
  std::string text = renderSpecsText(h.sm, specs);
  INFO(text);
  CHECK(contains(text, "  filter   = (3, 3)              # explicit"));
  CHECK(contains(text, "  stride   = runtime             # default"));
  CHECK(contains(text, "    input bias : f32 [channel];\n    let y = acc + bias;\n    Y = relu(y);\n"
                       "    output amax : f32 = max(abs(Y));\n    output Z : f16 nhwc = y;\n"));
}

TEST_CASE("the JSON listing is valid, complete and deterministic", "[list]") {
  Harness h;
  Epi e{h};
  auto b = KernelBuilder::gemm(h, "k1", "bf16", "sm90a");
  b.field("cluster", int3(2, 1, 1)).field("split_k", Value::word(WordCategory::SplitK, "serial", {Value::integer(3)}));
  b.param("alpha", Value::floating(0.125)).input("scale", dtype("f32"), "");
  b.assign("D", e.bin(BinaryOp::Mul, e.bin(BinaryOp::Mul, e.name("alpha"), e.name("acc")), e.name("scale")));
  auto b2 = KernelBuilder::conv(h, "conv2d_wgrad", "k2");
  EvalResult r{{b.kernel(), b2.kernel()}};
  auto specs = validate(r, h.diags);
  INFO(h.dump());
  REQUIRE(specs.size() == 2);
  std::string json = renderSpecsJson(h.sm, specs);
  INFO(json);
  CHECK(JsonChecker(json).valid());
  CHECK(json == renderSpecsJson(h.sm, specs));
  CHECK(json.rfind("{\"kernels\":[\n{\"name\":\"k1\",\"file\":\"test.kdl\",\"line\":1,\"column\":8,\"template\":null,", 0) == 0);
  CHECK(contains(json, "\"op\":{\"value\":\"gemm\",\"origin\":\"explicit\",\"file\":\"test.kdl\",\"line\":2,\"column\":14}"));
  CHECK(contains(json, "\"cluster\":{\"value\":[2,1,1],\"origin\":\"explicit\""));
  CHECK(contains(json, "\"schedule\":{\"value\":\"cooperative\",\"origin\":\"default\""));
  CHECK(contains(json, "\"split_k\":{\"value\":\"serial\",\"slices\":3,\"origin\":\"explicit\""));
  CHECK(contains(json, "{\"name\":\"A\",\"dtype\":\"bf16\",\"layout\":\"row\",\"align\":8,\"align_origin\":\"default\""));
  CHECK(contains(json, "\"inputs\":[{\"name\":\"scale\",\"dtype\":\"f32\",\"broadcast\":\"scalar\""));
  CHECK(contains(json, "\"params\":[{\"name\":\"alpha\",\"default\":0.125,"));
  CHECK(contains(json, "\"value\":\"alpha * acc * scale\""));
  CHECK(contains(json, "\"filter\":{\"value\":null,\"origin\":\"default\""));
  CHECK(contains(json, "\"mainloop_shared_memory_bytes\":"));
  CHECK(renderSpecsJson(h.sm, {}) == "{\"kernels\":[]}\n");
}

TEST_CASE("JSON escapes paths and names", "[list]") {
  Harness h;
  h.sm.add("dir/we\"ird\\name.kdl", "kernel k {}\n");
  auto b = KernelBuilder::gemm(h);
  b.kernel().nameLoc = SourceLoc{2, 1, 8, 1};
  auto specs = specsOf(h, b);
  std::string json = renderSpecsJson(h.sm, specs);
  CHECK(JsonChecker(json).valid());
  CHECK(contains(json, "\"file\":\"dir/we\\\"ird\\\\name.kdl\""));
}

TEST_CASE("jsonEscape keeps JSON valid: control bytes escaped, bytes that are not UTF-8 become U+FFFD", "[list]") {
  CHECK(jsonEscape("a\x1b]0;t\x07z") == "a\\u001b]0;t\\u0007z");
  CHECK(jsonEscape("caf\xc3\xa9") == "caf\xc3\xa9");
  CHECK(jsonEscape("a\xff\xfe" "b") == "a\\ufffd\\ufffdb");
  std::string escaped = jsonEscape("x\xc3(\x01");
  CHECK(JsonChecker("\"" + escaped + "\"").valid());
  for (size_t i = 0; i < escaped.size(); i += std::max<size_t>(1, utf8SequenceLength(escaped, i)))
    CHECK(utf8SequenceLength(escaped, i) != 0);
}
