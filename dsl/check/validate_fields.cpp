// Kernel fields one by one: which exist, which are required, each value's type and its own range.
// Rules that relate fields to each other (tile vs arch, stages vs shared memory) are in validate_arch.cpp.
#include <algorithm>
#include <string>

#include "dsl/check/validate_rules.h"
#include "dsl/words.h"

namespace kdl::validation {
namespace {

const std::vector<std::string>& knownFields() {
  static const std::vector<std::string> fields = {"op",      "arch",   "accum",  "tile",     "cluster",
                                                  "stages",  "schedule", "raster", "split_k", "promotion",
                                                  "fallback", "filter",  "stride"};
  return fields;
}

bool isConv(Op op) { return op != Op::Gemm; }

// A word of one category, e.g. `op = gemm`. Strings and near misses get a suggestion.
template <class E, size_t N>
std::optional<E> readWord(KernelCheck& c, const RawField& f, WordCategory cat, const std::array<E, N>& all) {
  const Value& v = f.value;
  if (v.isWord(cat))
    if (std::optional<E> e = fromName(all, v.asString())) return e;
  std::vector<std::string> words = wordsOf(cat);
  std::string msg = "`" + f.name + "` must be " + (words.size() > 1 ? "one of " : "") + quotedList(words) +
                    ", not " + describe(v);
  c.diags.error(DiagKind::FieldType, f.valueLoc, msg + wordHint(v, words));
  return std::nullopt;
}

// A tuple of N ints, each in [lo, hi]. `shape` names the elements for messages, e.g. "(M, N, K)".
template <size_t N>
std::optional<std::array<int, N>> readIntTuple(KernelCheck& c, const RawField& f, const char* shape,
                                               const char* const (&elementNames)[N], int64_t lo, int64_t hi,
                                               const char* rangeWhy) {
  static const char* const kCount[] = {"zero", "one", "two", "three", "four"};
  const Value& v = f.value;
  std::string what = "`" + f.name + "` must be a tuple of " + kCount[N] + " ints " + shape;
  if (!v.isTuple()) {
    c.diags.error(DiagKind::FieldType, f.valueLoc, what + ", not " + describe(v));
    return std::nullopt;
  }
  if (v.items().size() != N) {
    c.diags.error(DiagKind::FieldType, f.valueLoc,
                  what + ", not a tuple of " + std::to_string(v.items().size()));
    return std::nullopt;
  }
  std::array<int, N> out{};
  bool ok = true;
  for (size_t i = 0; i < N; ++i) {
    const Value& e = v.items()[i];
    if (!e.isInt()) {
      c.diags.error(DiagKind::FieldType, f.valueLoc,
                    what + "; " + f.name + " " + elementNames[i] + " is " + describe(e));
      ok = false;
      continue;
    }
    if (e.asInt() < lo || e.asInt() > hi) {
      c.diags.error(DiagKind::FieldRange, f.valueLoc,
                    f.name + " " + elementNames[i] + " = " + std::to_string(e.asInt()) + " is out of range; " +
                        rangeWhy);
      ok = false;
      continue;
    }
    out[i] = static_cast<int>(e.asInt());
  }
  if (!ok) return std::nullopt;
  return out;
}

void readTile(KernelCheck& c, const RawField& f) {
  static const char* const kNames[] = {"M", "N", "K"};
  auto t = readIntTuple<3>(c, f, "(M, N, K)", kNames, 1, 1024, "tile dimensions are between 1 and 1024");
  if (!t) return;
  // Warp tiles are built from 16-row/16-column MMA fragments on every path.
  bool ok = true;
  for (int i = 0; i < 2; ++i)
    if ((*t)[i] % 16 != 0) {
      c.diags.error(DiagKind::FieldRange, f.valueLoc,
                    std::string("tile ") + kNames[i] + " = " + std::to_string((*t)[i]) +
                        " is not a multiple of 16, which tensor-core MMA fragments need");
      ok = false;
    }
  if (!ok) return;
  c.tile = Field<std::array<int, 3>>{*t, f.valueLoc, c.originOf(f)};
}

void readCluster(KernelCheck& c, const RawField& f) {
  static const char* const kNames[] = {"M", "N", "K"};
  auto t = readIntTuple<3>(c, f, "(M, N, K)", kNames, 1, 8, "cluster dimensions are between 1 and 8");
  if (!t) return;
  c.cluster = Field<std::array<int, 3>>{*t, f.valueLoc, c.originOf(f)};
}

void readPair(KernelCheck& c, const RawField& f, std::optional<Field<std::array<int, 2>>>& out) {
  static const char* const kNames[] = {"R", "S"};
  static const char* const kStrideNames[] = {"H", "W"};
  auto t = readIntTuple<2>(c, f, f.name == "filter" ? "(R, S)" : "(H, W)", f.name == "filter" ? kNames : kStrideNames,
                           1, 32, "compile-time sizes are between 1 and 32");
  if (t) out = Field<std::array<int, 2>>{*t, f.valueLoc, c.originOf(f)};
}

void readStages(KernelCheck& c, const RawField& f) {
  const Value& v = f.value;
  if (v.isAuto()) {
    c.stagesAuto = true;
    c.stagesAutoLoc = f.valueLoc;
    return;
  }
  if (!v.isInt()) {
    c.diags.error(DiagKind::FieldType, f.valueLoc, "`stages` must be an int or `auto`, not " + describe(v));
    return;
  }
  if (v.asInt() < 2 || v.asInt() > 8) {
    c.diags.error(DiagKind::FieldRange, f.valueLoc,
                  "stages = " + std::to_string(v.asInt()) +
                      " is out of range; a pipeline has 2 to 8 stages (or write `auto`)");
    return;
  }
  c.stages = Field<int>{static_cast<int>(v.asInt()), f.valueLoc, c.originOf(f)};
}

void readSchedule(KernelCheck& c, const RawField& f) {
  if (f.value.isAuto()) {
    c.scheduleAuto = true;
    c.scheduleAutoLoc = f.valueLoc;
    c.scheduleAutoOrigin = Origin::Auto;
    return;
  }
  if (auto s = readWord(c, f, WordCategory::Schedule, kAllSchedules))
    c.schedule = Field<Schedule>{*s, f.valueLoc, c.originOf(f)};
}

void readRaster(KernelCheck& c, const RawField& f) {
  if (f.value.isAuto()) {
    c.raster = Field<Raster>{Raster::AlongN, f.valueLoc, Origin::Auto};
    return;
  }
  if (auto r = readWord(c, f, WordCategory::Raster, kAllRasters)) c.raster = Field<Raster>{*r, f.valueLoc, c.originOf(f)};
}

// split_k = 1 | serial(N) | parallel(N) | stream_k
void readSplitK(KernelCheck& c, const RawField& f) {
  const Value& v = f.value;
  const char* allowed = "`split_k` must be 1, `serial(N)`, `parallel(N)` or `stream_k`";
  if (v.isInt()) {
    if (v.asInt() == 1) {
      c.splitK = Field<SplitKMode>{SplitKMode::None, f.valueLoc, c.originOf(f)};
      return;
    }
    std::string n = std::to_string(v.asInt());
    c.diags.error(DiagKind::FieldRange, f.valueLoc,
                  std::string(allowed) + ", not " + n +
                      (v.asInt() > 1 ? "; to split K into " + n + " slices write `serial(" + n + ")` or `parallel(" + n + ")`"
                                     : ""));
    return;
  }
  if (v.isWord(WordCategory::SplitK)) {
    const std::string& mode = v.asString();
    if (mode == "stream_k" && v.items().empty()) {
      c.splitK = Field<SplitKMode>{SplitKMode::StreamK, f.valueLoc, c.originOf(f)};
      return;
    }
    if ((mode == "serial" || mode == "parallel") && v.items().size() == 1 && v.items()[0].isInt()) {
      int64_t n = v.items()[0].asInt();
      if (n < 1 || n > 64) {
        c.diags.error(DiagKind::FieldRange, f.valueLoc,
                      "split_k " + mode + "(" + std::to_string(n) + ") is out of range; the slice count is 1 to 64");
        return;
      }
      c.splitK = Field<SplitKMode>{mode == "serial" ? SplitKMode::Serial : SplitKMode::Parallel, f.valueLoc,
                                   c.originOf(f)};
      c.splitKSlices = static_cast<int>(n);
      return;
    }
  }
  std::string msg = std::string(allowed) + ", not " + describe(v);
  if (v.kind() == Value::Kind::Builtin && (v.asString() == "serial" || v.asString() == "parallel"))
    msg = "`split_k = " + v.asString() + "` needs a slice count, e.g. `" + v.asString() + "(4)`";
  c.diags.error(DiagKind::FieldType, f.valueLoc, msg);
}

void readField(KernelCheck& c, const RawField& f) {
  const std::string& n = f.name;
  if (n == "op") {
    if (auto op = readWord(c, f, WordCategory::Op, kAllOps)) c.op = Field<Op>{*op, f.valueLoc, c.originOf(f)};
  } else if (n == "arch") {
    if (auto a = readWord(c, f, WordCategory::Arch, kAllArchs)) c.arch = Field<Arch>{*a, f.valueLoc, c.originOf(f)};
  } else if (n == "accum") {
    if (auto t = readWord(c, f, WordCategory::DType, kAllDTypes)) c.accum = Field<DType>{*t, f.valueLoc, c.originOf(f)};
  } else if (n == "tile") {
    readTile(c, f);
  } else if (n == "cluster") {
    readCluster(c, f);
  } else if (n == "stages") {
    readStages(c, f);
  } else if (n == "schedule") {
    readSchedule(c, f);
  } else if (n == "raster") {
    readRaster(c, f);
  } else if (n == "split_k") {
    readSplitK(c, f);
  } else if (n == "promotion") {
    readPromotion(c, f);
  } else if (n == "fallback") {
    readFallback(c, f);
  } else if (n == "filter") {
    readPair(c, f, c.filter);
  } else if (n == "stride") {
    readPair(c, f, c.stride);
  }
}

void reportUnknown(KernelCheck& c, const RawField& f) {
  Diagnostic& d = c.diags.error(DiagKind::UnknownField, f.nameLoc,
                                "kernels have no field `" + f.name + "`" + suggest(f.name, knownFields()));
  // Convolution users coming from frameworks write `groups`; say what kdl generates rather than only
  // that the field does not exist.
  if (f.name == "groups")
    d.notes.push_back({f.valueLoc, "kdl generates convolutions with groups = 1 only; grouped (and depthwise) "
                                   "convolution is not supported, so remove the field"});
}

void reportMissing(KernelCheck& c, const char* field, WordCategory cat) {
  c.diags.error(DiagKind::MissingField, c.raw.nameLoc,
                std::string("kernel `") + c.raw.name + "` does not set `" + field + "`; add `" + field +
                    " = ...;` with one of " + quotedList(wordsOf(cat)));
}

}  // namespace

void readFields(KernelCheck& c) {
  std::vector<const RawField*> convOnly;
  for (const RawField& f : c.raw.fields) {
    const auto& known = knownFields();
    if (std::find(known.begin(), known.end(), f.name) == known.end()) {
      reportUnknown(c, f);
      continue;
    }
    if (f.name == "filter" || f.name == "stride") convOnly.push_back(&f);
    readField(c, f);
  }
  if (c.op && !isConv(c.op->value))
    for (const RawField* f : convOnly) {
      c.diags
          .error(DiagKind::UnknownField, f->nameLoc,
                 "`" + f->name + "` is a convolution field; gemm kernels do not have it")
          .notes.push_back({c.op->loc, "op set to gemm here"});
      (f->name == "filter" ? c.filter : c.stride).reset();
    }
  if (!c.given("op")) reportMissing(c, "op", WordCategory::Op);
  if (!c.given("arch")) reportMissing(c, "arch", WordCategory::Arch);

  // Fields whose defaults need nothing else; tile, accum, stages and schedule depend on arch and dtypes.
  if (!c.given("cluster")) c.cluster = c.defaulted(std::array<int, 3>{1, 1, 1});
  if (!c.given("raster")) c.raster = c.defaulted(Raster::AlongN);
  if (!c.given("split_k")) c.splitK = c.defaulted(SplitKMode::None);
  if (!c.given("fallback")) c.fallback = c.defaulted(Fallback::None);
  if (!c.given("stages")) {
    c.stagesAuto = true;
    c.stagesAutoLoc = c.raw.nameLoc;
    c.stagesAutoOrigin = Origin::Default;
  }
  if (!c.given("schedule")) {
    c.scheduleAuto = true;
    c.scheduleAutoLoc = c.raw.nameLoc;
    c.scheduleAutoOrigin = Origin::Default;
  }
}

}  // namespace kdl::validation
