// The rules for user names that become names in the generated C++ (kernel names, epilogue params,
// inputs, outputs and lets), in one place: validation reports them, lowering can assert them.
// The generated code qualifies every type and namespace it uses (`::half`, `::kdl::...`), so a user
// name equal to a type (`half`, `size_t`) is fine; what no qualification can fix is refused here.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace kdl {

// Where a user name goes in the generated C++.
enum class CppNameUse {
  Kernel,    // namespace kdl_kernels::NAME, the files NAME.cu and NAME.h, C symbols kdl_NAME_run, ...
  Epilogue,  // a param, input or output (a member of Arguments and Epilogue::Params), or a `let`
  // The same in a convolution, whose Arguments also hold the conv problem (n, h, w, c, k, r, s, pad_h,
  // ..., p, q) and the residual's `ldresidual`.
  ConvEpilogue,
};

// The longest kernel or epilogue name: NAME.cu must fit a file name (255 bytes) with room to spare,
// and the C symbols built from it (kdl_NAME_workspace_size) stay readable.
inline constexpr size_t kMaxCppNameLength = 200;

// Why `name` cannot be used in the generated C++ as `use`, as the rest of a sentence that starts
// with the name ("is a C++ keyword"), or "" when it can: not an identifier, longer than
// kMaxCppNameLength, a C/C++ keyword or alternative token (`and`), reserved (`__x`, `_X`), a macro of
// the headers the generated code includes (dsl/check/cpp_header_macros.txt), or a name the generated
// code declares next to user names (`Arguments`, `run`, `m`, `lda`, `batch_stride_X`, `scale_A`, ...;
// in a convolution also `h`, `pad_h`, `dilation_w`, `ldresidual`, ...).
std::string cppNameProblem(std::string_view name, CppNameUse use);

// C and C++ keywords and the alternative operator spellings (`and`, `xor_eq`).
bool isCppKeyword(std::string_view s);
// A macro the headers included by the generated code define (dsl/check/cpp_header_macros.txt, generated
// from the installed CUDA; tests/diagnostics/header_macros.py checks it is complete).
bool isHeaderMacro(std::string_view s);

}  // namespace kdl
