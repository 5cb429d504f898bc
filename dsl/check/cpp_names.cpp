#include "dsl/check/cpp_names.h"

#include <algorithm>
#include <fmt/format.h>
#include <iterator>

namespace kdl {

namespace {

// Built at configure time from dsl/check/cpp_header_macros.txt (sorted, one identifier a line).
constexpr std::string_view kHeaderMacros[] = {
#include "cpp_header_macros.inc"
};

bool isIdentifier(std::string_view s) {
  auto alpha = [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_'; };
  auto digit = [](char ch) { return ch >= '0' && ch <= '9'; };
  if (s.empty() || !alpha(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char ch) { return alpha(ch) || digit(ch); });
}

// C++ reserves `__x` and `_X` everywhere (the compiler and the headers use them).
bool isReserved(std::string_view s) {
  return s.size() >= 2 && s[0] == '_' && (s[1] == '_' || (s[1] >= 'A' && s[1] <= 'Z'));
}

// What the generated code declares in the kernel's namespace beside the user's names
// (codegen/emit_kernel.cpp, codegen/emit_epilogue.cpp): a user name equal to one would be declared
// twice or would hide it.
bool isGeneratedDeclaration(std::string_view s) {
  static constexpr std::string_view kDeclared[] = {
      "Abi", "Arguments", "Epilogue", "Gemm", "Params", "State", "apply", "can_implement", "detail", "finish",
      "kArch", "kArgBroadcasts", "kArgDtypes", "kArgKinds", "kArgNames", "kInfo", "kMaxSplitK", "kName", "kNumArgs",
      "kParamDefaults", "params_of", "problem_of", "run", "unpack", "workspace_size"};
  return std::find(std::begin(kDeclared), std::end(kDeclared), s) != std::end(kDeclared);
}

// Members of Arguments and Epilogue::Params that the generated code declares for every kernel or for
// each tensor and vector: sizes, leading dimensions (`lda`, `ldz`), batch strides, block scales.
std::string memberProblem(std::string_view s) {
  static constexpr std::string_view kSizes[] = {"m", "n", "k", "batch", "split_k"};
  if (std::find(std::begin(kSizes), std::end(kSizes), s) != std::end(kSizes))
    return "names a size of the generated C++ API (m, n, k, batch, split_k)";
  if (s.size() == 3 && s.substr(0, 2) == "ld") return "is reserved for a leading dimension in the generated C++ API";
  if (s.substr(0, 13) == "batch_stride_") return "is reserved for a batch stride in the generated C++ API";
  static constexpr std::string_view kBlockScales[] = {"scale_A", "scale_B", "ld_scale_A", "ld_scale_B"};
  if (std::find(std::begin(kBlockScales), std::end(kBlockScales), s) != std::end(kBlockScales))
    return "is reserved for the block scales of A and B (`scale (BM, BK)`) in the generated C++ API";
  return "";
}

// The conv problem's members of a convolution's Arguments (the contract of kdl/conv_host.h), and the
// residual's leading dimension, the one operand name longer than a letter.
std::string convMemberProblem(std::string_view s) {
  static constexpr std::string_view kConvSizes[] = {"h",        "w",        "c",          "r",         "s",
                                                    "p",        "q",        "pad_h",      "pad_w",     "stride_h",
                                                    "stride_w", "dilation_h", "dilation_w"};
  if (std::find(std::begin(kConvSizes), std::end(kConvSizes), s) != std::end(kConvSizes))
    return "names a member of a convolution's problem in the generated C++ API (n, h, w, c, k, r, s, pad_h, pad_w, "
           "stride_h, stride_w, dilation_h, dilation_w, p, q, split_k)";
  if (s == "ldresidual") return "is reserved for the residual's pixel stride in the generated C++ API";
  return "";
}

}  // namespace

bool isCppKeyword(std::string_view s) {
  static constexpr std::string_view kKeywords[] = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case",
      "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval",
      "constexpr", "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype",
      "default", "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern",
      "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace",
      "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected",
      "public", "register", "reinterpret_cast", "requires", "restrict", "return", "short", "signed",
      "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this",
      "thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned",
      "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq", "_Bool", "_Complex",
      "_Imaginary", "_Alignas", "_Alignof", "_Atomic", "_Generic", "_Noreturn", "_Static_assert",
      "_Thread_local"};
  return std::find(std::begin(kKeywords), std::end(kKeywords), s) != std::end(kKeywords);
}

bool isHeaderMacro(std::string_view s) {
  return std::binary_search(std::begin(kHeaderMacros), std::end(kHeaderMacros), s);
}

std::string cppNameProblem(std::string_view name, CppNameUse use) {
  if (name.empty()) return "is empty";
  if (!isIdentifier(name)) return "is not a valid C identifier (letters, digits and `_`, not starting with a digit)";
  if (name.size() > kMaxCppNameLength)
    return fmt::format("is {} characters long; names that become C++ names and file names have at most {}",
                       name.size(), kMaxCppNameLength);
  if (isCppKeyword(name)) return "is a C++ keyword";
  if (isReserved(name)) return "is reserved in C++ (names starting with `__` or `_` and a capital)";
  if (isHeaderMacro(name)) return "is a macro of the CUDA or C/C++ headers the generated code includes";
  if (isGeneratedDeclaration(name)) return "is declared by the generated C++ API itself";
  if (use == CppNameUse::Epilogue || use == CppNameUse::ConvEpilogue)
    if (std::string why = memberProblem(name); !why.empty()) return why;
  if (use == CppNameUse::ConvEpilogue) return convMemberProblem(name);
  return "";
}

}  // namespace kdl
