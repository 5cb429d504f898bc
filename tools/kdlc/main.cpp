// kdlc: the KDL compiler driver. Runs the phases in order (parse -> evaluate -> validate -> lower ->
// emit -> nvcc) and prints diagnostics. Exit codes: 0 success, 1 the input has errors, 2 bad command
// line, 3 internal error, 128 + N interrupted by signal N (emit and build stop their compilers first).
#include <pthread.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "tools/kdlc/commands.h"

namespace {

struct ThreadArgs {
  int argc;
  char** argv;
  int result = 3;
};

void* runThread(void* p) {
  auto* a = static_cast<ThreadArgs*>(p);
  try {
    a->result = kdlc::runCommand(a->argc, a->argv);
  } catch (const std::bad_alloc&) {
    std::cerr << "kdlc: internal error: out of memory\n"
              << "kdlc: note: please report this as a bug with the input that caused it\n";
    a->result = 3;
  } catch (const std::exception& e) {
    std::cerr << "kdlc: internal error: " << e.what() << "\n"
              << "kdlc: note: please report this as a bug with the input that caused it\n";
    a->result = 3;
  } catch (...) {
    std::cerr << "kdlc: internal error: unknown exception\n"
              << "kdlc: note: please report this as a bug with the input that caused it\n";
    a->result = 3;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  // The parser and evaluator recurse; their depth is capped, and a large stack keeps the cap far
  // from the real limit.
  ThreadArgs args{argc, argv};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t(512) << 20);
  pthread_t thread;
  if (pthread_create(&thread, &attr, runThread, &args) != 0) {
    runThread(&args);
  } else {
    pthread_join(thread, nullptr);
  }
  pthread_attr_destroy(&attr);
  std::fflush(stdout);
  return args.result;
}
