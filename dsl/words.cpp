#include "dsl/words.h"

#include <algorithm>

namespace kdl {

const std::vector<WordInfo>& builtinWords() {
  using C = WordCategory;
  static const std::vector<WordInfo> words = {
      {"f16", C::DType},  {"bf16", C::DType},  {"f32", C::DType},   {"tf32", C::DType},
      {"f64", C::DType},  {"e4m3", C::DType},  {"e5m2", C::DType},  {"s8", C::DType},
      {"u8", C::DType},   {"s32", C::DType},   {"row", C::Layout},  {"col", C::Layout},
      {"nhwc", C::Layout}, {"krsc", C::Layout}, {"sm80", C::Arch},  {"sm86", C::Arch},
      {"sm89", C::Arch},  {"sm90a", C::Arch},  {"sm100a", C::Arch}, {"gemm", C::Op},
      {"conv2d_fprop", C::Op}, {"conv2d_dgrad", C::Op}, {"conv2d_wgrad", C::Op},
      {"multistage", C::Schedule}, {"cooperative", C::Schedule}, {"pingpong", C::Schedule},
      {"along_m", C::Raster}, {"along_n", C::Raster}, {"stream_k", C::SplitK},
      {"fast", C::Promotion}, {"none", C::Fallback},
  };
  return words;
}

std::optional<WordCategory> lookupWord(std::string_view name) {
  for (const WordInfo& w : builtinWords())
    if (name == w.name) return w.category;
  return std::nullopt;
}

std::vector<std::string> wordsOf(WordCategory c) {
  std::vector<std::string> out;
  for (const WordInfo& w : builtinWords())
    if (w.category == c) out.emplace_back(w.name);
  return out;
}

const char* categoryName(WordCategory c) {
  switch (c) {
    case WordCategory::DType: return "dtype";
    case WordCategory::Layout: return "layout";
    case WordCategory::Arch: return "arch";
    case WordCategory::Op: return "op";
    case WordCategory::Schedule: return "schedule";
    case WordCategory::Raster: return "raster";
    case WordCategory::SplitK: return "split-k mode";
    case WordCategory::Promotion: return "promotion";
    case WordCategory::Fallback: return "fallback";
    case WordCategory::Other: return "word";
  }
  return "word";
}

const std::vector<std::string>& builtinFunctions() {
  static const std::vector<std::string> fns = {"len", "range", "min", "max", "str", "sizeof",
                                               "bits", "product", "serial", "parallel"};
  return fns;
}

const std::vector<EpilogueFunction>& epilogueFunctions() {
  static const std::vector<EpilogueFunction> fns = {
      {"min", 2},     {"max", 2},  {"abs", 1},       {"clamp", 3},     {"exp", 1},
      {"log", 1},     {"sqrt", 1}, {"rsqrt", 1},     {"tanh", 1},      {"sigmoid", 1},
      {"relu", 1},    {"gelu", 1}, {"gelu_tanh", 1}, {"silu", 1},      {"leaky_relu", 2},
      {"select", 3},  {"cast", 2},
  };
  return fns;
}

const EpilogueFunction* lookupEpilogueFunction(std::string_view name) {
  for (const EpilogueFunction& f : epilogueFunctions())
    if (name == f.name) return &f;
  return nullptr;
}

// Optimal-string-alignment distance: insertions, deletions, substitutions and swaps of two adjacent
// characters (`bf61` -> `bf16`, `tiel` -> `tile`) each cost one edit.
size_t editDistance(std::string_view a, std::string_view b, size_t limit) {
  if (a.size() > b.size() + limit || b.size() > a.size() + limit) return limit + 1;
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    size_t rowMin = cur[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      rowMin = std::min(rowMin, cur[j]);
    }
    if (rowMin > limit) return limit + 1;
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return std::min(prev[b.size()], limit + 1);
}

std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  size_t limit = std::max<size_t>(1, word.size() / 3);
  size_t best = limit + 1;
  std::string bestWord;
  for (const std::string& c : candidates) {
    if (c == word) continue;
    size_t d = editDistance(word, c, limit);
    if (d < best) {
      best = d;
      bestWord = c;
    }
  }
  return bestWord;
}

std::string didYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  std::string n = nearest(word, candidates);
  return n.empty() ? std::string() : ", did you mean `" + n + "`?";
}

}  // namespace kdl
