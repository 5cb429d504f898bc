// Validation of hand-built RawKernels: one test per rule, checking the diagnostic's id, message and
// location, and the resolved defaults of kernels that pass.
#include <catch2/catch.hpp>

#include <functional>

#include "dsl/check/cpp_names.h"
#include "dsl/check/validate.h"
#include "raw_kernel_builder.h"

using namespace kdl;
using namespace kdl::testing;
using ast::BinaryOp;

namespace {

std::vector<KernelSpec> run(Harness& h, const KernelBuilder& b) { return validate(b.result(), h.diags); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

// ---- resolved defaults -----------------------------------------------------------------------------

TEST_CASE("a minimal sm80 bf16 gemm gets every default", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  auto specs = run(h, b);
  INFO(h.dump());
  REQUIRE(specs.size() == 1);
  const KernelSpec& s = specs[0];
  CHECK(s.name == "k");
  CHECK(s.op.value == Op::Gemm);
  CHECK(s.op.origin == Origin::Explicit);
  CHECK(s.op.loc == b.fieldValueLoc("op"));
  CHECK(s.accum.value == DType::F32);
  CHECK(s.accum.origin == Origin::Default);
  CHECK(s.accum.loc == b.kernel().nameLoc);
  CHECK(s.tile.value == std::array<int, 3>{128, 128, 32});
  CHECK(s.tile.origin == Origin::Default);
  CHECK(s.cluster.value == std::array<int, 3>{1, 1, 1});
  CHECK(s.schedule.value == Schedule::Multistage);
  CHECK(s.schedule.origin == Origin::Default);
  CHECK(s.raster.value == Raster::AlongN);
  CHECK(s.splitK.value == SplitKMode::None);
  CHECK(s.splitKSlices.value == 1);
  // (128 + 128) * 32 * 2 = 16384 bytes per stage; the multistage path stops at 4.
  CHECK(s.stages.value == 4);
  CHECK(s.sharedMemoryBytes == 4 * 16384);
  REQUIRE(s.operands.size() == 3);
  CHECK(s.operands[0].name == "A");
  CHECK(s.operands[0].align == 8);
  CHECK(s.operands[0].alignOrigin == Origin::Default);
  CHECK(s.operands[2].name == "D");
  CHECK(s.epilogue.implicit);
  CHECK_FALSE(s.epilogue.usesSource);
  REQUIRE(s.epilogue.params.size() == 1);
  CHECK(s.epilogue.params[0].name == "alpha");
  CHECK(s.epilogue.params[0].defaultValue == 1.0);
  REQUIRE(s.epilogue.outputs.size() == 1);
  CHECK(s.epilogue.outputs[0].kind == EpiOutput::Kind::Main);
  CHECK(s.epilogue.outputs[0].dtype == DType::BF16);
  CHECK(s.epilogue.outputs[0].value.op == EpiOp::Mul);
}

TEST_CASE("the implicit epilogue reads C when C is declared", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.operand("C", dtype("f32"), layout("row"));
  auto specs = run(h, b);
  REQUIRE(specs.size() == 1);
  const KernelSpec& s = specs[0];
  CHECK(s.epilogue.usesSource);
  REQUIRE(s.epilogue.params.size() == 2);
  CHECK(s.epilogue.params[1].name == "beta");
  CHECK(s.epilogue.params[1].defaultValue == 0.0);
  CHECK(s.epilogue.outputs[0].value.op == EpiOp::Add);
  REQUIRE(s.operands.size() == 4);
  CHECK(s.operands[2].name == "C");
  CHECK(s.operands[2].align == 4);
}

TEST_CASE("default tiles follow the element size and the path", "[validate]") {
  struct Case {
    const char* dt;
    const char* arch;
    std::array<int, 3> tile;
    DType accum;
  };
  for (const Case& c : {Case{"f16", "sm80", {128, 128, 32}, DType::F32}, Case{"s8", "sm80", {128, 128, 64}, DType::S32},
                        Case{"tf32", "sm86", {128, 128, 16}, DType::F32}, Case{"bf16", "sm90a", {128, 128, 64}, DType::F32},
                        Case{"e4m3", "sm90a", {128, 128, 64}, DType::F32}}) {
    Harness h;
    auto b = KernelBuilder::gemm(h, "k", c.dt, c.arch);
    auto specs = run(h, b);
    INFO(c.dt << " on " << c.arch << ": " << h.dump());
    REQUIRE(specs.size() == 1);
    CHECK(specs[0].tile.value == c.tile);
    CHECK(specs[0].accum.value == c.accum);
  }
}

TEST_CASE("sm90a picks cooperative for tile M >= 128 and pingpong below", "[validate]") {
  for (int m : {64, 128}) {
    Harness h;
    auto b = KernelBuilder::gemm(h, "k", "bf16", "sm90a");
    b.field("tile", int3(m, 128, 64)).field("schedule", Value::autoValue());
    auto specs = run(h, b);
    INFO(h.dump());
    REQUIRE(specs.size() == 1);
    CHECK(specs[0].schedule.value == (m >= 128 ? Schedule::Cooperative : Schedule::Pingpong));
    CHECK(specs[0].schedule.origin == Origin::Auto);
    CHECK(specs[0].schedule.loc == b.fieldValueLoc("schedule"));
  }
}

TEST_CASE("auto schedules pingpong when tile M is not a multiple of 128", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h, "k", "bf16", "sm90a");
  b.field("tile", int3(192, 128, 64));
  auto specs = run(h, b);
  INFO(h.dump());
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].schedule.value == Schedule::Pingpong);
}

TEST_CASE("stages = auto takes the most that fit, up to 8 on sm90a", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h, "k", "bf16", "sm90a");
  b.field("tile", int3(128, 256, 64)).field("stages", Value::autoValue());
  auto specs = run(h, b);
  REQUIRE(specs.size() == 1);
  // (128 + 256) * 64 * 2 = 49152 bytes per stage; 232448 / 49152 = 4.
  CHECK(specs[0].stages.value == 4);
  CHECK(specs[0].stages.origin == Origin::Auto);
  CHECK(specs[0].stages.loc == b.fieldValueLoc("stages"));
  CHECK(specs[0].sharedMemoryBytes == 4 * 49152);
}

TEST_CASE("values set by a template are recorded as such", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.field("tile", int3(128, 128, 32), true);
  auto specs = run(h, b);
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].tile.origin == Origin::Template);
}

TEST_CASE("split_k modes", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.field("split_k", Value::word(WordCategory::SplitK, "serial", {Value::integer(4)}));
  auto specs = run(h, b);
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].splitK.value == SplitKMode::Serial);
  CHECK(specs[0].splitKSlices.value == 4);

  Harness h2;
  auto b2 = KernelBuilder::gemm(h2);
  b2.field("split_k", Value::word(WordCategory::SplitK, "stream_k"));
  auto specs2 = run(h2, b2);
  REQUIRE(specs2.size() == 1);
  CHECK(specs2[0].splitK.value == SplitKMode::StreamK);
}

TEST_CASE("conv kernels validate with filter and stride", "[validate]") {
  Harness h;
  auto b = KernelBuilder::conv(h);
  b.field("filter", Value::tuple({Value::integer(3), Value::integer(3)}))
      .field("stride", Value::tuple({Value::integer(1), Value::integer(1)}));
  auto specs = run(h, b);
  INFO(h.dump());
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].filter.value == std::array<int, 2>{3, 3});
  CHECK(specs[0].operands.back().name == "Y");
  CHECK(specs[0].epilogue.outputs[0].name == "Y");
}

TEST_CASE("conv dgrad and wgrad produce X and W", "[validate]") {
  Harness h;
  auto b = KernelBuilder::conv(h, "conv2d_dgrad");
  auto specs = run(h, b);
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].operands[0].name == "Y");
  CHECK(specs[0].operands[2].name == "X");
  CHECK(specs[0].epilogue.outputs[0].name == "X");

  Harness h2;
  auto b2 = KernelBuilder::conv(h2, "conv2d_wgrad");
  auto specs2 = run(h2, b2);
  REQUIRE(specs2.size() == 1);
  CHECK(specs2[0].operands[2].name == "W");
}

// ---- names -----------------------------------------------------------------------------------------

TEST_CASE("[kernel-name] rejects names that are not C identifiers", "[validate]") {
  for (const char* bad : {"9lives", "gemm-1", "", "class", "__x", "_Tile"}) {
    Harness h;
    auto b = KernelBuilder::gemm(h, bad);
    auto specs = run(h, b);
    INFO(bad);
    CHECK(specs.empty());
    const Diagnostic* d = h.only(DiagKind::KernelName);
    REQUIRE(d);
    CHECK(d->loc == b.kernel().nameLoc);
  }
}

