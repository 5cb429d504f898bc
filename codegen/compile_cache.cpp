#include "codegen/compile_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fmt/format.h>

#include "codegen/build_support.h"  // writeNewFile
#include "codegen/sha256.h"

namespace kdl::codegen {

bool readWholeFile(const std::string& path, std::string& out, std::string& error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = fmt::format("cannot read {}: {}", path, std::strerror(errno));
    return false;
  }
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      error = fmt::format("cannot read {}: {}", path, std::strerror(errno));
      ::close(fd);
      return false;
    }
    text.append(buf, size_t(n));
  }
  ::close(fd);
  out = std::move(text);
  return true;
}

bool readWholeFile(const std::string& path, std::string& out) {
  std::string ignored;
  return readWholeFile(path, out, ignored);
}

bool makeDirs(const std::string& path, std::string& error) {
  if (path.empty()) return true;
  std::string cur;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    cur = path.substr(0, j);
    if (!cur.empty() && ::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
      error = fmt::format("cannot create directory {}: {}", cur, std::strerror(errno));
      return false;
    }
    i = j + 1;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = fmt::format("{} is not a directory", path);
    return false;
  }
  return true;
}

static std::string tempNameFor(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return fmt::format("{}.{}.tmp.{}.{}", dir, base, ::getpid(), counter.fetch_add(1));
}

bool writeFileAtomic(const std::string& path, const std::string& contents, std::string& error) {
  std::string existing;
  if (readWholeFile(path, existing) && existing == contents) return true;
  std::string tmp = tempNameFor(path);
  if (!build_support::writeNewFile(tmp, contents, error)) {
    ::unlink(tmp.c_str());  // our own name (pid and counter): never another writer's file
    error = fmt::format("{} (while writing {})", error, path);
    return false;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    error = fmt::format("cannot write {}: {}", path, std::strerror(errno));
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::optional<std::string> defaultCacheDir(std::string& why) {
  auto absoluteEnv = [&](const char* var, const char* suffix) -> std::optional<std::string> {
    const char* v = std::getenv(var);
    if (!v || !*v) return std::nullopt;
    if (v[0] != '/') {
      why = fmt::format("${} ({}) is not an absolute path; the compile cache never lives relative to the current "
                        "directory",
                        var, v);
      return std::string();
    }
    return std::string(v) + suffix;
  };
  for (auto [var, suffix] : {std::pair{"KDL_CACHE_DIR", ""}, std::pair{"XDG_CACHE_HOME", "/kdl"},
                             std::pair{"HOME", "/.cache/kdl"}}) {
    std::optional<std::string> d = absoluteEnv(var, suffix);
    if (!d) continue;
    if (d->empty()) return std::nullopt;
    return d;
  }
  why = "neither $KDL_CACHE_DIR, $XDG_CACHE_HOME nor $HOME is set";
  return std::nullopt;
}

std::optional<uint64_t> parseByteSize(const std::string& text) {
  size_t i = 0;
  uint64_t v = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + uint64_t(text[i++] - '0');
  }
  if (i == 0) return std::nullopt;
  std::string unit;
  for (; i < text.size(); ++i) unit += char(std::tolower(static_cast<unsigned char>(text[i])));
  if (unit.size() > 1 && (unit.ends_with("ib"))) unit.resize(unit.size() - 2);
  else if (unit.size() > 1 && unit.back() == 'b') unit.pop_back();
  int shift = 0;
  if (unit.empty() || unit == "b") shift = 0;
  else if (unit == "k") shift = 10;
  else if (unit == "m") shift = 20;
  else if (unit == "g") shift = 30;
  else if (unit == "t") shift = 40;
  else return std::nullopt;
  if (v == 0 || v > (UINT64_MAX >> shift)) return std::nullopt;
  return v << shift;
}

std::string formatByteSize(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = double(bytes);
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} bytes", bytes) : fmt::format("{:.1f} {} ({} bytes)", v, units[u], bytes);
}

