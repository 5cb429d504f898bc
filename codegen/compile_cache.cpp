#include "codegen/compile_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "codegen/sha256.h"

namespace kdl::codegen {

bool readWholeFile(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
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
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = fmt::format("cannot write {}: {}", tmp, std::strerror(errno));
    return false;
  }
  size_t off = 0;
  while (off < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + off, contents.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = fmt::format("cannot write {}: {}", tmp, std::strerror(errno));
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    off += size_t(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
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
  struct stat st;
  if (::lstat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
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
}

std::string CompileCache::key(const std::string& sourceText,
                              const std::vector<std::pair<std::string, std::string>>& headers,
                              const std::string& compilerVersion, const std::vector<std::string>& flags) {
  Sha256 h;
  auto field = [&](std::string_view s) {
    std::string len = std::to_string(s.size()) + ":";
    h.update(len);
    h.update(s);
  };
  field("kdl-compile-cache-v1");
  field(sourceText);
  for (const auto& [name, text] : headers) {
    field(name);
    field(text);
  }
  field(compilerVersion);
  for (const std::string& f : flags) field(f);
  return h.hexDigest();
}

std::string CompileCache::entryPath(const std::string& key) const { return dir_ + "/" + key.substr(0, 2) + "/" + key + ".o"; }

std::optional<std::string> CompileCache::lookup(const std::string& key) const {
  if (!usable_) return std::nullopt;
  std::string obj, digest;
  std::string path = entryPath(key);
  if (!readWholeFile(path, obj) || !readWholeFile(path + ".sha256", digest)) return std::nullopt;
  while (!digest.empty() && (digest.back() == '\n' || digest.back() == ' ')) digest.pop_back();
  if (sha256Hex(obj) != digest) {
    ::unlink(path.c_str());  // corrupt or tampered: never use it
    return std::nullopt;
  }
  return obj;
}

bool CompileCache::store(const std::string& key, const std::string& object) const {
  if (!usable_) return false;
  std::string err;
  std::string path = entryPath(key);
  std::string sub = path.substr(0, path.rfind('/'));
  if (::mkdir(sub.c_str(), 0700) != 0 && errno != EEXIST) return false;
  // The digest first: a reader that sees the object also sees its digest.
  return writeFileAtomic(path + ".sha256", sha256Hex(object) + "\n", err) && writeFileAtomic(path, object, err);
}

std::vector<std::pair<std::string, std::string>> readKdlHeaders(const std::string& includeDir) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string dir = includeDir + "/kdl";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string text;
    if (readWholeFile(dir + "/" + name, text)) out.emplace_back("kdl/" + name, std::move(text));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace kdl::codegen
