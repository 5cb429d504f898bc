#include "tools/kdlc/commands.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "codegen/build.h"
#include "codegen/codegen.h"
#include "codegen/compile_cache.h"
#include "codegen/plan.h"
#include "codegen/render_plan_json.h"
#include "codegen/support.h"
#include "dsl/ast.h"
#include "dsl/diagnostics.h"
#include "dsl/frontend.h"
#include "tools/kdlc/list.h"
#include "dsl/parse/parser.h"
#include "tools/kdlc/options.h"

#ifndef KDL_SOURCE_INCLUDE_DIR
#define KDL_SOURCE_INCLUDE_DIR ""
#endif
#ifndef KDL_VERSION
#define KDL_VERSION "0.0.0"
#endif

namespace kdlc {

static const char* kMainHelp = R"(kdlc — the KDL kernel compiler

Usage: kdlc <command> [options] FILE...

Commands:
  check FILE...           parse, evaluate and validate; print diagnostics only
  list FILE [--json]      print every kernel with every field resolved and where it came from
  emit FILE -o DIR        write standalone .cu/.h per kernel and manifest.json to DIR
  build FILE -o DIR       emit, then compile with nvcc into a library (content-hashed cache)
  cache --info|--clear    show or empty the compile cache of `build`
  --include-dir           print the kdl include directory that build uses ($KDL_INCLUDE_DIR, <exe dir>/../include,
                          the source tree)
  support [--specs]       what the sm90a path generates, line by line (--specs: one kernel per line)
  ptxas-gate -- CMD...    run one compile and apply build's ptxas gate to it (for kdl_add_kernels)

Options for every command:
  --diagnostics=text|json   how errors are printed (default text, on stderr)
  --color=auto|always|never colour in text diagnostics (default auto: when stderr is a terminal)
  --max-errors=N            stop listing errors after N (default 50)
  --max-kernels=N           cap on the kernels one run may produce (default 100000)
  --max-depth=N             cap on call and nesting depth (default 256)
  -h, --help                help (also `kdlc <command> --help`)
  --version                 print the version

PyTorch: `kdlc emit --torch` also writes a PyTorch extension with one op per kernel (torch.ops.NS.KERNEL)
and the script that builds it; `kdlc build --torch` builds it too (docs/torch.md).
Building (`kdlc build --help`, docs/building.md): --launcher CMD or $KDL_LAUNCHER wraps each nvcc
compile (sccache, distcc); the compile cache is $KDL_CACHE_DIR, capped by --cache-max-size or
$KDL_CACHE_MAX_SIZE (default 2G). A kernel that ptxas reports spilling, ignoring setmaxnreg or
serializing wgmma fails the build (--allow-ptxas-warnings builds it anyway).

Exit codes: 0 success, 1 the input has errors, 2 bad command line, 3 internal error,
128 + N interrupted by signal N.
)";

static const char* kCheckHelp = R"(Usage: kdlc check [options] FILE...

Parses, evaluates and validates each FILE and reports every error in source order, like a compiler:
  gemm.kdl:12:10: error: tile M = 96 is not a multiple of 64, which the sm90a wgmma path needs [tile-shape]
A file that passes check describes kernels that kdlc can generate: GEMMs this version cannot generate
yet (an sm90a feature the template lacks, split_k = stream_k) are [unsupported] errors here as in emit;
convolutions are valid for check and refused by emit.

Options:
  --diagnostics=text|json   text on stderr (default), or one JSON document on stdout
  --emit=ast|specs          also print the AST (with locations) or the resolved specs of each file
                            (text on stdout; not with --diagnostics=json, whose stdout is one JSON
                            document: use `kdlc list --json` for the specs as JSON)
  --color, --max-errors, --max-kernels, --max-depth   see `kdlc --help`
)";

static const char* kListHelp = R"(Usage: kdlc list [options] FILE

Prints every kernel FILE produces with every field resolved and explicit: defaults and `auto` choices
included, each with its origin (explicit, template, default, auto) and the place its value came from.

Options:
  --json                    one JSON document: {"kernels": [{"name": ..., "op": {...}, ...}]}
  --plan                    print the code generation plan of each kernel instead: every decision
                            of lowering with its reason; with --json, {"plans": [{"name": ...,
                            "decisions": [{"what": ..., "value": ..., "why": ...}], ...}]}
  --diagnostics=text|json   text: diagnostics on stderr. json: stdout holds ONE JSON document (as if
                            --json was given) with the diagnostics folded in:
                            {"kernels"|"plans": [...], "diagnostics": [...], "errors": N}
  --color, --max-errors, --max-kernels, --max-depth   see `kdlc --help`

