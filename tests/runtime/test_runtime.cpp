// include/kdl/runtime.h on the CPU: the default provider compiles and links without libcuda, and a
// host framework's provider replaces it (no GPU needed).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "kdl/runtime.h"

namespace {
std::vector<std::string> g_asked;
int g_fake = 0;
void* fakeProvider(const char* symbol, unsigned int version, void* user) {
  g_asked.push_back(std::string(symbol) + "@" + std::to_string(version));
  return std::strcmp(symbol, "cuTensorMapEncodeTiled") == 0 ? user : nullptr;
}
}  // namespace

TEST_CASE("the default provider is cudaGetDriverEntryPointByVersion") {
  kdl::DriverEntryPointProvider p = &kdl::default_driver_entry_point;
  REQUIRE(p != nullptr);
  // Without a GPU (or driver) the lookup fails cleanly with nullptr; with one it finds the symbol.
  void* fn = kdl::default_driver_entry_point("cuDefinitelyNotADriverFunction", 12000, nullptr);
  CHECK(fn == nullptr);
}

TEST_CASE("a replaced provider is used and can be reset") {
  kdl::set_driver_entry_point_provider(&fakeProvider, &g_fake);
  const kdl::DriverApi& api = kdl::driver_api();
  CHECK(reinterpret_cast<void*>(api.cuTensorMapEncodeTiled) == &g_fake);
  CHECK(api.cuGetErrorString == nullptr);
  REQUIRE(g_asked.size() == 2);
  CHECK(g_asked[0] == "cuTensorMapEncodeTiled@12000");
  // resolved once per provider change
  (void)kdl::driver_api();
  CHECK(g_asked.size() == 2);
  kdl::set_driver_entry_point_provider(nullptr);
  (void)kdl::driver_api();
  CHECK(g_asked.size() == 2);  // the default provider does not call the fake
}

TEST_CASE("argument checks say what is wrong") {
  alignas(16) static char buf[64];
  CHECK(kdl::check_mainloop_operand<short>("k", "A", reinterpret_cast<short*>(buf), 64, 0, 8, 1) == nullptr);
  std::string m = kdl::check_mainloop_operand<short>("k", "A", reinterpret_cast<short*>(buf + 2), 64, 0, 8, 1);
  CHECK(m.find("16-byte aligned") != std::string::npos);
  m = kdl::check_mainloop_operand<short>("k", "A", reinterpret_cast<short*>(buf), 60, 0, 8, 1);
  CHECK(m.find("multiple of its alignment") != std::string::npos);
  m = kdl::check_epilogue_tensor<float>("k", "D", nullptr, 8, 0, 4, 8, 1, false);
  CHECK(m == "k: D is null");
  CHECK(kdl::check_epilogue_tensor<float>("k", "C", nullptr, 8, 0, 4, 8, 1, true) == nullptr);
}
