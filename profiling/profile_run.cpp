#include "profiling/profile_run.h"

#include "engine/vm/vm.h"

#include <chrono>
#include <ctime>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <unistd.h>

namespace tscope::prof {

namespace {

// Detaches the profiler and restores the VM's timing flag, also when a call throws.
struct Attached {
  engine::VM& vm;
  std::shared_ptr<Profiler> profiler;
  bool timing;
  Attached(engine::VM& v, std::shared_ptr<Profiler> p)
      : vm(v), profiler(std::move(p)), timing(v.timing()) {
    vm.addObserver(profiler);
  }
  ~Attached() {
    vm.removeObserver(*profiler);
    vm.setTiming(timing);
  }
};

}  // namespace

Profile profileFunction(engine::Function& f, const std::vector<engine::Tensor>& args,
                        const ProfileRunOptions& options) {
  if (options.warmup < 0 || options.runs <= 0)
    throw std::invalid_argument(
        "profileFunction: expected warmup >= 0 and runs >= 1, found warmup " +
        std::to_string(options.warmup) + " and runs " + std::to_string(options.runs));
  auto profiler = std::make_shared<Profiler>(options.profiler);
  const std::int64_t total = options.warmup + options.runs;
  {
    Attached attached(f.vm(), profiler);
    std::int64_t done = 0;
    profiler->setMeasuring(false);
    for (std::int64_t i = 0; i < options.warmup; ++i) {
      f(args);
      if (options.progress) options.progress(++done, total);
    }
    profiler->setMeasuring(true);
    for (std::int64_t i = 0; i < options.runs; ++i) {
      const std::int64_t start = profiler->now();
      f(args);
      const std::int64_t end = profiler->now();
      profiler->recordCallSpan(start, end);
      if (options.progress) options.progress(++done, total);
    }
    profiler->setMeasuring(false);
  }
  Profile p = profiler->snapshot(f);
  p.machine = thisMachine();
  p.date = utcNow();
  return p;
}

MachineInfo thisMachine() {
  MachineInfo m;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) m.host = host;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        m.cpu = line.substr(colon + 1);
        const auto first = m.cpu.find_first_not_of(" \t");
        m.cpu = first == std::string::npos ? std::string() : m.cpu.substr(first);
      }
      break;
    }
  }
  m.threads = static_cast<std::int64_t>(std::thread::hardware_concurrency());
  return m;
}

std::string utcNow() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

}  // namespace tscope::prof