CompileCache::CompileCache(std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty() || dir_[0] != '/') {
    why_ = fmt::format("the cache directory `{}` is not an absolute path", dir_);
    return;
  }
  std::string err;
  size_t slash = dir_.rfind('/');
  if (slash > 0 && !makeDirs(dir_.substr(0, slash), err)) {
    why_ = err;
    return;
  }
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) {
    why_ = fmt::format("cannot create the cache directory {}: {}", dir_, std::strerror(errno));
    return;
  }
  // A symlink is followed only when this user made it: someone else's link could point the cache
  // (whose objects are linked into the user's programs) anywhere.
  struct stat st;
  if (::lstat(dir_.c_str(), &st) != 0) {
    why_ = fmt::format("cannot inspect the cache directory {}: {}", dir_, std::strerror(errno));
    return;
  }
  if (S_ISLNK(st.st_mode)) {
    if (st.st_uid != ::getuid()) {
      why_ = fmt::format("the cache directory {} is a symlink that belongs to another user", dir_);
      return;
    }
    if (::stat(dir_.c_str(), &st) != 0) {
      why_ = fmt::format("the cache directory {} is a symlink to nothing: {}", dir_, std::strerror(errno));
      return;
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    why_ = fmt::format("the cache path {} is not a directory", dir_);
    return;
  }
  if (st.st_uid != ::getuid()) {
    why_ = fmt::format("the cache directory {} belongs to another user", dir_);
    return;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    why_ = fmt::format("the cache directory {} is writable by other users", dir_);
    return;
  }
  usable_ = true;
  if (::access(dir_.c_str(), W_OK | X_OK) != 0) {
    whyNotWritable_ = fmt::format("the cache directory {} is not writable ({})", dir_, std::strerror(errno));
    return;
  }
  writable_ = true;
}

std::string CompileCache::key(const std::string& sourceText,
                              const std::vector<std::pair<std::string, std::string>>& headers,
                              const std::string& toolchain, const std::vector<std::string>& flags) {
  Sha256 h;
  auto field = [&](std::string_view s) {
    std::string len = std::to_string(s.size()) + ":";
    h.update(len);
    h.update(s);
  };
  field("kdl-compile-cache-v3");
  field(sourceText);
  for (const auto& [name, text] : headers) {
    field(name);
    field(text);
  }
  field(toolchain);
  for (const std::string& f : flags) field(f);
  return h.hexDigest();
}

std::string CompileCache::entryPath(const std::string& key) const { return dir_ + "/" + key.substr(0, 2) + "/" + key + ".o"; }

// An entry's digest file: the sha256 of the object, then of the compiler's output.
static std::string entryDigest(const CacheEntry& e) { return sha256Hex(e.object) + "\n" + sha256Hex(e.output) + "\n"; }

std::optional<CacheEntry> CompileCache::lookup(const std::string& key) const {
  if (!usable_) return std::nullopt;
  CacheEntry e;
  std::string digest;
  std::string path = entryPath(key);
  if (!readWholeFile(path, e.object) || !readWholeFile(path + ".log", e.output) ||
      !readWholeFile(path + ".sha256", digest))
    return std::nullopt;
  if (entryDigest(e) != digest) {
    ::unlink(path.c_str());  // corrupt, tampered or half-replaced: never use it
    return std::nullopt;
  }
  // The entry's mtime is its last use: evictTo() removes the oldest first.
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  return e;
}

bool CompileCache::store(const std::string& key, const CacheEntry& entry) const {
  if (!usable_ || !writable_) return false;
  std::string err;
  std::string path = entryPath(key);
  std::string sub = path.substr(0, path.rfind('/'));
  if (::mkdir(sub.c_str(), 0700) != 0 && errno != EEXIST) return false;
  // The digest and the output first: a reader that sees the object also sees them.
  return writeFileAtomic(path + ".sha256", entryDigest(entry), err) && writeFileAtomic(path + ".log", entry.output, err) &&
         writeFileAtomic(path, entry.object, err);
}