TEST_CASE("[duplicate-kernel] points at the second with a note at the first", "[validate]") {
  Harness h;
  auto a = KernelBuilder::gemm(h, "same");
  auto b = KernelBuilder::gemm(h, "same");
  EvalResult r{{a.kernel(), b.kernel()}};
  auto specs = validate(r, h.diags);
  CHECK(specs.size() == 1);
  const Diagnostic* d = h.only(DiagKind::DuplicateKernel);
  REQUIRE(d);
  CHECK(d->loc == b.kernel().nameLoc);
  REQUIRE(d->notes.size() == 1);
  CHECK(d->notes[0].loc == a.kernel().nameLoc);
  CHECK(d->notes[0].message == "first defined here");
}

TEST_CASE("a broken kernel is left out and the others go on", "[validate]") {
  Harness h;
  auto good1 = KernelBuilder::gemm(h, "one");
  auto bad = KernelBuilder::gemm(h, "two");
  bad.field("tile", int3(100, 128, 32));
  auto good2 = KernelBuilder::gemm(h, "three");
  EvalResult r{{good1.kernel(), bad.kernel(), good2.kernel()}};
  auto specs = validate(r, h.diags);
  REQUIRE(specs.size() == 2);
  CHECK(specs[0].name == "one");
  CHECK(specs[1].name == "three");
}

// ---- fields ----------------------------------------------------------------------------------------

TEST_CASE("[unknown-field] suggests the nearest field", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.field("tiles", int3(128, 128, 32));
  run(h, b);
  const Diagnostic* d = h.only(DiagKind::UnknownField);
  REQUIRE(d);
  CHECK(d->message == "kernels have no field `tiles`, did you mean `tile`?");
  CHECK(d->loc.line == b.fieldValueLoc("tiles").line);
  CHECK(d->loc.col == 3);
}

TEST_CASE("[unknown-field] filter and stride are conv only", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.field("filter", Value::tuple({Value::integer(3), Value::integer(3)}));
  run(h, b);
  const Diagnostic* d = h.only(DiagKind::UnknownField);
  REQUIRE(d);
  CHECK(contains(d->message, "convolution field"));
}

TEST_CASE("[missing-field] op and arch are required, reported at the kernel name", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.without("arch");
  auto specs = run(h, b);
  CHECK(specs.empty());
  const Diagnostic* d = h.only(DiagKind::MissingField);
  REQUIRE(d);
  CHECK(d->loc == b.kernel().nameLoc);
  CHECK(contains(d->message, "`arch`"));
  CHECK(contains(d->message, "`sm90a`"));

  Harness h2;
  auto b2 = KernelBuilder::gemm(h2);
  b2.without("op");
  run(h2, b2);
  auto missing = h2.errors(DiagKind::MissingField);
  REQUIRE(missing.size() == 1);
  CHECK(contains(missing[0]->message, "`conv2d_fprop`"));
}

TEST_CASE("[field-type] tile must be a tuple of three ints", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.field("tile", Value::list({Value::integer(128), Value::integer(128), Value::integer(32)}));
  run(h, b);
  const Diagnostic* d = h.only(DiagKind::FieldType);
  REQUIRE(d);
  CHECK(d->message == "`tile` must be a tuple of three ints (M, N, K), not `list`");
  CHECK(d->loc == b.fieldValueLoc("tile"));

  Harness h2;
  auto b2 = KernelBuilder::gemm(h2);
  b2.field("tile", Value::tuple({Value::floating(1e18), Value::integer(-5), Value::integer(0)}));
  CHECK(run(h2, b2).empty());
  CHECK(h2.errors(DiagKind::FieldType).size() == 1);
  CHECK(h2.errors(DiagKind::FieldRange).size() == 2);
}

TEST_CASE("[field-type] word fields suggest the right word", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.field("arch", Value::string("sm90"));
  run(h, b);
  const Diagnostic* d = h.only(DiagKind::FieldType);
  REQUIRE(d);
  CHECK(contains(d->message, "did you mean `sm90a`?"));

  Harness h2;
  auto b2 = KernelBuilder::gemm(h2);
  b2.field("op", dtype("bf16"));
  run(h2, b2);
  REQUIRE(h2.errors(DiagKind::FieldType).size() == 1);
  CHECK(contains(h2.errors(DiagKind::FieldType)[0]->message, "not the dtype `bf16`"));
}

TEST_CASE("[field-type] stages and split_k", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.field("stages", Value::string("4"));
  b.field("split_k", Value::builtin("serial"));
  run(h, b);
  auto errs = h.errors(DiagKind::FieldType);
  REQUIRE(errs.size() == 2);
}

TEST_CASE("[field-range] tile, stages, cluster, split_k, filter", "[validate]") {
  struct Case {
    const char* field;
    Value value;
  };
  std::vector<Case> cases = {
      {"tile", int3(128, 120, 32)},
      {"tile", int3(128, 128, 0)},
      {"tile", int3(1LL << 40, 128, 32)},
      {"stages", Value::integer(9)},
      {"stages", Value::integer(1)},
      {"cluster", int3(0, 1, 1)},
      {"split_k", Value::integer(3)},
      {"split_k", Value::word(WordCategory::SplitK, "parallel", {Value::integer(65)})},
  };
  for (const Case& c : cases) {
    Harness h;
    auto b = KernelBuilder::gemm(h);
    b.field(c.field, c.value);
    CHECK(run(h, b).empty());
    INFO(c.field << " = " << c.value.toString() << ": " << h.dump());
    const Diagnostic* d = h.only(DiagKind::FieldRange);
    REQUIRE(d);
    CHECK(d->loc == b.fieldValueLoc(c.field));
  }
  Harness h;
  auto b = KernelBuilder::conv(h);
  b.field("filter", Value::tuple({Value::integer(0), Value::integer(3)}));
  CHECK(run(h, b).empty());
  CHECK(h.only(DiagKind::FieldRange));
}

TEST_CASE("[field-range] tile K must be whole MMA instructions", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.field("tile", int3(128, 128, 24));
  run(h, b);
  const Diagnostic* d = h.only(DiagKind::FieldRange);
  REQUIRE(d);
  CHECK(d->message == "tile K = 24 is not a multiple of 16, the K of one bf16 MMA instruction");
}

// ---- operands --------------------------------------------------------------------------------------

TEST_CASE("[operand-set] unexpected and missing operands", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.operand("E", dtype("bf16"), layout("row"));
  run(h, b);
  const Diagnostic* d = h.only(DiagKind::OperandSet);
  REQUIRE(d);
  CHECK(d->message == "gemm needs operands A, B, D (and optionally C); `E` is not one of them");
  CHECK(d->loc == b.rawOperand("E").nameLoc);

  Harness h2;
  auto b2 = KernelBuilder::gemm(h2);
  b2.without("D");
  run(h2, b2);
  const Diagnostic* d2 = h2.only(DiagKind::OperandSet);
  REQUIRE(d2);
  CHECK(contains(d2->message, "`D` is missing"));
  CHECK(d2->loc == b2.kernel().nameLoc);

  Harness h4;
  auto b4 = KernelBuilder::gemm(h4);
  b4.operand("c", dtype("bf16"), layout("row"));
  run(h4, b4);
  REQUIRE(h4.only(DiagKind::OperandSet));
  CHECK(contains(h4.errors(DiagKind::OperandSet)[0]->message, "did you mean `C`?"));

  Harness h3;
  auto b3 = KernelBuilder::conv(h3);
  b3.operand("A", dtype("f16"), layout("nhwc"));
  run(h3, b3);
  REQUIRE(h3.only(DiagKind::OperandSet));
  CHECK(contains(h3.errors(DiagKind::OperandSet)[0]->message, "conv2d_fprop needs operands X, W, Y"));
}

TEST_CASE("[operand-set] an operand declared twice", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  RawOperand copy = b.kernel().operands[0];
  copy.nameLoc.line += 1000;
  b.kernel().operands.push_back(copy);
  run(h, b);
  const Diagnostic* d = h.only(DiagKind::OperandSet);
  REQUIRE(d);
  REQUIRE(d->notes.size() == 1);
}

