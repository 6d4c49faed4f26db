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

// --device cpu|cuda (default cpu). cuda starts the CUDA backend (registerCudaBackend in
// engine/backends/cuda/cuda_backend.h), which throws CudaUnavailable when this build has no CUDA
// backend or the runtime finds no device; runCli turns that into one line and kExitNoDevice.
engine::Device deviceFromFlag(const QCommandLineParser& p);
// --device as given (cpu when absent), checked but without starting any backend: for commands
// that only place a graph (optimize).
engine::Device parseDeviceFlag(const QCommandLineParser& p);

// MissingInputValue names what is missing in the engine's terms; the flags that give it are the
// CLI's to name.
[[noreturn]] void rethrowMissing(const engine::session::MissingInputValue& e);

}  // namespace tscope::gui
