#pragma once

namespace kdlc {

enum ExitCode { kOk = 0, kInputErrors = 1, kUsage = 2, kInternal = 3 };

// Parses the command line and runs one command; returns the process exit code.
int runCommand(int argc, char** argv);

}  // namespace kdlc