TEST_CASE("[operand-dtype] dtype words, f64, outputs, accum, mixing", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.operand("A", Value::string("bfl6"), layout("row"));
  run(h, b);
  const Diagnostic* d = h.only(DiagKind::OperandDtype);
  REQUIRE(d);
  CHECK(contains(d->message, "did you mean `bf16`?"));
  CHECK(d->loc == b.rawOperand("A").dtypeLoc);

  auto one = [](std::function<void(KernelBuilder&)> edit) {
    Harness hh;
    auto bb = KernelBuilder::gemm(hh);
    edit(bb);
    CHECK(run(hh, bb).empty());
    INFO(hh.dump());
    CHECK(hh.only(DiagKind::OperandDtype));
  };
  one([](KernelBuilder& k) { k.operand("A", dtype("f64"), layout("row")); });
  one([](KernelBuilder& k) { k.operand("B", dtype("s32"), layout("col")); });
  one([](KernelBuilder& k) { k.operand("D", dtype("tf32"), layout("row")); });
  one([](KernelBuilder& k) { k.field("accum", dtype("f16")); });
  one([](KernelBuilder& k) { k.operand("B", dtype("s8"), layout("col")); });
  one([](KernelBuilder& k) { k.operand("B", dtype("f16"), layout("col")); });
}

TEST_CASE("tf32 and f32 inputs pair; sm90a pairs e4m3 with e5m2", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h, "k", "tf32");
  b.operand("B", dtype("f32"), layout("col")).operand("D", dtype("f32"), layout("row"));
  CHECK(run(h, b).size() == 1);

  Harness h2;
  auto b2 = KernelBuilder::gemm(h2, "k", "e4m3", "sm90a");
  b2.operand("B", dtype("e5m2"), layout("col")).operand("D", dtype("bf16"), layout("row"));
  INFO(h2.dump());
  CHECK(run(h2, b2).size() == 1);

  Harness h3;
  auto b3 = KernelBuilder::gemm(h3, "k", "e4m3", "sm89");
  b3.operand("B", dtype("e5m2"), layout("col"));
  CHECK(run(h3, b3).empty());
  CHECK(h3.only(DiagKind::OperandDtype));
}

TEST_CASE("[operand-layout] gemm, conv and K-major rules", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.operand("A", dtype("bf16"), layout("nhwc"));
  run(h, b);
  const Diagnostic* d = h.only(DiagKind::OperandLayout);
  REQUIRE(d);
  CHECK(d->loc == b.rawOperand("A").layoutLoc);

  Harness h2;
  auto b2 = KernelBuilder::conv(h2);
  b2.operand("W", dtype("f16"), layout("nhwc"));
  run(h2, b2);
  REQUIRE(h2.only(DiagKind::OperandLayout));
  CHECK(h2.errors(DiagKind::OperandLayout)[0]->message == "conv2d_fprop takes `W` as `krsc`, not `nhwc`");

  Harness h3;
  auto b3 = KernelBuilder::gemm(h3, "k", "s8");
  b3.operand("B", dtype("s8"), layout("row"));
  run(h3, b3);
  REQUIRE(h3.only(DiagKind::OperandLayout));
  CHECK(contains(h3.errors(DiagKind::OperandLayout)[0]->message, "K-major"));

  Harness h4;
  auto b4 = KernelBuilder::gemm(h4);
  b4.operand("A", dtype("bf16"), Value::string("rows"));
  run(h4, b4);
  REQUIRE(h4.only(DiagKind::OperandLayout));
  CHECK(contains(h4.errors(DiagKind::OperandLayout)[0]->message, "did you mean `row`?"));
}

TEST_CASE("[alignment] legal values are powers of two dividing 16 bytes", "[validate]") {
  for (Value align : {Value::integer(16), Value::integer(3), Value::integer(0), Value::string("8")}) {
    Harness h;
    auto b = KernelBuilder::gemm(h);
    b.operand("A", dtype("bf16"), layout("row"), align);
    CHECK(run(h, b).empty());
    const Diagnostic* d = h.only(DiagKind::Alignment);
    REQUIRE(d);
    CHECK(contains(d->message, "`1`, `2`, `4` or `8`"));
    CHECK(d->loc == b.rawOperand("A").alignLoc);
  }
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.operand("A", dtype("bf16"), layout("row"), Value::integer(4));
  auto specs = run(h, b);
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].operands[0].align == 4);
  CHECK(specs[0].operands[0].alignOrigin == Origin::Explicit);
}

TEST_CASE("[alignment] the multistage path loads inputs in copies of at least 4 bytes", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.operand("B", dtype("bf16"), layout("col"), Value::integer(1));
  CHECK(run(h, b).empty());
  const Diagnostic* d = h.only(DiagKind::Alignment);
  REQUIRE(d);
  CHECK(d->loc == b.rawOperand("B").alignLoc);
  CHECK(contains(d->message, "use align 2 or more"));

  Harness ok;
  auto bo = KernelBuilder::gemm(ok);
  bo.operand("D", dtype("bf16"), layout("row"), Value::integer(1));
  CHECK(run(ok, bo).size() == 1);
}

// ---- arch rules -------------------------------------------------------------------------------------

TEST_CASE("[tile-shape] sm90a needs tile M a multiple of 64", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h, "k", "bf16", "sm90a");
  b.field("tile", int3(96, 128, 64));
  run(h, b);
  const Diagnostic* d = h.only(DiagKind::TileShape);
  REQUIRE(d);
  CHECK(d->message == "tile M = 96 is not a multiple of 64, which the sm90a wgmma path needs");
  CHECK(d->loc == b.fieldValueLoc("tile"));
  REQUIRE(d->notes.size() == 1);
  CHECK(d->notes[0].message == "arch set to sm90a here");
  CHECK(d->notes[0].loc == b.fieldValueLoc("arch"));
}

TEST_CASE("[tile-shape] multistage tiles, wgmma K, cooperative M", "[validate]") {
  auto one = [](const char* arch, Value tile, const char* schedule, const char* expectPart) {
    Harness h;
    auto b = KernelBuilder::gemm(h, "k", "bf16", arch);
    b.field("tile", tile);
    if (schedule) b.field("schedule", scheduleWord(schedule));
    CHECK(run(h, b).empty());
    INFO(h.dump());
    const Diagnostic* d = h.only(DiagKind::TileShape);
    REQUIRE(d);
    CHECK(contains(d->message, expectPart));
  };
  one("sm80", int3(96, 128, 32), nullptr, "not one of 32, 64, 128, 256");
  one("sm80", int3(128, 128, 128), nullptr, "64 or 128 bytes");
  one("sm90a", int3(128, 128, 16), nullptr, "multiple of 64 bytes");
  one("sm90a", int3(64, 128, 64), "cooperative", "multiple of 128");
  one("sm90a", int3(128, 512, 64), nullptr, "larger than 256");
  one("sm90a", int3(96, 128, 32), "multistage", "not one of 32, 64, 128, 256");
}

TEST_CASE("[arch-feature] fp8 needs sm89; clusters need sm90a", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h, "k", "e4m3", "sm80");
  b.operand("D", dtype("bf16"), layout("row"));
  run(h, b);
  auto errs = h.errors(DiagKind::ArchFeature);
  REQUIRE(errs.size() == 2);  // A and B
  CHECK(errs[0]->loc == b.rawOperand("A").dtypeLoc);
  REQUIRE(errs[0]->notes.size() == 1);
  CHECK(errs[0]->notes[0].message == "arch set to sm80 here");

  Harness h2;
  auto b2 = KernelBuilder::gemm(h2);
  b2.field("cluster", int3(2, 1, 1));
  run(h2, b2);
  const Diagnostic* d = h2.only(DiagKind::ArchFeature);
  REQUIRE(d);
  CHECK(d->loc == b2.fieldValueLoc("cluster"));
}

TEST_CASE("[cluster] at most 8 blocks, K of 1, not with multistage", "[validate]") {
  for (Value cl : {int3(4, 4, 1), int3(1, 1, 2)}) {
    Harness h;
    auto b = KernelBuilder::gemm(h, "k", "bf16", "sm90a");
    b.field("cluster", cl);
    CHECK(run(h, b).empty());
    CHECK(h.only(DiagKind::Cluster));
  }
  Harness h;
  auto b = KernelBuilder::gemm(h, "k", "bf16", "sm90a");
  b.field("cluster", int3(2, 1, 1)).field("schedule", scheduleWord("multistage"));
  CHECK(run(h, b).empty());
  CHECK(h.only(DiagKind::Cluster));

  Harness ok;
  auto bo = KernelBuilder::gemm(ok, "k", "bf16", "sm90a");
  bo.field("cluster", int3(2, 1, 1));
  auto specs = run(ok, bo);
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].cluster.value == std::array<int, 3>{2, 1, 1});
}

TEST_CASE("[schedule] cooperative and pingpong need sm90a", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.field("schedule", scheduleWord("cooperative"));
  run(h, b);
  const Diagnostic* d = h.only(DiagKind::Schedule);
  REQUIRE(d);
  CHECK(d->loc == b.fieldValueLoc("schedule"));
  REQUIRE(d->notes.size() == 1);
  CHECK(d->notes[0].message == "arch set to sm80 here");
}

