// What `kdlc build` needs beside the emitters: atomic file writes and the content-hashed compile
// cache. The cache never lives in the current directory: $KDL_CACHE_DIR, $XDG_CACHE_HOME/kdl or
// ~/.cache/kdl (absolute paths only), a directory this user owns and nobody else can write. Keys
// hash every input that reaches nvcc: the .cu text, the header it includes, the content of every
// KDL header, nvcc's version output and the exact flags. Entries are written to a temporary file and
// renamed into place; a hit is used only when the object's stored sha256 matches its bytes.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace kdl::codegen {

// Writes `contents` to `path` through a temporary file in the same directory and rename(2); leaves
// an existing file with the same bytes untouched (its mtime too). false and `error` on failure.
bool writeFileAtomic(const std::string& path, const std::string& contents, std::string& error);
bool readWholeFile(const std::string& path, std::string& out);
// mkdir -p
bool makeDirs(const std::string& path, std::string& error);

// The cache directory from the environment, or nullopt (and `why`) when none is usable.
std::optional<std::string> defaultCacheDir(std::string& why);

class CompileCache {
 public:
  // `dir` must be absolute; it is created (0700) when missing. usable() is false (see whyUnusable())
  // when it cannot be created or is not safe (owned by someone else, writable by group or others).
  explicit CompileCache(std::string dir);
  bool usable() const { return usable_; }
  const std::string& whyUnusable() const { return why_; }
  const std::string& dir() const { return dir_; }

  // The key of one compilation.
  static std::string key(const std::string& sourceText, const std::vector<std::pair<std::string, std::string>>& headers,
                         const std::string& compilerVersion, const std::vector<std::string>& flags);
  // The cached object for `key` (verified), or nullopt.
  std::optional<std::string> lookup(const std::string& key) const;
  // Stores an object; false when the cache could not be written (not an error for the build).
  bool store(const std::string& key, const std::string& object) const;

 private:
  std::string entryPath(const std::string& key) const;
  std::string dir_;
  bool usable_ = false;
  std::string why_;
};

// Every file of a KDL include directory (<dir>/kdl/*), sorted by name, as (name, contents).
std::vector<std::pair<std::string, std::string>> readKdlHeaders(const std::string& includeDir);

}  // namespace kdl::codegen
