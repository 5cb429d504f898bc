// A refused tile's replacement, checked: for every kernel that the validator or lowering refuses at its
// own `tile = (M, N, K);`, the nearest tile on which that kernel passes both (the same rules `kdlc check`
// runs: a spec that passes them builds), as a note on the error. The messages of the individual rules say
// why a tile fails and what usually helps; this pass tries the tiles themselves, so the one it names is
// never refused in turn.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "codegen/codegen.h"
#include "codegen/plan.h"
#include "dsl/check/validate.h"

namespace kdl::codegen {

namespace {

using Tile = std::array<int, 3>;

const RawField* ownTileField(const RawKernel& k) {
  for (const RawField& f : k.fields)
    if (f.name == "tile") return f.fromTemplate ? nullptr : &f;
  return nullptr;
}

std::optional<Tile> tileValue(const Value& v) {
  if (!v.isSequence() || v.items().size() != 3) return std::nullopt;
  Tile t{};
  for (int i = 0; i < 3; ++i) {
    if (!v.items()[i].isInt()) return std::nullopt;
    t[i] = static_cast<int>(v.items()[i].asInt());
  }
  return t;
}

// The kernel alone through the validator and lowering; its errors (warnings dropped).
std::vector<Diagnostic> errorsOf(const RawKernel& k) {
  DiagEngine scratch(1000);
  EvalResult one;
  one.kernels.push_back(k);
  std::vector<KernelSpec> specs = validate(one, scratch);
  if (!scratch.hasErrors()) lower(specs, scratch);
  std::vector<Diagnostic> errors;
  for (const Diagnostic& d : scratch.all())
    if (d.severity == Severity::Error) errors.push_back(d);
  return errors;
}

// Candidates nearest first: by the distance of log2(M x N) plus that of log2(K) from the refused tile's (a
// dimension out of range counts as 128, K as 64), then the smaller of two equally near (a refusal is mostly
// about registers or shared memory), then the aspect M / N closest to the refused one's, then the same K.
std::vector<Tile> candidates(const Tile& refused) {
  const Tile ref{refused[0] >= 16 && refused[0] <= 1024 ? refused[0] : 128,
                 refused[1] >= 16 && refused[1] <= 1024 ? refused[1] : 128,
                 refused[2] >= 8 && refused[2] <= 1024 ? refused[2] : 64};
  std::vector<Tile> out;
  for (int k : {ref[2], ref[2] / 2, ref[2] * 2, 32, 64, 128})
    for (int m : {32, 64, 128, 256})
      for (int n : {32, 64, 128, 256}) {
        const Tile t{m, n, k};
        if (k < 16 || k > 512 || t == refused || std::find(out.begin(), out.end(), t) != out.end()) continue;
        out.push_back(t);
      }
  auto key = [&](const Tile& t) {
    const double area = std::log2(double(t[0]) * t[1] / (double(ref[0]) * ref[1]));
    const double k = std::log2(double(t[2]) / ref[2]);
    const double aspect = std::fabs(std::log2(double(t[0]) / t[1]) - std::log2(double(ref[0]) / ref[1]));
    return std::make_tuple(std::fabs(area) + std::fabs(k), area + k > 0, aspect, t[2] != ref[2], -t[0]);
  };
  std::stable_sort(out.begin(), out.end(), [&](const Tile& a, const Tile& b) { return key(a) < key(b); });
  return out;
}

}  // namespace

void noteAcceptedTiles(const EvalResult& raw, DiagEngine& diags, size_t firstDiag) {
  for (const RawKernel& k : raw.kernels) {
    const RawField* field = k.poisoned ? nullptr : ownTileField(k);
    if (!field) continue;
    const std::optional<Tile> refused = tileValue(field->value);
    if (!refused) continue;
    // Only where this run reported an error at the tile; then the kernel alone says which one is its own (a
    // loop may give several kernels one tile expression).
    auto atTile = [&](const Diagnostic& d) { return d.severity == Severity::Error && d.loc == field->valueLoc; };
    bool any = false;
    for (size_t i = firstDiag; i < diags.all().size() && !any; ++i) any = atTile(diags.all()[i]);
    if (!any) continue;
    std::optional<Diagnostic> own;
    for (const Diagnostic& d : errorsOf(k))
      if (atTile(d)) {
        own = d;
        break;
      }
    if (!own) continue;
    std::optional<Tile> found;
    RawKernel trial = k;
    Value& tried = trial.fields[static_cast<size_t>(field - k.fields.data())].value;
    for (const Tile& t : candidates(*refused)) {
      tried = Value::tuple({Value::integer(t[0]), Value::integer(t[1]), Value::integer(t[2])});
      if (errorsOf(trial).empty()) {
        found = t;
        break;
      }
    }
    if (!found) continue;
    for (size_t i = firstDiag; i < diags.all().size(); ++i) {
      Diagnostic& d = diags.at(i);
      if (!atTile(d) || d.message != own->message || d.kind != own->kind) continue;
      const std::string note = fmt::format("`tile = ({}, {}, {});` passes `kdlc check` for kernel `{}` (the nearest "
                                           "tile that does)",
                                           (*found)[0], (*found)[1], (*found)[2], k.name);
      if (std::none_of(d.notes.begin(), d.notes.end(), [&](const DiagNote& n) { return n.message == note; }))
        d.notes.push_back({field->valueLoc, note});
      break;
    }
  }
}

}  // namespace kdl::codegen