TEST_CASE("[shared-memory] explicit stages that do not fit", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h);
  b.field("tile", int3(128, 256, 64)).field("stages", Value::integer(4));
  run(h, b);
  const Diagnostic* d = h.only(DiagKind::SharedMemory);
  REQUIRE(d);
  CHECK(d->message ==
        "4 stages of a 128x256x64 bf16 tile need 196608 bytes of shared memory; sm80 allows 166912 per block; "
        "at most 3 stages fit");
  CHECK(d->loc == b.fieldValueLoc("stages"));
}

TEST_CASE("[shared-memory] auto stages when not even 2 fit", "[validate]") {
  Harness h;
  auto b = KernelBuilder::gemm(h, "k", "tf32", "sm86");
  b.operand("D", dtype("f32"), layout("row"));
  b.field("tile", int3(256, 256, 32));
  run(h, b);
  const Diagnostic* d = h.only(DiagKind::SharedMemory);
  REQUIRE(d);
  CHECK(d->loc == b.fieldValueLoc("tile"));
  CHECK(contains(d->message, "2 stages of a 256x256x32 tf32 tile need 131072 bytes"));
}

// ---- epilogue ----------------------------------------------------------------------------------------

TEST_CASE("a bias + gelu epilogue builds a typed tree", "[validate]") {
  Harness h;
  Epi e{h};
  auto b = KernelBuilder::gemm(h);
  b.operand("C", dtype("bf16"), layout("row"));
  b.param("alpha", Value::floating(1.0)).input("bias", dtype("f32"), "col");
  b.let("y", e.bin(BinaryOp::Mul, e.name("alpha"), e.name("acc")));
  b.assign("D", e.call("gelu", {e.bin(BinaryOp::Add, e.bin(BinaryOp::Add, e.name("y"), e.name("C")), e.name("bias"))}));
  b.output("amax", dtype("f32"), Value(), e.call("max", {e.call("abs", {e.name("D")})}));
  b.output("Z", dtype("bf16"), layout("row"), e.name("acc"));
  auto specs = run(h, b);
  INFO(h.dump());
  REQUIRE(specs.size() == 1);
  const Epilogue& epi = specs[0].epilogue;
  CHECK_FALSE(epi.implicit);
  CHECK(epi.usesSource);
  REQUIRE(epi.inputs.size() == 1);
  CHECK(epi.inputs[0].broadcast == Broadcast::Col);
  REQUIRE(epi.lets.size() == 1);
  REQUIRE(epi.outputs.size() == 3);
  CHECK(epi.outputs[0].name == "D");
  CHECK(epi.outputs[0].value.op == EpiOp::Gelu);
  CHECK(epi.outputs[1].kind == EpiOutput::Kind::AmaxReduction);
  CHECK(epi.outputs[1].value.op == EpiOp::Output);
  CHECK(epi.outputs[1].value.index == 0);
  CHECK(epi.outputs[2].kind == EpiOutput::Kind::Tensor);
  CHECK(epi.outputs[2].dtype == DType::BF16);
}

TEST_CASE("select, comparisons, ternary and cast type-check", "[validate]") {
  Harness h;
  Epi e{h};
  auto b = KernelBuilder::gemm(h);
  b.assign("D", e.bin(BinaryOp::Add,
                      e.call("select", {e.bin(BinaryOp::And, e.bin(BinaryOp::Gt, e.name("acc"), e.num(0)),
                                               e.un(ast::UnaryOp::Not, e.bin(BinaryOp::Gt, e.name("acc"), e.num(6)))),
                                        e.name("acc"), e.num(0)}),
                      e.call("cast", {e.constant(dtype("bf16")), e.ternary(e.bin(BinaryOp::Lt, e.name("acc"), e.num(1)),
                                                                          e.num(1), e.num(2))})));
  auto specs = run(h, b);
  INFO(h.dump());
  REQUIRE(specs.size() == 1);
  const EpiNode& v = specs[0].epilogue.outputs[0].value;
  REQUIRE(v.args.size() == 2);
  CHECK(v.args[0].op == EpiOp::Select);
  CHECK(v.args[1].op == EpiOp::Cast);
  CHECK(v.args[1].castTo == DType::BF16);
  REQUIRE(v.args[1].args.size() == 1);
  CHECK(v.args[1].args[0].op == EpiOp::Select);
}

TEST_CASE("[epilogue-name] unknown names, functions, operands, redeclarations", "[validate]") {
  {
    Harness h;
    Epi e{h};
    auto b = KernelBuilder::gemm(h);
    b.input("bias", dtype("f32"), "col");
    EpiExpr bad = e.name("biass");
    SourceLoc at = bad.loc;
    b.assign("D", e.bin(BinaryOp::Add, e.name("acc"), std::move(bad)));
    run(h, b);
    const Diagnostic* d = h.only(DiagKind::EpilogueName);
    REQUIRE(d);
    CHECK(d->message == "`biass` is not declared in this epilogue, did you mean `bias`?");
    CHECK(d->loc == at);
  }
  {
    Harness h;
    Epi e{h};
    auto b = KernelBuilder::gemm(h);
    EpiExpr call = e.call("gellu", {e.name("acc")});
    SourceLoc at = call.nameLoc;
    b.assign("D", std::move(call));
    run(h, b);
    const Diagnostic* d = h.only(DiagKind::EpilogueName);
    REQUIRE(d);
    CHECK(contains(d->message, "did you mean `gelu`?"));
    CHECK(d->loc == at);
  }
  for (const char* n : {"A", "C", "D"}) {
    Harness h;
    Epi e{h};
    auto b = KernelBuilder::gemm(h);
    b.assign("D", e.name(n));
    run(h, b);
    INFO(n << ": " << h.dump());
    CHECK(h.only(DiagKind::EpilogueName));
  }
  {
    Harness h;
    Epi e{h};
    auto b = KernelBuilder::gemm(h);
    b.param("x", Value::floating(1)).input("x", dtype("f32"), "").assign("D", e.name("acc"));
    run(h, b);
    const Diagnostic* d = h.only(DiagKind::EpilogueName);
    REQUIRE(d);
    CHECK(d->notes.size() == 1);
  }
}

TEST_CASE("[epilogue-arity] functions take their number of arguments", "[validate]") {
  Harness h;
  Epi e{h};
  auto b = KernelBuilder::gemm(h);
  b.assign("D", e.call("clamp", {e.name("acc"), e.num(0)}));
  run(h, b);
  const Diagnostic* d = h.only(DiagKind::EpilogueArity);
  REQUIRE(d);
  CHECK(d->message == "`clamp` takes 3 arguments (x, lo, hi), not 2");
}

TEST_CASE("[epilogue-broadcast] gemm takes row/col/[], conv takes channel/[]", "[validate]") {
  Harness h;
  Epi e{h};
  auto b = KernelBuilder::gemm(h);
  b.input("bias", dtype("f32"), "channel").assign("D", e.bin(BinaryOp::Add, e.name("acc"), e.name("bias")));
  run(h, b);
  REQUIRE(h.only(DiagKind::EpilogueBroadcast));

  Harness h2;
  Epi e2{h2};
  auto b2 = KernelBuilder::conv(h2);
  b2.input("bias", dtype("f32"), "chanel").assign("Y", e2.bin(BinaryOp::Add, e2.name("acc"), e2.name("bias")));
  run(h2, b2);
  const Diagnostic* d = h2.only(DiagKind::EpilogueBroadcast);
  REQUIRE(d);
  CHECK(contains(d->message, "did you mean `channel`?"));

  Harness h3;
  Epi e3{h3};
  auto b3 = KernelBuilder::conv(h3);
  b3.input("bias", dtype("f32"), "channel").assign("Y", e3.call("relu", {e3.bin(BinaryOp::Add, e3.name("acc"), e3.name("bias"))}));
  auto specs = run(h3, b3);
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].epilogue.inputs[0].broadcast == Broadcast::Channel);
}