In every JSON mode stdout holds exactly one JSON document, also when the input has errors (then the
"kernels" or "plans" array is empty, or holds the plans that could be made).
)";

static bool stderrIsTty() { return isatty(2) != 0; }

static void printTextDiagnostics(const kdl::SourceManager& sm, const kdl::DiagEngine& diags, const CommonOptions& o) {
  if (!diags.all().empty()) {
    bool color = o.color == ColorMode::Always || (o.color == ColorMode::Auto && stderrIsTty());
    std::cerr << kdl::renderText(sm, diags, color);
    if (diags.capped())
      std::cerr << fmt::format("more than {} errors generated.\n", diags.errorCap());
    else if (diags.hasErrors())
      std::cerr << fmt::format("{} error{} generated.\n", diags.errorCount(), diags.errorCount() == 1 ? "" : "s");
  }
}

int reportDiagnostics(const kdl::SourceManager& sm, const kdl::DiagEngine& diags, const CommonOptions& o) {
  if (o.jsonDiagnostics)
    std::cout << kdl::renderJson(sm, diags);
  else
    printTextDiagnostics(sm, diags, o);
  return diags.hasErrors() ? kInputErrors : kOk;
}

// A valid kernel that this version cannot generate is refused by `check` too, with lowering's
// [unsupported] error at the field responsible (codegen/support.cpp and the sm90a table of
// codegen/support_sm90.cpp say what is generated), so that a kernel which passes `check` emits and compiles.
static void checkGenerable(const std::vector<kdl::KernelSpec>& specs, kdl::DiagEngine& diags) {
  kdl::codegen::lower(specs, diags);
}

static int runCheck(Args& args) {
  CommonOptions o;
  std::optional<std::string> emitWhat;
  std::vector<std::string> files;
  while (!args.done()) {
    std::string a = args.next();
    if (a == "-h" || a == "--help") { std::cout << kCheckHelp; return kOk; }
    if (parseCommon(a, args, o)) continue;
    if (a.rfind("--emit=", 0) == 0) {
      emitWhat = a.substr(7);
      if (*emitWhat != "ast" && *emitWhat != "specs") return usageError("--emit takes `ast` or `specs`, not `" + *emitWhat + "`");
      continue;
    }
    if (a.size() > 1 && a[0] == '-') return usageError("unknown option `" + a + "` for `kdlc check`");
    files.push_back(a);
  }
  if (o.bad) return kUsage;
  if (files.empty()) return usageError("`kdlc check` needs at least one FILE");
  if (emitWhat && o.jsonDiagnostics)
    return usageError("--emit prints text, which would break the one JSON document of --diagnostics=json; "
                      "use `kdlc list --json` for the resolved specs as JSON");
  kdl::SourceManager sm;
  kdl::DiagEngine diags(o.maxErrors);
  for (const std::string& f : files) {
    if (emitWhat == std::string("ast")) {
      kdl::DiagEngine parseDiags(o.maxErrors);
      std::string text;
      if (kdl::codegen::readWholeFile(f, text)) {
        uint32_t id = sm.add(f, text);
        auto tree = kdl::parseFile(sm, id, parseDiags, o.limits.maxCallDepth);
        if (tree) std::cout << kdl::ast::dump(*tree);
      }
    }
    const size_t first = diags.all().size();
    kdl::FrontendResult r = kdl::runFrontend(sm, f, diags, o.limits);
    if (emitWhat == std::string("specs")) std::cout << kdl::renderSpecsText(sm, r.specs);
    checkGenerable(r.specs, diags);
    kdl::codegen::noteAcceptedTiles(r.raw, diags, first);
  }
  return reportDiagnostics(sm, diags, o);
}

// `kdlc list`'s one JSON document: the kernels (or plans) under `key`, and the diagnostics when they
// are JSON too, so that stdout never holds two documents.
static std::string listDocument(const char* key, const std::string& array, const kdl::SourceManager& sm,
                                const kdl::DiagEngine& diags, bool withDiagnostics) {
  std::string out = fmt::format("{{\"{}\":{}", key, array);
  if (withDiagnostics) out += ",\n" + kdl::renderJsonMembers(sm, diags);
  return out + "}\n";
}