namespace {

bool isHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// The shard directories of a cache: two lowercase hex digits, as entryPath() names them.
std::vector<std::string> shardDirs(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() == 2 && isHex(name)) out.push_back(dir + "/" + name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// "<64 hex>.o" is an entry, "<64 hex>.o.sha256" its digest, "<64 hex>.o.log" the compiler's output,
// ".<64 hex>.o*.tmp.*" an unfinished write (writeFileAtomic's temporary names).
bool isEntryObject(const std::string& n) { return n.size() == 66 && n.ends_with(".o") && isHex(n.substr(0, 64)); }
bool isEntryFile(const std::string& n) {
  if (isEntryObject(n)) return true;
  if (n.size() == 73 && n.ends_with(".o.sha256") && isHex(n.substr(0, 64))) return true;
  if (n.size() == 70 && n.ends_with(".o.log") && isHex(n.substr(0, 64))) return true;
  return n.size() > 66 && n[0] == '.' && isHex(n.substr(1, 64)) && n.compare(65, 2, ".o") == 0 &&
         n.find(".tmp.", 67) != std::string::npos;
}

struct EntryInfo {
  std::string object;
  uint64_t bytes;
  struct timespec used;
};

std::vector<EntryInfo> listEntries(const std::string& dir) {
  std::vector<EntryInfo> out;
  for (const std::string& shard : shardDirs(dir)) {
    DIR* d = ::opendir(shard.c_str());
    if (!d) continue;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (!isEntryObject(name)) continue;
      std::string path = shard + "/" + name;
      struct stat st, sd;
      if (::stat(path.c_str(), &st) != 0) continue;
      uint64_t bytes = uint64_t(st.st_size);
      for (const char* side : {".sha256", ".log"})
        if (::stat((path + side).c_str(), &sd) == 0) bytes += uint64_t(sd.st_size);
      out.push_back({path, bytes, st.st_mtim});
    }
    ::closedir(d);
  }
  return out;
}

}  // namespace

CacheStats CompileCache::stats() const {
  CacheStats s;
  if (!usable_) return s;
  for (const EntryInfo& e : listEntries(dir_)) {
    ++s.entries;
    s.bytes += e.bytes;
  }
  return s;
}

uint64_t CompileCache::evictTo(uint64_t maxBytes) const {
  if (!usable_ || !writable_) return 0;
  std::vector<EntryInfo> entries = listEntries(dir_);
  uint64_t total = 0;
  for (const EntryInfo& e : entries) total += e.bytes;
  if (total <= maxBytes) return 0;
  std::sort(entries.begin(), entries.end(), [](const EntryInfo& a, const EntryInfo& b) {
    if (a.used.tv_sec != b.used.tv_sec) return a.used.tv_sec < b.used.tv_sec;
    if (a.used.tv_nsec != b.used.tv_nsec) return a.used.tv_nsec < b.used.tv_nsec;
    return a.object < b.object;
  });
  uint64_t removed = 0;
  for (const EntryInfo& e : entries) {
    if (total <= maxBytes) break;
    // The object first: lookup() needs both, so a reader never sees an object without its digest.
    if (::unlink(e.object.c_str()) != 0) continue;
    ::unlink((e.object + ".sha256").c_str());
    ::unlink((e.object + ".log").c_str());
    total -= e.bytes;
    ++removed;
  }
  return removed;
}

bool CompileCache::clear(uint64_t& removed, std::string& error) const {
  removed = 0;
  if (!usable_) {
    error = why_;
    return false;
  }
  for (const std::string& shard : shardDirs(dir_)) {
    DIR* d = ::opendir(shard.c_str());
    if (!d) continue;
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (isEntryFile(n)) names.push_back(n);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      std::string path = shard + "/" + n;
      if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
        error = fmt::format("cannot remove {}: {}", path, std::strerror(errno));
        return false;
      }
      if (isEntryObject(n)) ++removed;
    }
    ::rmdir(shard.c_str());  // only succeeds when nothing else lives there
  }
  return true;
}

bool readKdlHeaders(const std::string& includeDir, std::vector<std::pair<std::string, std::string>>& out,
                    std::string& error) {
  out.clear();
  std::string dir = includeDir + "/kdl";
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    error = fmt::format("cannot read the KDL header directory {}: {}", dir, std::strerror(errno));
    return false;
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  // Every file counts: a header the key silently left out would let a stale object through.
  for (const std::string& name : names) {
    std::string text, err;
    if (!readWholeFile(dir + "/" + name, text, err)) {
      error = err + " (a KDL header; the compile cache key needs it)";
      return false;
    }
    out.emplace_back("kdl/" + name, std::move(text));
  }
  return true;
}

}  // namespace kdl::codegen