TEST_CASE("[epilogue-output] the output is assigned exactly once", "[validate]") {
  {
    Harness h;
    auto b = KernelBuilder::gemm(h);
    b.param("alpha", Value::floating(1));
    run(h, b);
    const Diagnostic* d = h.only(DiagKind::EpilogueOutput);
    REQUIRE(d);
    CHECK(d->loc == b.kernel().epilogue->loc);
  }
  {
    Harness h;
    Epi e{h};
    auto b = KernelBuilder::gemm(h);
    b.assign("D", e.name("acc")).assign("D", e.name("acc"));
    run(h, b);
    const Diagnostic* d = h.only(DiagKind::EpilogueOutput);
    REQUIRE(d);
    CHECK(d->loc == b.kernel().epilogue->items[1].nameLoc);
    REQUIRE(d->notes.size() == 1);
    CHECK(d->notes[0].message == "first assigned here");
  }
  {
    Harness h;
    Epi e{h};
    auto b = KernelBuilder::gemm(h);
    b.assign("D", e.name("acc")).assign("E", e.name("acc"));
    run(h, b);
    REQUIRE(h.only(DiagKind::EpilogueOutput));
  }
  {
    // Assigning the gemm name in a conv kernel: one error, not also "Y is never assigned".
    Harness h;
    Epi e{h};
    auto b = KernelBuilder::conv(h);
    b.assign("D", e.name("acc"));
    run(h, b);
    const Diagnostic* d = h.only(DiagKind::EpilogueOutput);
    REQUIRE(d);
    CHECK(contains(d->message, "`D` is not an output of this kernel; the op's output is `Y`"));
  }
  {
    Harness h;
    Epi e{h};
    auto b = KernelBuilder::gemm(h);
    b.operand("C", dtype("bf16"), layout("row"));
    b.assign("D", e.name("acc")).assign("C", e.name("acc"));
    run(h, b);
    const Diagnostic* d = h.only(DiagKind::EpilogueOutput);
    REQUIRE(d);
    CHECK(contains(d->message, "`C` is the source operand (an input), not an output"));
  }
  {
    Harness h;
    Epi e{h};
    auto b = KernelBuilder::gemm(h);
    b.assign("D", e.name("acc")).output("amax", dtype("f32"), Value(), e.call("abs", {e.name("D")}));
    run(h, b);
    const Diagnostic* d = h.only(DiagKind::EpilogueOutput);
    REQUIRE(d);
    CHECK(d->message == "an output without a layout is a reduction and must be `max(abs(x))`");
  }
  {
    Harness h;
    Epi e{h};
    auto b = KernelBuilder::gemm(h);
    b.assign("D", e.name("acc")).output("amax", dtype("bf16"), Value(), e.call("max", {e.call("abs", {e.name("D")})}));
    run(h, b);
    REQUIRE(h.only(DiagKind::EpilogueOutput));
  }
  {
    Harness h;
    Epi e{h};
    auto b = KernelBuilder::gemm(h);
    b.output("Z", dtype("f32"), layout("row"), std::nullopt).assign("D", e.name("acc"));
    run(h, b);
    REQUIRE(h.only(DiagKind::EpilogueOutput));
  }
}

TEST_CASE("an output declared without a value can be assigned later", "[validate]") {
  Harness h;
  Epi e{h};
  auto b = KernelBuilder::gemm(h);
  b.output("Z", dtype("f32"), layout("row"), std::nullopt).assign("D", e.name("acc")).assign("Z", e.name("acc"));
  auto specs = run(h, b);
  INFO(h.dump());
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].epilogue.outputs.size() == 2);
}

TEST_CASE("[epilogue-type] booleans, dtypes, strings and %", "[validate]") {
  auto one = [](std::function<EpiExpr(Epi&)> make) {
    Harness h;
    Epi e{h};
    auto b = KernelBuilder::gemm(h);
    b.assign("D", make(e));
    CHECK(run(h, b).empty());
    INFO(h.dump());
    CHECK(h.only(DiagKind::EpilogueType));
  };
  one([](Epi& e) { return e.bin(BinaryOp::Gt, e.name("acc"), e.num(0)); });
  one([](Epi& e) { return e.bin(BinaryOp::And, e.bin(BinaryOp::Gt, e.name("acc"), e.num(0)), e.num(1)); });
  one([](Epi& e) { return e.bin(BinaryOp::Add, e.bin(BinaryOp::Gt, e.name("acc"), e.num(0)), e.num(1)); });
  one([](Epi& e) { return e.call("select", {e.name("acc"), e.num(1), e.num(2)}); });
  one([](Epi& e) { return e.call("cast", {e.name("acc"), e.name("acc")}); });
  one([](Epi& e) { return e.bin(BinaryOp::Mod, e.name("acc"), e.num(2)); });
  one([](Epi& e) { return e.constant(Value::string("x")); });
  one([](Epi& e) { return e.constant(dtype("bf16")); });
  one([](Epi& e) { return e.constant(Value::boolean(true)); });

  Harness h;
  Epi e{h};
  auto b = KernelBuilder::gemm(h);
  b.param("alpha", Value::string("one")).assign("D", e.name("acc"));
  CHECK(run(h, b).empty());
  CHECK(h.only(DiagKind::EpilogueType));
}

TEST_CASE("unused params and inputs are warnings, not errors", "[validate]") {
  Harness h;
  Epi e{h};
  auto b = KernelBuilder::gemm(h);
  b.param("alpha", Value::floating(1)).input("bias", dtype("f32"), "row").assign("D", e.name("acc"));
  auto specs = run(h, b);
  CHECK(specs.size() == 1);
  CHECK(h.diags.errorCount() == 0);
  REQUIRE(h.diags.all().size() == 2);
  CHECK(h.diags.all()[0].severity == Severity::Warning);
  CHECK(h.diags.all()[0].message == "param `alpha` is declared but never used");
}

TEST_CASE("malformed epilogue trees are reported, never accepted", "[validate]") {
  Harness h;
  Epi e{h};
  EpiExpr broken = e.bin(BinaryOp::Add, e.name("acc"), e.num(1));
  broken.args.pop_back();
  auto b = KernelBuilder::gemm(h);
  b.assign("D", std::move(broken));
  CHECK(run(h, b).empty());
  CHECK(h.only(DiagKind::EpilogueType));
}

TEST_CASE("deeply nested epilogues are reported, not overflowed", "[validate]") {
  Harness h;
  Epi e{h};
  EpiExpr x = e.name("acc");
  for (int i = 0; i < 5000; ++i) x = e.un(ast::UnaryOp::Neg, std::move(x));
  auto b = KernelBuilder::gemm(h);
  b.assign("D", std::move(x));
  CHECK(run(h, b).empty());
  CHECK(h.only(DiagKind::RecursionLimit));
}

TEST_CASE("all errors of a kernel are reported together", "[validate]") {
  Harness h;
  Epi e{h};
  auto b = KernelBuilder::gemm(h);
  b.field("tiel", int3(1, 2, 3)).field("stages", Value::integer(99));
  b.operand("A", dtype("bf16"), layout("row"), Value::integer(3));
  b.assign("D", e.name("nope"));
  run(h, b);
  INFO(h.dump());
  CHECK(h.errors(DiagKind::UnknownField).size() == 1);
  CHECK(h.errors(DiagKind::FieldRange).size() == 1);
  CHECK(h.errors(DiagKind::Alignment).size() == 1);
  CHECK(h.errors(DiagKind::EpilogueName).size() == 1);
}

// ---- end to end: source text through the evaluator -------------------------------------------------

#include <fstream>
#include <sstream>

#include "dsl/eval/evaluator.h"
#include "dsl/frontend.h"
#include "tools/kdlc/list.h"

namespace {

struct Frontend {
  SourceManager sm;
  DiagEngine diags{1000};
  std::vector<KernelSpec> specs;

  explicit Frontend(std::string text, std::string path = "test.kdl") {
    specs = runFrontendOnText(sm, path, std::move(text), diags).specs;
  }
  static Frontend file(const std::string& path) {
    Frontend f;
    f.specs = runFrontend(f.sm, path, f.diags).specs;
    return f;
  }
  const KernelSpec* spec(const std::string& n) const {
    for (const KernelSpec& s : specs)
      if (s.name == n) return &s;
    return nullptr;
  }
  std::string text() const { return renderText(sm, diags); }
  std::string render(const std::string& n) const {
    const KernelSpec* s = spec(n);
    return s ? renderEpiNode(s->epilogue, s->epilogue.outputs[0].value) : "<no kernel " + n + ">";
  }

 private:
  Frontend() = default;
};

std::string example(const char* name) { return std::string(KDL_SHARED_DIR) + "/spec/examples/" + name; }

}  // namespace

TEST_CASE("e2e: examples/gemm_basic.kdl", "[validate][e2e]") {
  Frontend f = Frontend::file(example("gemm_basic.kdl"));
  INFO(f.text());
  REQUIRE(f.diags.errorCount() == 0);
  REQUIRE(f.specs.size() == 1);
  const KernelSpec& s = f.specs[0];
  CHECK(s.name == "gemm_bf16_tn");
  CHECK(s.arch.value == Arch::SM80);
  CHECK(s.tile.value == std::array<int, 3>{128, 128, 32});
  CHECK(s.stages.value == 4);
  CHECK(s.stages.origin == Origin::Explicit);
  CHECK(s.schedule.value == Schedule::Multistage);
  CHECK(s.operands.size() == 4);
  CHECK(s.epilogue.implicit);
  CHECK(f.render("gemm_bf16_tn") == "alpha * acc + beta * C");
}

