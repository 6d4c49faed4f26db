#pragma once
// What several sub-commands share: the values and mode of a run (--input, --random-inputs,
// --mode) and the CLI's wording of a missing input.

#include "engine/compile/function.h"
#include "engine/session/run_graph.h"

#include <QCommandLineParser>

#include <string>

namespace tscope::gui {

// "none", "fast_compile", "fast_run", "debug"; throws std::invalid_argument naming `option`.
engine::Mode parseMode(const std::string& mode, const std::string& option);

// --input NAME=FILE.npy (repeatable), --random-inputs SEED, --mode M.
engine::session::RunInputs runInputsFromFlags(const QCommandLineParser& p);

// MissingInputValue names what is missing in the engine's terms; the flags that give it are the
// CLI's to name.
[[noreturn]] void rethrowMissing(const engine::session::MissingInputValue& e);

}  // namespace tscope::gui
