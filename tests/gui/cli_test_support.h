#pragma once
// Running `tensorscope <args>` in-process for the CLI tests: the exit code and both streams.

#include "gui/cli/cli.h"

#include <string>
#include <vector>

namespace tscope::test {

struct CliResult {
  int code;
  std::string out, err;
};

inline CliResult cli(std::vector<std::string> args) {
  CliResult r;
  r.code = gui::runCli(args, r.out, r.err);
  return r;
}

}  // namespace tscope::test
