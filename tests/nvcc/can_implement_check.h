// What the can_implement tests of tests/nvcc (test_can_implement*.cpp, built and run by
// run_can_implement.py) share: PASS/FAIL lines and their count, whether a CUDA device is present, the
// two verdicts on a can_implement message, and made-up device addresses.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace kdl_check {

inline int g_failed = 0, g_passed = 0;
inline bool g_device = false;  // a CUDA device is present: valid arguments pass can_implement

inline void expect(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  ok ? ++g_passed : ++g_failed;
}

// A can_implement message as the lines show it.
inline std::string said(const char* m) { return m ? m : "(accepted)"; }

// Nothing wrong with the arguments: accepted on a machine with a GPU; without one the first thing
// can_implement says is that there is no device.
inline bool arguments_ok(const char* m) {
  return g_device ? m == nullptr : said(m).find("no CUDA device") != std::string::npos;
}

// can_implement's message `m` contains `needle`.
inline void expect_message(const char* what, const char* m, const char* needle) {
  const std::string got = said(m);
  expect(got.find(needle) != std::string::npos, std::string(what) + ": \"" + got + "\" (want \"" + needle + "\")");
}

// can_implement finds nothing wrong (arguments_ok).
inline void expect_ok(const char* what, const char* m) {
  expect(arguments_ok(m), std::string(what) + ": \"" + said(m) + "\" (want the arguments accepted)");
}

// A device address `offset` bytes into a made-up 4 GiB-aligned allocation: can_implement reads
// addresses (alignment, overlap), never the memory.
template <class T>
T* at(size_t offset) {
  return reinterpret_cast<T*>((uintptr_t(1) << 32) + offset);
}

// Looks for a device (and says how many); returns the count.
inline int find_device() {
  int count = 0;
  g_device = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();
  std::printf("CUDA devices: %d\n", g_device ? count : 0);
  return g_device ? count : 0;
}

// The summary line; the exit status.
inline int finish() {
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}

}  // namespace kdl_check
