// SHA-256 (FIPS 180-4), for the spec hash in emitted headers and the compile cache's keys.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kdl::codegen {

class Sha256 {
 public:
  Sha256();
  Sha256& update(const void* data, size_t size);
  Sha256& update(std::string_view s) { return update(s.data(), s.size()); }
  // Finishes and returns the digest as 64 lowercase hex digits; the object must not be reused.
  std::string hexDigest();

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t bufLen_ = 0;
  uint64_t totalBytes_ = 0;
};

std::string sha256Hex(std::string_view data);

}  // namespace kdl::codegen