static int runList(Args& args) {
  CommonOptions o;
  bool json = false, plan = false;
  std::vector<std::string> files;
  while (!args.done()) {
    std::string a = args.next();
    if (a == "-h" || a == "--help") { std::cout << kListHelp; return kOk; }
    if (parseCommon(a, args, o)) continue;
    if (a == "--json") { json = true; continue; }
    if (a == "--plan") { plan = true; continue; }
    if (a.size() > 1 && a[0] == '-') return usageError("unknown option `" + a + "` for `kdlc list`");
    files.push_back(a);
  }
  if (o.bad) return kUsage;
  if (files.size() != 1) return usageError("`kdlc list` takes exactly one FILE");
  json = json || o.jsonDiagnostics;  // JSON diagnostics make the whole output one JSON document
  kdl::SourceManager sm;
  kdl::DiagEngine diags(o.maxErrors);
  kdl::FrontendResult r = kdl::runFrontend(sm, files[0], diags, o.limits);
  std::vector<kdl::codegen::KernelPlan> plans;
  if (plan && !diags.hasErrors()) plans = kdl::codegen::lower(r.specs, diags);
  kdl::codegen::noteAcceptedTiles(r.raw, diags);
  const bool listed = !plan && !diags.hasErrors();
  if (json) {
    std::string array = plan ? kdl::codegen::renderPlansJson(plans)
                             : kdl::renderSpecsJsonArray(sm, listed ? r.specs : std::vector<kdl::KernelSpec>{});
    std::cout << listDocument(plan ? "plans" : "kernels", array, sm, diags, o.jsonDiagnostics);
  } else if (plan) {
    std::cout << kdl::codegen::renderPlans(plans);
  } else if (listed) {
    std::cout << kdl::renderSpecsText(sm, r.specs);
  }
  if (!o.jsonDiagnostics) printTextDiagnostics(sm, diags, o);
  return diags.hasErrors() ? kInputErrors : kOk;
}

static const char* kSupportHelp = R"(Usage: kdlc support [--specs]

Prints the table of what the sm90a path (kdl::GemmSm90; schedule cooperative or pingpong) generates:
operand types and layouts, schedules with their tile M, tile N, clusters, raster, split-K, fp8
promotion and block scales, each line `generated` or `not yet`. `kdlc check` refuses what is not
generated with an [unsupported] error that says what is.

Options:
  --specs                   print a spec with one kernel per line that is generated (the compile
                            test of the table, tests/nvcc/tests.cmake, builds each)
)";

static int runSupport(Args& args) {
  bool specs = false;
  while (!args.done()) {
    std::string a = args.next();
    if (a == "-h" || a == "--help") { std::cout << kSupportHelp; return kOk; }
    if (a == "--specs") { specs = true; continue; }
    return usageError("unknown argument `" + a + "` for `kdlc support`");
  }
  std::cout << (specs ? kdl::codegen::sm90TableSpecs() : kdl::codegen::renderSm90Table());
  return kOk;
}

// `kdlc --include-dir`: the directory holding kdl/, as `kdlc build` finds it (for the build script of
// `emit --torch` and the kdl Python package).
static int runIncludeDir(Args& args) {
  if (!args.done()) return usageError("`kdlc --include-dir` takes no arguments");
  std::string dir = kdl::codegen::findIncludeDir(KDL_SOURCE_INCLUDE_DIR);
  if (dir.empty()) {
    std::cerr << "kdlc: error: cannot find the kdl include directory (kdl/gemm_sm80.cuh) in $KDL_INCLUDE_DIR, next to "
                 "kdlc (<exe dir>/../include) or in the source tree kdlc was built from; set $KDL_INCLUDE_DIR\n";
    return kInputErrors;
  }
  std::cout << dir << "\n";
  return kOk;
}

int runEmit(Args& args, bool build);
int runCache(Args& args);
int runPtxasGate(Args& args);

int runCommand(int argc, char** argv) {
  Args args(argc, argv);
  if (args.done()) {
    std::cerr << kMainHelp;
    return kUsage;
  }
  std::string cmd = args.next();
  if (cmd == "-h" || cmd == "--help" || cmd == "help") { std::cout << kMainHelp; return kOk; }
  if (cmd == "--version" || cmd == "version") {
    std::cout << "kdlc " << KDL_VERSION << "\n";
    return kOk;
  }
  if (cmd == "--include-dir") return runIncludeDir(args);
  if (cmd == "check") return runCheck(args);
  if (cmd == "list") return runList(args);
  if (cmd == "emit") return runEmit(args, false);
  if (cmd == "build") return runEmit(args, true);
  if (cmd == "cache") return runCache(args);
  if (cmd == "support") return runSupport(args);
  if (cmd == "ptxas-gate") return runPtxasGate(args);
  return usageError("unknown command `" + cmd +
                    "`; the commands are check, list, emit, build, cache, support, ptxas-gate (see `kdlc --help`)");
}

}  // namespace kdlc
