#include "gui/cli/cli_common.h"

#include "engine/backends/cpu/threads.h"
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/io/npy.h"

#include <stdexcept>

namespace tscope::gui {

engine::Mode parseMode(const std::string& mode, const std::string& option) {
  if (mode == "none") return engine::Mode::None;
  if (mode == "fast_compile") return engine::Mode::FastCompile;
  if (mode == "fast_run") return engine::Mode::FastRun;
  if (mode == "debug") return engine::Mode::Debug;
  throw std::invalid_argument(option + " expects none, fast_compile, fast_run or debug, found '" +
                              mode + "'");
}

// The values and mode of `run`, `debug` and `profile`: --input, --random-inputs, --mode; and
// --threads, the engine's intra-op thread count for the rest of the process.
engine::Device parseDeviceFlag(const QCommandLineParser& p) {
  // optionNames(): the options given; isSet would warn on a sub-command without --device.
  if (!p.optionNames().contains("device")) return engine::Device::Cpu;
  const std::string device = p.value("device").toStdString();
  if (device == "cpu") return engine::Device::Cpu;
  if (device != "cuda")
    throw std::invalid_argument("--device expects cpu or cuda, found '" + device + "'");
  return engine::Device::Cuda;
}

engine::Device deviceFromFlag(const QCommandLineParser& p) {
  const engine::Device device = parseDeviceFlag(p);
  if (device == engine::Device::Cuda) engine::cuda::registerCudaBackend();
  return device;
}

engine::session::RunInputs runInputsFromFlags(const QCommandLineParser& p) {
  engine::session::RunInputs inputs;
  for (const QString& spec : p.values("input")) {
    const qsizetype eq = spec.indexOf('=');
    if (eq <= 0 || eq == spec.size() - 1)
      throw std::invalid_argument("--input expects NAME=FILE.npy, found '" + spec.toStdString() +
                                  "'");
    const std::string name = spec.left(eq).toStdString();
    if (inputs.byName.count(name))
      throw std::invalid_argument("--input gives '" + name + "' twice");
    inputs.byName[name] = engine::io::loadNpy(spec.mid(eq + 1).toStdString());
  }
  if (p.isSet("random-inputs")) {
    bool ok = false;
    const qulonglong seed = p.value("random-inputs").toULongLong(&ok);
    if (!ok)
      throw std::invalid_argument("--random-inputs expects a non-negative integer seed, found '" +
                                  p.value("random-inputs").toStdString() + "'");
    inputs.randomSeed = seed;
  }
  if (p.isSet("mode")) inputs.mode = parseMode(p.value("mode").toStdString(), "--mode");
  inputs.device = deviceFromFlag(p);
  if (p.isSet("threads")) {
    bool ok = false;
    const int n = p.value("threads").toInt(&ok);
    if (!ok || n < 1 || n > 4096)
      throw std::invalid_argument("--threads expects a thread count from 1 to 4096, found '" +
                                  p.value("threads").toStdString() + "'");
    engine::cpu::setIntraOpThreads(n);  // engine/backends/cpu/threads.h
  }
  return inputs;
}

// MissingInputValue names what is missing in the engine's terms; the flags that give it are the
// CLI's to name.
[[noreturn]] void rethrowMissing(const engine::session::MissingInputValue& e) {
  const std::string name = e.input.empty() ? std::string("NAME") : e.input;
  throw std::invalid_argument(std::string(e.what()) + " (--input " + name + "=FILE.npy" +
                              (e.randomPossible ? ", or --random-inputs SEED)" : ")"));
}

}  // namespace tscope::gui
