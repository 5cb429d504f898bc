// What `kdlc build` needs beside the emitters: atomic file writes and the content-hashed compile
// cache. The cache never lives in the current directory: $KDL_CACHE_DIR, $XDG_CACHE_HOME/kdl or
// ~/.cache/kdl (absolute paths only), a directory this user owns and nobody else can write (a
// symlink to one is followed when this user owns the link too). Keys hash every input that reaches
// nvcc: the .cu text, the header it includes, the content of every KDL header, the toolchain (nvcc's
// path and version, the host compiler nvcc uses, NVCC_PREPEND_FLAGS/NVCC_APPEND_FLAGS) and the exact
// flags. An entry is the object and the compiler's output (ptxas's report, which `kdlc build` gates
// on, so a hit is checked like a fresh compile). Entries are written to temporary files and renamed
// into place; a hit is used only when the stored sha256 of both matches their bytes. A hit touches the entry, and evictTo() removes the
// least recently used entries until the cache fits its cap.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kdl::codegen {

// Writes `contents` to `path` through a temporary file in the same directory and rename(2); leaves
// an existing file with the same bytes untouched (its mtime too). false and `error` on failure.
bool writeFileAtomic(const std::string& path, const std::string& contents, std::string& error);
// The whole file; false (and `error` says why) when it cannot be opened or read, a directory included.
bool readWholeFile(const std::string& path, std::string& out, std::string& error);
bool readWholeFile(const std::string& path, std::string& out);
// mkdir -p
bool makeDirs(const std::string& path, std::string& error);

// The cache directory from the environment, or nullopt (and `why`) when none is usable.
std::optional<std::string> defaultCacheDir(std::string& why);

// "2G", "512M", "100k", "1048576" (binary units, case-insensitive, optional trailing B/iB); nullopt
// when malformed or zero.
std::optional<uint64_t> parseByteSize(const std::string& text);
std::string formatByteSize(uint64_t bytes);

struct CacheEntry {
  std::string object;
  std::string output;  // what the compiler printed (nvcc's warnings, ptxas's report)
};

struct CacheStats {
  uint64_t entries = 0;
  uint64_t bytes = 0;  // objects, their digests and compiler outputs
};

class CompileCache {
 public:
  // `dir` must be absolute; it is created (0700) when missing. usable() is false (see whyUnusable())
  // when it cannot be created or is not safe (owned by someone else, writable by group or others).
  // A usable cache this user cannot write still serves hits; writable() is false and
  // whyNotWritable() says so (the caller warns once: every miss will be compiled again next time).
  explicit CompileCache(std::string dir);
  bool usable() const { return usable_; }
  const std::string& whyUnusable() const { return why_; }
  bool writable() const { return writable_; }
  const std::string& whyNotWritable() const { return whyNotWritable_; }
  const std::string& dir() const { return dir_; }

  // The key of one compilation. `toolchain` identifies everything outside the sources that changes
  // the object (compiler, host compiler, flags from the environment).
  static std::string key(const std::string& sourceText, const std::vector<std::pair<std::string, std::string>>& headers,
                         const std::string& toolchain, const std::vector<std::string>& flags);
  // The cached entry for `key` (verified), or nullopt. A hit marks the entry as recently used.
  std::optional<CacheEntry> lookup(const std::string& key) const;
  // Stores an entry; false when the cache could not be written (not an error for the build).
  bool store(const std::string& key, const CacheEntry& entry) const;

  CacheStats stats() const;
  // Removes the least recently used entries until the cache holds at most `maxBytes`; returns how
  // many were removed.
  uint64_t evictTo(uint64_t maxBytes) const;
  // Removes every entry (and stale temporary files of entries); leaves anything else in the
  // directory alone. false and `error` when an entry could not be removed.
  bool clear(uint64_t& removed, std::string& error) const;

 private:
  std::string entryPath(const std::string& key) const;
  std::string dir_;
  bool usable_ = false;
  bool writable_ = false;
  std::string why_, whyNotWritable_;
};

// Every file of a KDL include directory (<dir>/kdl/*), sorted by name, as (name, contents); false
// and `error` when the directory or one of its files cannot be read.
bool readKdlHeaders(const std::string& includeDir, std::vector<std::pair<std::string, std::string>>& out,
                    std::string& error);

}  // namespace kdl::codegen
