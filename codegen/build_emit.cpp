// emitToDirectory: a spec's emitted files into a directory, all or nothing, one spec per directory.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <set>

#include "codegen/build.h"
#include "codegen/build_support.h"
#include "codegen/compile_cache.h"
#include "codegen/sha256.h"

namespace kdl::codegen {

std::string hashSpecSources(const SourceManager& sm) {
  Sha256 h;
  for (uint32_t id = 1; id <= sm.fileCount(); ++id) {
    const std::string& t = sm.text(id);
    h.update(fmt::format("{}:", t.size()));
    h.update(t);
  }
  return h.hexDigest();
}

// ---- emit ------------------------------------------------------------------------------------------

using namespace build_support;

namespace {

// Just enough JSON to read back a manifest.json that kdlc wrote: objects, arrays, strings, and
// other scalars kept as raw text.
struct Json {
  enum class Kind { Null, Scalar, String, Array, Object } kind = Kind::Null;
  std::string text;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;
  const Json* get(const std::string& key) const {
    for (const auto& [k, v] : members)
      if (k == key) return &v;
    return nullptr;
  }
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& s) : s_(s) {}
  bool parse(Json& out) {
    if (!value(out, 0)) return false;
    skipSpace();
    return i_ == s_.size();
  }

 private:
  void skipSpace() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  bool string(std::string& out) {
    if (i_ >= s_.size() || s_[i_] != '"') return false;
    ++i_;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) return false;
      char e = s_[i_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) return false;
          unsigned long cp = std::strtoul(s_.substr(i_, 4).c_str(), nullptr, 16);
          i_ += 4;
          if (cp < 0x80) out += char(cp);
          else out += '?';  // names kdlc writes are ASCII; anything else only needs to differ
          break;
        }
        default: out += e;
      }
    }
    if (i_ >= s_.size()) return false;
    ++i_;
    return true;
  }
  bool value(Json& out, int depth) {
    if (depth > 64) return false;
    skipSpace();
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '"') {
      out.kind = Json::Kind::String;
      return string(out.text);
    }
    if (c == '[' || c == '{') {
      bool object = c == '{';
      out.kind = object ? Json::Kind::Object : Json::Kind::Array;
      ++i_;
      skipSpace();
      char close = object ? '}' : ']';
      if (i_ < s_.size() && s_[i_] == close) {
        ++i_;
        return true;
      }
      for (;;) {
        skipSpace();
        Json v;
        std::string key;
        if (object) {
          if (!string(key)) return false;
          skipSpace();
          if (i_ >= s_.size() || s_[i_++] != ':') return false;
        }
        if (!value(v, depth + 1)) return false;
        if (object) out.members.emplace_back(std::move(key), std::move(v));
        else out.items.push_back(std::move(v));
        skipSpace();
        if (i_ >= s_.size()) return false;
        char sep = s_[i_++];
        if (sep == close) return true;
        if (sep != ',') return false;
      }
    }
    size_t start = i_;
    while (i_ < s_.size() && std::string_view(",]} \n\t\r").find(s_[i_]) == std::string_view::npos) ++i_;
    out.kind = Json::Kind::Scalar;
    out.text = s_.substr(start, i_ - start);
    return !out.text.empty();
  }
  const std::string& s_;
  size_t i_ = 0;
};

// What an existing manifest.json says the directory holds.
struct PreviousOutput {
  bool exists = false;
  std::string spec;
  std::vector<std::string> files;  // every kernel's files, relative to the directory
};

// A file name a manifest may name for removal: a plain name in the directory, of a kind kdlc emits.
bool isEmittedFileName(const std::string& n) {
  if (n.empty() || n.find('/') != std::string::npos || n == "." || n == ".." || n == "manifest.json") return false;
  return n.ends_with(".h") || n.ends_with(".cu") || n.ends_with(".cuh") || n.ends_with(".cpp") || n.ends_with(".py");
}

