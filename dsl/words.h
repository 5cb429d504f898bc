// The language's built-in words (dtypes, layouts, archs, enum words), built-in function names, and
// "did you mean" suggestions.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dsl/eval/value.h"

namespace kdl {

struct WordInfo {
  const char* name;
  WordCategory category;
};
// Every built-in word, in a stable order.
const std::vector<WordInfo>& builtinWords();
std::optional<WordCategory> lookupWord(std::string_view name);
// The words of one category, e.g. all dtypes.
std::vector<std::string> wordsOf(WordCategory c);
const char* categoryName(WordCategory c);  // "dtype", "layout", ...

// Script built-in functions: len range min max str sizeof bits product serial parallel.
const std::vector<std::string>& builtinFunctions();
// Epilogue functions: min max abs clamp exp log sqrt rsqrt tanh sigmoid relu gelu gelu_tanh silu
// leaky_relu select cast, with their arity.
struct EpilogueFunction {
  const char* name;
  int arity;
};
const std::vector<EpilogueFunction>& epilogueFunctions();
const EpilogueFunction* lookupEpilogueFunction(std::string_view name);

// Levenshtein distance, bounded: returns > limit as limit + 1.
size_t editDistance(std::string_view a, std::string_view b, size_t limit = 3);
// The nearest candidate within a small distance (about a third of the word's length, at least 1),
// or "" when nothing is close.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);
// ", did you mean `x`?" or "" — ready to append to a message.
std::string didYouMean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace kdl