TEST_CASE("e2e: examples/gemm_epilogues.kdl", "[validate][e2e]") {
  Frontend f = Frontend::file(example("gemm_epilogues.kdl"));
  INFO(f.text());
  REQUIRE(f.diags.errorCount() == 0);
  REQUIRE(f.specs.size() == 3);
  CHECK(f.render("gemm_f16_bias_relu") == "relu(acc + bias)");
  CHECK(f.spec("gemm_f16_bias_relu")->epilogue.inputs[0].broadcast == Broadcast::Col);
  CHECK(f.render("gemm_f16_scale_gelu") == "gelu(alpha * acc) * scale");
  CHECK(f.spec("gemm_f16_scale_gelu")->epilogue.inputs[0].broadcast == Broadcast::Row);
  const KernelSpec* aux = f.spec("gemm_f32_tf32_aux");
  REQUIRE(aux);
  CHECK(f.render("gemm_f32_tf32_aux") == "alpha * acc + beta * C");
  CHECK(aux->epilogue.usesSource);
  REQUIRE(aux->epilogue.outputs.size() == 2);
  CHECK(aux->epilogue.outputs[1].name == "Z");
  CHECK(aux->epilogue.outputs[1].kind == EpiOutput::Kind::Tensor);
  CHECK(aux->tile.value == std::array<int, 3>{128, 128, 32});
}

TEST_CASE("e2e: examples/gemm_sweep.kdl", "[validate][e2e]") {
  Frontend f = Frontend::file(example("gemm_sweep.kdl"));
  INFO(f.text());
  REQUIRE(f.diags.errorCount() == 0);
  REQUIRE(f.specs.size() == 12);
  const KernelSpec* bf = f.spec("gemm_bf16_128x256x64_c2");
  REQUIRE(bf);
  CHECK(bf->templateName == "hopper_gemm");
  CHECK(bf->cluster.value == std::array<int, 3>{2, 1, 1});
  CHECK(bf->cluster.origin == Origin::Template);
  CHECK(bf->schedule.value == Schedule::Cooperative);
  CHECK(bf->stages.origin == Origin::Auto);
  const KernelSpec* fp8 = f.spec("gemm_e4m3_64x256x128_c1");
  REQUIRE(fp8);
  CHECK(fp8->schedule.value == Schedule::Pingpong);
  CHECK(fp8->operands[0].dtype == DType::E4M3);
  CHECK(fp8->operands.back().dtype == DType::BF16);
  CHECK(f.render("gemm_e4m3_64x256x128_c1") == "acc * scale_a * scale_b");
}

TEST_CASE("e2e: examples/conv_fprop.kdl", "[validate][e2e]") {
  Frontend f = Frontend::file(example("conv_fprop.kdl"));
  INFO(f.text());
  REQUIRE(f.diags.errorCount() == 0);
  REQUIRE(f.specs.size() == 1);
  CHECK(f.specs[0].op.value == Op::Conv2dFprop);
  CHECK(f.render("conv_fprop_f16_relu") == "relu(acc + bias)");
  CHECK(f.specs[0].epilogue.inputs[0].broadcast == Broadcast::Channel);
}

TEST_CASE("e2e: a convolution's residual is its source operand, laid out like its output", "[validate][e2e]") {
  Frontend f(
      "kernel fprop {\n"
      "  op = conv2d_fprop; arch = sm80;\n"
      "  Y : f16 nhwc; residual : bf16 nhwc; W : f16 krsc; X : f16 nhwc;\n"
      "  epilogue { input bias : f32 [channel]; Y = relu(acc + bias + residual); }\n"
      "}\n"
      "kernel wgrad {\n"
      "  op = conv2d_wgrad; arch = sm80;\n"
      "  residual : f32 krsc; W : f32 krsc; X : f16 nhwc; Y : f16 nhwc;\n"
      "}\n"
      "kernel plain {\n"
      "  op = conv2d_dgrad; arch = sm80;\n"
      "  X : f16 nhwc; W : f16 krsc; Y : f16 nhwc;\n"
      "}\n");
  INFO(f.text());
  REQUIRE(f.diags.errorCount() == 0);
  const KernelSpec* fprop = f.spec("fprop");
  REQUIRE(fprop);
  // Inputs, then the residual, then the output, whatever the order written (like A, B, [C], D).
  std::vector<std::string> order;
  for (const Operand& o : fprop->operands) order.push_back(o.name);
  CHECK(order == std::vector<std::string>{"X", "W", "residual", "Y"});
  CHECK(fprop->epilogue.usesSource);
  CHECK(fprop->epilogue.sourceName == "residual");
  CHECK(f.render("fprop") == "relu(acc + bias + residual)");
  // Without an epilogue block: GEMM's implicit scaling, with the residual as C.
  const KernelSpec* wgrad = f.spec("wgrad");
  REQUIRE(wgrad);
  order.clear();
  for (const Operand& o : wgrad->operands) order.push_back(o.name);
  CHECK(order == std::vector<std::string>{"Y", "X", "residual", "W"});
  CHECK(wgrad->operand("residual")->layout == Layout::KRSC);
  CHECK(wgrad->epilogue.implicit);
  CHECK(wgrad->epilogue.usesSource);
  CHECK(f.render("wgrad") == "alpha * acc + beta * residual");
  REQUIRE(wgrad->epilogue.params.size() == 2);
  CHECK(wgrad->epilogue.params[1].name == "beta");
  CHECK(wgrad->epilogue.params[1].defaultValue == 0.0);
  // No residual: alpha * acc only, and no source read.
  const KernelSpec* plain = f.spec("plain");
  REQUIRE(plain);
  CHECK(!plain->epilogue.usesSource);
  CHECK(f.render("plain") == "alpha * acc");
}

// The worked example of docs/language.md §9 is valid KDL, and samples/kernels/conv.kdl holds its kernels
// unchanged (same operands, fields and epilogues), so the documented layer is the one the samples build.
TEST_CASE("e2e: docs/language.md's convolution example is valid and is samples/kernels/conv.kdl's layer",
          "[validate][e2e]") {
  std::ifstream in(std::string(KDL_SOURCE_DIR) + "/docs/language.md");
  std::stringstream text;
  text << in.rdbuf();
  std::string doc = text.str();
  size_t section = doc.find("## 9. Convolutions");
  REQUIRE(section != std::string::npos);
  size_t begin = doc.find("```kdl\n", section);
  REQUIRE(begin != std::string::npos);
  begin += 7;
  size_t end = doc.find("```", begin);
  REQUIRE(end != std::string::npos);
  Frontend example(doc.substr(begin, end - begin), "language.md");
  INFO(example.text());
  REQUIRE(example.diags.errorCount() == 0);
  REQUIRE(example.specs.size() == 3);

  Frontend sample = Frontend::file(std::string(KDL_SOURCE_DIR) + "/samples/kernels/conv.kdl");
  INFO(sample.text());
  REQUIRE(sample.diags.errorCount() == 0);
  for (const KernelSpec& e : example.specs) {
    const KernelSpec* s = sample.spec(e.name);
    REQUIRE(s);
    CHECK(s->op.value == e.op.value);
    REQUIRE(s->operands.size() == e.operands.size());
    for (size_t i = 0; i < e.operands.size(); ++i) {
      CHECK(s->operands[i].name == e.operands[i].name);
      CHECK(s->operands[i].dtype == e.operands[i].dtype);
      CHECK(s->operands[i].layout == e.operands[i].layout);
    }
    CHECK(s->filter.value == e.filter.value);
    CHECK(s->splitK.value == e.splitK.value);
    CHECK(s->splitKSlices.value == e.splitKSlices.value);
    CHECK(sample.render(e.name) == example.render(e.name));
  }
}

TEST_CASE("e2e: an sm90a convolution resolves to the multistage path's defaults", "[validate][e2e]") {
  Frontend f(
      "kernel k {\n"
      "  op = conv2d_fprop; arch = sm90a;\n"
      "  X : bf16 nhwc; W : bf16 krsc; Y : bf16 nhwc;\n"
      "}\n"
      "kernel g {\n"
      "  op = gemm; arch = sm90a;\n"
      "  A : bf16 row; B : bf16 col; D : bf16 row;\n"
      "}\n");
  INFO(f.text());
  REQUIRE(f.diags.errorCount() == 0);
  const KernelSpec* k = f.spec("k");
  REQUIRE(k);
  CHECK(k->schedule.value == Schedule::Multistage);
  CHECK(k->tile.value == std::array<int, 3>{128, 128, 32});  // K of 64 bytes, the multistage default
  CHECK(k->stages.value == 4);
  // The gemm beside it keeps its wgmma defaults.
  const KernelSpec* g = f.spec("g");
  REQUIRE(g);
  CHECK(g->schedule.value == Schedule::Cooperative);
  CHECK(g->tile.value == std::array<int, 3>{128, 128, 64});
}