bool readPreviousOutput(const std::string& dir, PreviousOutput& prev, std::string& error) {
  std::string path = dir + "/manifest.json";
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return true;
  std::string text, err;
  Json m;
  const Json* gen = nullptr;
  if (!S_ISREG(st.st_mode) || !readWholeFile(path, text, err) || !JsonReader(text).parse(m) ||
      m.kind != Json::Kind::Object || !(gen = m.get("generator")) || gen->text.rfind("kdlc", 0) != 0) {
    error = fmt::format("{} exists and is not a manifest kdlc wrote; refusing to replace it (choose another "
                        "output directory)",
                        path);
    return false;
  }
  prev.exists = true;
  if (const Json* spec = m.get("spec")) prev.spec = spec->text;
  if (const Json* kernels = m.get("kernels"))
    for (const Json& k : kernels->items)
      if (const Json* files = k.get("files"))
        for (const auto& [role, f] : files->members)
          if (f.kind == Json::Kind::String && isEmittedFileName(f.text)) prev.files.push_back(f.text);
  // --torch: the extension's source and build script (its library is kdlc build's, like lib<stem>.so).
  if (const Json* torch = m.get("torch"))
    for (const char* key : {"source", "build_script"})
      if (const Json* f = torch->get(key); f && f->kind == Json::Kind::String && isEmittedFileName(f->text))
        prev.files.push_back(f->text);
  return true;
}

// Every target must be absent or a regular file before anything moves: a rename that fails half way
// through publishing would leave a mix of two emits.
bool checkTargets(const std::string& dir, const std::vector<EmittedFile>& files, std::string& error) {
  for (const EmittedFile& f : files) {
    struct stat st;
    std::string target = dir + "/" + f.path;
    if (::lstat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      error = fmt::format("{} exists and is not a regular file; nothing in {} was changed", target, dir);
      return false;
    }
  }
  return true;
}

// Moves the staged files into `dir`, manifest.json last; a file whose bytes are unchanged keeps its
// mtime (build systems rely on it).
bool publishStaged(const std::string& stage, const std::string& dir, const std::vector<EmittedFile>& files,
                   std::string& error) {
  std::vector<const EmittedFile*> order;
  for (const EmittedFile& f : files)
    if (f.path != "manifest.json") order.push_back(&f);
  for (const EmittedFile& f : files)
    if (f.path == "manifest.json") order.push_back(&f);
  for (const EmittedFile* f : order) {
    std::string staged = stage + "/" + f->path, target = dir + "/" + f->path;
    if (sameContents(target, f->contents)) continue;
    if (::rename(staged.c_str(), target.c_str()) != 0) {
      error = fmt::format("cannot write {}: {}", target, std::strerror(errno));
      return false;
    }
  }
  return true;
}

std::string depfileEscape(const std::string& p) {
  std::string out;
  for (char c : p) {
    if (c == ' ' || c == '#') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

}  // namespace

StepResult emitToDirectory(const EmitRequest& req) {
  std::string err;
  if (!makeDirs(req.outDir, err)) return failure(err);
  DirLock lock(req.outDir);
  if (!lock.held()) return interrupted() ? interruptedResult() : failure(lock.error());

  PreviousOutput prev;
  if (!readPreviousOutput(req.outDir, prev, err)) return failure(err);
  if (prev.exists && prev.spec != req.specName)
    return failure(fmt::format("{} holds the output of {} (see its manifest.json); emitting {} there would replace it",
                               req.outDir, prev.spec.empty() ? "another spec" : prev.spec, req.specName),
                   "give each spec its own output directory");

  RunDir stage(req.outDir, "emit");
  if (!stage.ok()) return failure(stage.error());
  for (const EmittedFile& f : req.files)
    if (!writeNewFile(stage.path() + "/" + f.path, f.contents, err))
      return failure(fmt::format("{}; nothing in {} was changed", err, req.outDir));
  if (interrupted()) return interruptedResult();
  if (!checkTargets(req.outDir, req.files, err)) return failure(err);
  if (!publishStaged(stage.path(), req.outDir, req.files, err)) return failure(err);

  // Kernels the previous emit wrote and this one does not: their files would be orphans.
  std::set<std::string> now;
  for (const EmittedFile& f : req.files) now.insert(f.path);
  for (const std::string& f : prev.files)
    if (!now.count(f)) ::unlink((req.outDir + "/" + f).c_str());

  // Build systems compare manifest.json's time with the inputs' (the other files keep theirs when
  // unchanged, so that nothing downstream rebuilds).
  if (req.touchManifest) ::utimensat(AT_FDCWD, (req.outDir + "/manifest.json").c_str(), nullptr, 0);
  if (!req.depfile.empty()) {
    std::string d = depfileEscape(absolutePath(req.outDir + "/manifest.json")) + ":";
    for (const std::string& in : req.depInputs) d += " \\\n  " + depfileEscape(absolutePath(in));
    d += "\n";
    if (!makeDirs(dirName(req.depfile), err) || !writeFileAtomic(req.depfile, d, err)) return failure(err);
  }
  return {};
}

}  // namespace kdl::codegen