TEST_CASE("e2e: `groups` is an unknown field with a note that kdl generates groups = 1", "[validate][e2e]") {
  Frontend f(
      "kernel k {\n"
      "  op = conv2d_fprop; arch = sm80;\n"
      "  X : f16 nhwc; W : f16 krsc; Y : f16 nhwc;\n"
      "  groups = 2;\n"
      "}\n");
  REQUIRE(f.diags.errorCount() == 1);
  const Diagnostic& d = f.diags.all()[0];
  CHECK(d.kind == DiagKind::UnknownField);
  REQUIRE(d.notes.size() == 1);
  CHECK(contains(d.notes[0].message, "groups = 1"));
}

TEST_CASE("e2e: the sketch's tile-shape diagnostic, exactly", "[validate][e2e]") {
  Frontend f(
      "// a\n"
      "kernel g {\n"
      "  op = gemm;\n"
      "  arch   = sm90a;\n"
      "  A : bf16 row;\n"
      "  B : bf16 col;\n"
      "  D : bf16 row;\n"
      "  accum = f32;\n"
      "\n"
      "\n"
      "\n"
      "  tile = (96, 128, 64);\n"
      "}\n",
      "gemm.kdl");
  CHECK(f.text() ==
        "gemm.kdl:12:10: error: tile M = 96 is not a multiple of 64, which the sm90a wgmma path needs [tile-shape]\n"
        "   12 |   tile = (96, 128, 64);\n"
        "      |          ^~~~~~~~~~~~~\n"
        "gemm.kdl:4:12: note: arch set to sm90a here\n"
        "    4 |   arch   = sm90a;\n"
        "      |            ^~~~~\n");
}

TEST_CASE("e2e: located diagnostics from source", "[validate][e2e]") {
  Frontend f(
      "for t in [(128, 128, 32), (64, 64, 32)] {\n"
      "  kernel \"k_${t[0]}\" { op = gemm; arch = sm80; A : \"bf16\" row; B : bf16 col; D : bf16 row; tile = t; }\n"
      "}\n"
      "kernel k_128 { op = gemm; arch = sm80; A : bf16 row; B : bf16 col; D : bf16 row; tiel = (1, 2, 3); }\n"
      "kernel \"bad-name\" { op = gemm; arch = sm80; A : bf16 row; B : bf16 col; D : bf16 row; }\n");
  std::string text = f.text();
  INFO(text);
  CHECK(f.specs.empty());
  CHECK(contains(text, "test.kdl:2:52: error: the dtype of `A` must be one of"));
  CHECK(contains(text, "not the string \"bf16\"; write `bf16` without quotes [operand-dtype]"));
  CHECK(contains(text, "test.kdl:4:8: error: a kernel named `k_128` is already defined [duplicate-kernel]"));
  CHECK(contains(text, "test.kdl:2:10: note: first defined here"));
  CHECK(contains(text, "test.kdl:4:82: error: kernels have no field `tiel`, did you mean `tile`? [unknown-field]"));
  CHECK(contains(text, "test.kdl:5:8: error: kernel name `bad-name` is not a valid C identifier"));
}

TEST_CASE("e2e: epilogue names and the list of a source kernel", "[validate][e2e]") {
  Frontend f(
      "let slope = 0.25;\n"
      "kernel k {\n"
      "  op = gemm; arch = sm80; A : bf16 row; B : bf16 col; D : bf16 row;\n"
      "  epilogue {\n"
      "    input bias : f32 [col];\n"
      "    let y = acc + bias;\n"
      "    D = cast(bf16, leaky_relu(y, slope));\n"
      "    output amax : f32 = max(abs(D));\n"
      "  }\n"
      "}\n");
  INFO(f.text());
  REQUIRE(f.diags.errorCount() == 0);
  CHECK(f.render("k") == "cast(bf16, leaky_relu(y, 0.25))");
  std::string list = renderSpecsText(f.sm, f.specs);
  CHECK(contains(list, "  epilogue                       # test.kdl:4:3\n"));
  CHECK(contains(list, "    output amax : f32 = max(abs(D));\n"));
}

TEST_CASE("a kernel with an evaluation error still reports independent errors", "[validate][poisoned]") {
  kdl::SourceManager sm;
  kdl::DiagEngine diags;
  auto r = kdl::runFrontendOnText(sm, "p.kdl",
                                  "kernel g {\n"
                                  "  op = gemm; arch = sm80;\n"
                                  "  A : bf61 row; B : bf16 col; D : bf16 row;\n"
                                  "  tiel = 3;\n"
                                  "  epilogue { input bias : f32 [chanel]; D = relu(acc, bias); }\n"
                                  "}\n",
                                  diags);
  CHECK(r.specs.empty());
  std::vector<std::string> ids;
  for (const kdl::Diagnostic& d : diags.sorted()) ids.push_back(kdl::diagId(d.kind));
  // the typo, then what it cannot have caused; nothing about operand A's dtype or a missing field
  CHECK(ids == std::vector<std::string>{"undefined-name", "unknown-field", "epilogue-broadcast", "epilogue-arity"});
}

// ---- fp8 scaling: block scales and promotion (dsl/check/validate_scaling.cpp) ---------------------

namespace {
// An sm90a e4m3 GEMM; `a`/`b` are the operand suffixes, `extra` more fields.
std::string fp8Kernel(const std::string& a, const std::string& b, const std::string& extra = "",
                      const std::string& types = "e4m3") {
  return "kernel k {\n  op = gemm; arch = sm90a;\n  A : " + types + " row" + a + "; B : " + types + " col" + b +
         "; D : bf16 row;\n  " + extra + "\n}\n";
}
std::vector<std::string> diagIds(const Frontend& f) {
  std::vector<std::string> ids;
  for (const Diagnostic& d : f.diags.sorted()) ids.push_back(diagId(d.kind));
  return ids;
}
}  // namespace

TEST_CASE("block scales resolve with promotion every k-tile and a tile K of 128", "[validate][scaling]") {
  Frontend f(fp8Kernel(" scale (1, 128)", " scale (128, 128)"));
  INFO(f.text());
  REQUIRE(f.diags.errorCount() == 0);
  const KernelSpec& s = f.specs.at(0);
  REQUIRE(s.operands[0].scaleBlock);
  CHECK(*s.operands[0].scaleBlock == std::array<int, 2>{1, 128});
  CHECK(s.operands[0].scaleLoc == SourceLoc{1, 3, 22, 8});
  REQUIRE(s.operands[1].scaleBlock);
  CHECK(*s.operands[1].scaleBlock == std::array<int, 2>{128, 128});
  CHECK_FALSE(s.operands[2].scaleBlock);
  CHECK(s.promoteEvery.value == 1);
  CHECK(s.promoteEvery.origin == Origin::Default);
  CHECK(s.tile.value == std::array<int, 3>{128, 128, 128});
  CHECK(s.tile.origin == Origin::Default);
  CHECK(s.schedule.value == Schedule::Cooperative);
  std::string list = renderSpecsText(f.sm, f.specs);
  INFO(list);
  CHECK(contains(list, "  A        : e4m3 row align 16 scale (1, 128) # test.kdl:3:3, align default\n"));
  CHECK(contains(list, "  promotion = 1                  # default, test.kdl:1:8\n"));
  std::string json = renderSpecsJson(f.sm, f.specs);
  CHECK(contains(json, "\"align_origin\":\"default\",\"scale\":[1,128],"));
  CHECK(contains(json, "\"promotion\":{\"value\":\"1\",\"origin\":\"default\""));
}

TEST_CASE("block scales and promotion are expressions, from templates too", "[validate][scaling]") {
  Frontend f(
      "let bk = 128;\n"
      "template scaled(blockB, every = 1) {\n"
      "  op = gemm; arch = sm90a; tile = (128, 128, bk);\n"
      "  A : e4m3 row scale (1, bk); B : e5m2 col scale blockB; D : f32 row;\n"
      "  promotion = every;\n"
      "}\n"
      "kernel t1 = scaled((bk, bk));\n"
      "kernel plain { op = gemm; arch = sm90a; A : e4m3 row; B : e4m3 col; D : bf16 row; promotion = 2 * 2; }\n"
      "kernel fast_acc { op = gemm; arch = sm90a; A : e4m3 row; B : e4m3 col; D : bf16 row; promotion = fast; }\n"
      "kernel dflt { op = gemm; arch = sm90a; A : e4m3 row; B : e4m3 col; D : bf16 row; }\n"
      "kernel bf { op = gemm; arch = sm90a; A : bf16 row; B : bf16 col; D : bf16 row; }\n");
  INFO(f.text());
  REQUIRE(f.diags.errorCount() == 0);
  const KernelSpec* t1 = f.spec("t1");
  REQUIRE(t1);
  CHECK(*t1->operands[1].scaleBlock == std::array<int, 2>{128, 128});
  CHECK(t1->promoteEvery.value == 1);
  CHECK(t1->promoteEvery.origin == Origin::Template);
  CHECK(f.spec("plain")->promoteEvery.value == 4);
  CHECK(f.spec("plain")->promoteEvery.origin == Origin::Explicit);
  CHECK(f.spec("fast_acc")->promoteEvery.value == 0);
  CHECK(f.spec("fast_acc")->promoteEvery.origin == Origin::Explicit);
  CHECK(f.spec("dflt")->promoteEvery.value == 0);
  CHECK(f.spec("dflt")->promoteEvery.origin == Origin::Default);
  CHECK(f.spec("bf")->promoteEvery.value == 0);
  std::string list = renderSpecsText(f.sm, f.specs);
  CHECK(contains(list, "  promotion = 4                  # explicit, test.kdl:8:95\n"));
  CHECK(contains(list, "  promotion = fast               # explicit, test.kdl:9:98\n"));
  // Only fp8 kernels on the wgmma path show the field.
  CHECK(!contains(list.substr(list.find("kernel bf")), "promotion"));
}

TEST_CASE("[scaling] where block scales and promotion may go", "[validate][scaling]") {
  struct Case {
    std::string text;
    std::vector<std::string> ids;
    std::string message;
  };
  const std::vector<Case> cases = {
      {fp8Kernel(" scale (1, 128)", ""), {"scaling"}, "`A` has block scales but `B` does not; block scaling needs both"},
      {fp8Kernel("", " scale (128, 128)"), {"scaling"}, "`B` has block scales but `A` does not"},
      {fp8Kernel(" scale (1, 128)", " scale (128, 128)", "", "bf16"), {"scaling", "scaling"},
       "block scales are for fp8 inputs (e4m3, e5m2), and `A` is bf16"},
      {fp8Kernel(" scale (128, 128)", " scale (128, 128)"), {"scaling"},
       "block scales (128, 128) on `A` are not supported; the sm90a path supports A `scale (1, 128)`"},
      {fp8Kernel(" scale (1, 128)", " scale (1, 128)"), {"scaling"}, "block scales (1, 128) on `B` are not supported"},
      {fp8Kernel(" scale (1, 64)", " scale (128, 64)"), {"scaling", "scaling"}, "(1, 64) on `A` are not supported"},
      {"kernel k { op = gemm; arch = sm90a; A : e4m3 row scale (1, 128); B : e4m3 col scale (128, 128);\n"
       "  D : bf16 row scale (1, 128); }\n",
       {"scaling"}, "only the gemm inputs A and B take block scales, not `D`"},
      {"kernel k { op = conv2d_fprop; arch = sm90a; X : e4m3 nhwc scale (1, 128); W : e4m3 krsc; Y : bf16 nhwc; }\n",
       {"scaling"}, "block scales are for the gemm inputs A and B; conv2d_fprop operands do not take them"},
      {"kernel k { op = gemm; arch = sm89; A : e4m3 row scale (1, 128); B : e4m3 col scale (128, 128); D : bf16 row; }\n",
       {"arch-feature"}, "block scales are applied in the sm90a wgmma mainloop, which sm89 does not have"},
      {fp8Kernel(" scale (1, 128)", " scale (128, 128)", "schedule = multistage;"), {"scaling"},
       "which schedule `multistage` does not use"},
      {fp8Kernel(" scale (1, 128)", " scale (128, 128)", "tile = (128, 128, 64);"), {"scaling"},
       "tile K = 64, but with block scales tile K must be the blocks' K, 128"},
      {fp8Kernel(" scale (1, 128)", " scale (128, 128)", "promotion = 2;"), {"scaling"},
       "so `promotion` must be 1 or left out, not 2"},
      {fp8Kernel(" scale (1, 128)", " scale (128, 128)", "promotion = fast;"), {"scaling"}, "left out, not `fast`"},
      {fp8Kernel("", "", "promotion = 2;", "bf16"), {"scaling"},
       "`promotion` is for fp8 inputs (e4m3, e5m2), whose wgmma accumulation keeps fewer bits; this kernel's inputs "
       "are bf16"},
      {"kernel k { op = gemm; arch = sm89; A : e4m3 row; B : e4m3 col; D : bf16 row; promotion = 2; }\n",
       {"arch-feature"}, "`promotion` sets how the sm90a wgmma path accumulates fp8, and sm89 does not have that path"},
      {fp8Kernel("", "", "promotion = 2; schedule = multistage;"), {"scaling"}, "which schedule `multistage` does not use"},
      {fp8Kernel("", "", "promotion = 0;"), {"field-range"}, "promotion = 0 is out of range"},
      {fp8Kernel("", "", "promotion = \"fast\";"), {"field-type"}, "write `fast` without quotes"},
      {fp8Kernel("", "", "promotion = 1.5;"), {"field-type"}, "`promotion` must be `fast` or an int N >= 1"},
      {fp8Kernel(" scale 128", " scale (128, 128)"), {"field-type"},
       "the scale block of `A` must be a tuple of two ints (BM, BK), e.g. `scale (1, 128)`, not the int `128`"},
      {fp8Kernel(" scale (1, 128)", " scale (128, 1.0)"), {"field-type"}, "its element 1 is the float `1.0`"},
      {fp8Kernel(" scale (0, 128)", " scale (128, 128)"), {"field-range"},
       "scale block BM = 0 of `A` is out of range; block sizes are positive"},
  };
  for (const Case& c : cases) {
    Frontend f(c.text);
    INFO(c.text << "\n" << f.text());
    CHECK(f.specs.empty());
    CHECK(diagIds(f) == c.ids);
    CHECK(contains(f.text(), c.message));
  }
}

TEST_CASE("[scaling] the diagnostics point at the suffix, the field or the tile", "[validate][scaling]") {
  Frontend f(fp8Kernel(" scale (1, 128)", " scale (128, 128)", "tile = (128, 128, 64); promotion = 3;"));
  INFO(f.text());
  std::string text = f.text();
  CHECK(contains(text, "test.kdl:4:10: error: tile K = 64, but with block scales"));
  CHECK(contains(text, "test.kdl:3:22: note: block scales declared here"));
  CHECK(contains(text, "test.kdl:4:38: error: with block scales the mainloop promotes every k-tile"));
}

// ---- names in the generated C++ (dsl/check/cpp_names.h) -------------------------------------------------

TEST_CASE("cppNameProblem refuses what qualification cannot fix, and only that", "[validate][names]") {
  for (CppNameUse use : {CppNameUse::Kernel, CppNameUse::Epilogue, CppNameUse::ConvEpilogue}) {
    for (const char* fine : {"gemm_bf16", "half", "int64_t", "size_t", "cudaStream_t", "kdl", "std", "x", "_x1"})
      CHECK(cppNameProblem(fine, use) == "");
    for (const char* bad : {"NULL", "EOF", "CUDART_VERSION", "errno", "stdin", "INT64_MAX", "KDL_OK", "and", "xor_eq",
                            "class", "__x", "_X", "run", "detail", "Arguments", "kName", "can_implement", "a-b", "1x"})
      CHECK(cppNameProblem(bad, use) != "");
    CHECK(cppNameProblem(std::string(kMaxCppNameLength, 'k'), use) == "");
    CHECK_THAT(cppNameProblem(std::string(kMaxCppNameLength + 1, 'k'), use), Catch::Contains("201 characters"));
  }
  for (const char* member :
       {"m", "n", "k", "batch", "split_k", "lda", "ldz", "batch_stride_bias", "scale_A", "ld_scale_B"}) {
    CHECK(cppNameProblem(member, CppNameUse::Kernel) == "");
    CHECK(cppNameProblem(member, CppNameUse::Epilogue) != "");
    CHECK(cppNameProblem(member, CppNameUse::ConvEpilogue) != "");
  }
  // A convolution's Arguments also hold its problem: those names are free in a gemm only.
  for (const char* member : {"h", "w", "c", "r", "s", "p", "q", "pad_h", "stride_w", "dilation_h", "ldresidual"}) {
    CHECK(cppNameProblem(member, CppNameUse::Epilogue) == "");
    CHECK(cppNameProblem(member, CppNameUse::ConvEpilogue) != "");
  }
  // The table is searched by bisection: its first and last names are found, so it is sorted.
  CHECK(isHeaderMacro("ADJ_ESTERROR"));
  CHECK(isHeaderMacro("va_start"));
  CHECK(!isHeaderMacro("gemm"));
}
