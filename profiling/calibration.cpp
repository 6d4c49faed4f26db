#include "profiling/calibration.h"

#include "engine/backends/cpu/gemm.h"
#include "profiling/profile_record.h"
#include "profiling/profile_run.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace tscope::prof {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// --- JSON -------------------------------------------------------------------------------------

[[noreturn]] void fail(const std::string& path, const std::string& expected,
                       const nlohmann::json& found) {
  failAt(path, expected, found);
}

const nlohmann::json& member(const nlohmann::json& object, const std::string& key,
                             const std::string& path) {
  const auto it = object.find(key);
  if (it == object.end()) throw ProfileError(path + ": a calibration needs \"" + key + "\"");
  return *it;
}

std::string stringAt(const nlohmann::json& object, const std::string& key,
                     const std::string& path) {
  const nlohmann::json& v = member(object, key, path);
  if (!v.is_string()) fail(path + "/" + key, "a string", v);
  return v.get<std::string>();
}

double figureAt(const nlohmann::json& object, const std::string& key, const std::string& path) {
  const nlohmann::json& v = member(object, key, path);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
    fail(path + "/" + key, "a finite number >= 0", v);
  return v.get<double>();
}

// --- Measurements -----------------------------------------------------------------------------

// A reusable barrier for `count` threads (a mutex and a generation counter: the rounds below are
// milliseconds long, so blocking costs nothing measurable). Not std::barrier: with GCC 12's
// libstdc++ the rounds it delimited here measured a fraction of the work (all-threads figures of
// 1e5 GFLOP/s on 2 cores), so the rounds are kept with the simplest barrier that is right.
class Barrier {
 public:
  explicit Barrier(std::int64_t count) : m_count(count) {}
  void arriveAndWait() {
    std::unique_lock lock(m_mutex);
    const std::uint64_t generation = m_generation;
    if (++m_arrived == m_count) {
      m_arrived = 0;
      ++m_generation;
      m_cv.notify_all();
      return;
    }
    m_cv.wait(lock, [&] { return m_generation != generation; });
  }

 private:
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::int64_t m_count;
  std::int64_t m_arrived = 0;
  std::uint64_t m_generation = 0;
};

// Restores the BLAS thread limit it found (Note [Calibration figures]).
class GemmThreadsGuard {
 public:
  explicit GemmThreadsGuard(int n) : m_previous(engine::cpu::gemmThreads()) {
    engine::cpu::setGemmThreads(n);
  }
  ~GemmThreadsGuard() { engine::cpu::setGemmThreads(m_previous); }
  GemmThreadsGuard(const GemmThreadsGuard&) = delete;
  GemmThreadsGuard& operator=(const GemmThreadsGuard&) = delete;

 private:
  int m_previous;
};

struct GemmBuffers {
  explicit GemmBuffers(std::int64_t n)
      : n(n), a(static_cast<std::size_t>(n * n)), b(a.size()), c(a.size()) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      a[i] = static_cast<float>((i % 7) + 1) * 0.125f;
      b[i] = static_cast<float>((i % 5) + 1) * 0.25f;
    }
  }
  // One product; returns its seconds.
  double run() {
    const auto start = Clock::now();
    engine::cpu::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    return secondsSince(start);
  }
  double flops() const { return 2.0 * static_cast<double>(n) * static_cast<double>(n) * n; }
  std::int64_t n;
  std::vector<float> a, b, c;
};

// The best single-thread rate over sizes 512, 1024, 2048 within about `budget` seconds; the size
// that reached it in *bestSize.
double gemmOne(double budget, std::int64_t* bestSize) {
  double best = 0;
  *bestSize = 512;
  const auto start = Clock::now();
  for (std::int64_t n : {512, 1024, 2048}) {
    const double left = budget - secondsSince(start);
    if (n > 512 && left <= 0) break;
    GemmBuffers buffers(n);
    double once = buffers.run();  // warm-up, and the estimate of one product
    // A larger size is tried only when a few products of it fit in what is left.
    if (n > 512 && once * 3 > left) break;
    const auto sizeStart = Clock::now();
    const double sizeBudget = n == 2048 ? left : left / 2;
    int reps = 0;
    do {
      once = buffers.run();
      if (once > 0) {
        const double rate = buffers.flops() / once / 1e9;
        if (rate > best) {
          best = rate;
          *bestSize = n;
        }
      }
      ++reps;
    } while (reps < 3 || secondsSince(sizeStart) < sizeBudget);
  }
  return best;
}

// Runs `work(t)` on `threads` threads at once, in rounds (each thread first runs `setup(t)`), for
// at least `minRounds` rounds and `budget` seconds; returns the best round's rate: `amount` (the
// work of one round: flops or bytes) per second, in billions.
// Note [Round timing]: each worker reads the clock around its own work, and a round lasts from
// the earliest start to the latest end. The coordinating thread's clock would be wrong: with more
// threads than cores it may be scheduled only after the workers finished (rates of 100,000
// GFLOP/s on 2 cores were measured so).
double bestRoundRate(std::int64_t threads, double budget, int minRounds, double amount,
                     const std::function<void(std::int64_t)>& setup,
                     const std::function<void(std::int64_t)>& work) {
  std::atomic<bool> stop{false};
  Barrier sync(threads + 1);
  std::vector<Clock::time_point> begun(static_cast<std::size_t>(threads)),
      ended(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  for (std::int64_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      setup(t);
      for (;;) {
        sync.arriveAndWait();
        if (stop.load()) return;
        begun[static_cast<std::size_t>(t)] = Clock::now();
        work(t);
        ended[static_cast<std::size_t>(t)] = Clock::now();
        sync.arriveAndWait();
      }
    });
  }
  double best = 0;
  const auto start = Clock::now();
  int rounds = 0;
  do {
    sync.arriveAndWait();
    sync.arriveAndWait();  // the barrier orders the workers' clock readings before these reads
    const auto first = *std::min_element(begun.begin(), begun.end());
    const auto last = *std::max_element(ended.begin(), ended.end());
    const double seconds = std::chrono::duration<double>(last - first).count();
    // A first round that pages memory in is measured but rarely the best.
    if (seconds > 0) best = std::max(best, amount / seconds / 1e9);
    ++rounds;
  } while (rounds < minRounds || secondsSince(start) < budget);
  stop.store(true);
  sync.arriveAndWait();
  for (std::thread& w : workers) w.join();
  return best;
}

// `threads` independent single-threaded products of size n at once: total flops / wall time of
// the best round.
double gemmAll(double budget, std::int64_t n, std::int64_t threads) {
  std::vector<GemmBuffers> buffers;
  buffers.reserve(static_cast<std::size_t>(threads));
  for (std::int64_t t = 0; t < threads; ++t) buffers.emplace_back(n);
  return bestRoundRate(
      threads, budget, 2, buffers[0].flops() * static_cast<double>(threads), [](std::int64_t) {},
      [&](std::int64_t t) { buffers[static_cast<std::size_t>(t)].run(); });
}

// The triad's arrays: 64 MiB of doubles each, or 4 times the last-level cache when that is larger
// (Linux's sysfs; a cache the system does not report leaves 64 MiB).
std::size_t triadElements() {
  std::size_t bytes = std::size_t{64} << 20;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string text;
    if (!(in >> text) || text.empty()) continue;
    std::size_t scale = 1;
    const char unit = text.back();
    if (unit == 'K') scale = std::size_t{1} << 10;
    if (unit == 'M') scale = std::size_t{1} << 20;
    if (unit == 'G') scale = std::size_t{1} << 30;
    const std::size_t size = std::strtoull(text.c_str(), nullptr, 10) * scale;
    bytes = std::max(bytes, std::min(size * 4, std::size_t{1} << 30));
  }
  return bytes / sizeof(double);
}

// The stream triad over `threads` chunks of three arrays; the best round's GB/s.
double triad(double budget, std::int64_t threads) {
  const std::size_t n = triadElements();
  std::vector<double> a(n), b(n), c(n);
  const auto chunk = [&](std::int64_t t) {
    const std::size_t per =
        (n + static_cast<std::size_t>(threads) - 1) / static_cast<std::size_t>(threads);
    const std::size_t lo = std::min(n, per * static_cast<std::size_t>(t));
    return std::pair{lo, std::min(n, lo + per)};
  };
  const double s = 3.0;
  const auto pass = [&](std::int64_t t) {
    const auto [lo, hi] = chunk(t);
    double* __restrict pa = a.data();
    const double* __restrict pb = b.data();
    const double* __restrict pc = c.data();
    for (std::size_t i = lo; i < hi; ++i) pa[i] = pb[i] + s * pc[i];
  };
  const double best = bestRoundRate(
      threads, budget, 3, 3.0 * sizeof(double) * static_cast<double>(n),
      [&](std::int64_t t) {
        const auto [lo, hi] = chunk(t);  // first touch by the thread that streams the chunk
        for (std::size_t i = lo; i < hi; ++i) {
          a[i] = 0;
          b[i] = 1.0 + static_cast<double>(i % 3);
          c[i] = 0.5;
        }
      },
      pass);
  // Keep the results observable so the loop cannot be dropped.
  volatile double sink = a[n / 2];
  (void)sink;
  return best;
}

void warn(const std::string& message) {
  std::cerr << "tensorscope: " << message << "\n";
}

}  // namespace

nlohmann::json Calibration::toJson() const {
  return {{"schema_version", kSchemaVersion},
          {"cpu", cpu},
          {"host", host},
          {"date", date},
          {"threads", threads},
          {"gemm_gflops_one", gemmGflopsOne},
          {"gemm_gflops_all", gemmGflopsAll},
          {"bandwidth_gbs_one", bandwidthGBsOne},
          {"bandwidth_gbs_all", bandwidthGBsAll}};
}

Calibration Calibration::fromJson(const nlohmann::json& value, const std::string& jsonPath) {
  if (!value.is_object()) fail(jsonPath, "a calibration object", value);
  const nlohmann::json& version = member(value, "schema_version", jsonPath);
  if (!version.is_number_integer() || version.get<std::int64_t>() != kSchemaVersion)
    fail(jsonPath + "/schema_version", "schema version " + std::to_string(kSchemaVersion), version);
  Calibration c;
  c.cpu = stringAt(value, "cpu", jsonPath);
  c.host = stringAt(value, "host", jsonPath);
  c.date = stringAt(value, "date", jsonPath);
  const nlohmann::json& threads = member(value, "threads", jsonPath);
  if (!threads.is_number_integer() || threads.get<std::int64_t>() < 1)
    fail(jsonPath + "/threads", "an integer >= 1", threads);
  c.threads = threads.get<std::int64_t>();
  c.gemmGflopsOne = figureAt(value, "gemm_gflops_one", jsonPath);
  c.gemmGflopsAll = figureAt(value, "gemm_gflops_all", jsonPath);
  c.bandwidthGBsOne = figureAt(value, "bandwidth_gbs_one", jsonPath);
  c.bandwidthGBsAll = figureAt(value, "bandwidth_gbs_all", jsonPath);
  return c;
}

std::string cpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(colon + 1);
    const auto first = name.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    return name.substr(first);
  }
  return "unknown CPU";
}

std::string hostName() {
#if defined(__unix__) || defined(__APPLE__)
  char buffer[256] = {};
  if (gethostname(buffer, sizeof buffer - 1) == 0 && buffer[0] != '\0') return buffer;
#endif
  return "unknown host";
}

std::int64_t calibrationThreads(const CalibrateOptions& options) {
  if (options.threads > 0) return options.threads;
  return std::max<std::int64_t>(1, std::thread::hardware_concurrency());
}

Calibration calibrate(const CalibrateOptions& options) {
  Calibration c;
  c.cpu = cpuModelName();
  c.host = hostName();
  c.date = utcNow();
  c.threads = calibrationThreads(options);
  const double budget = std::max(options.secondsPerFigure, 0.0);
  {
    GemmThreadsGuard guard(1);
    std::int64_t size = 512;
    c.gemmGflopsOne = gemmOne(budget, &size);
    c.gemmGflopsAll = c.threads == 1 ? c.gemmGflopsOne : gemmAll(budget, size, c.threads);
  }
  c.bandwidthGBsOne = triad(budget, 1);
  c.bandwidthGBsAll = c.threads == 1 ? c.bandwidthGBsOne : triad(budget, c.threads);
  return c;
}

std::filesystem::path calibrationCachePath() {
  const auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (const std::string dir = env("TSCOPE_CACHE_DIR"); !dir.empty())
    return std::filesystem::path(dir) / "calibration.json";
  if (const std::string dir = env("XDG_CACHE_HOME"); !dir.empty())
    return std::filesystem::path(dir) / "tensorscope" / "calibration.json";
  if (const std::string home = env("HOME"); !home.empty())
    return std::filesystem::path(home) / ".cache" / "tensorscope" / "calibration.json";
  return std::filesystem::temp_directory_path() / "tensorscope" / "calibration.json";
}

std::optional<Calibration> loadCachedCalibration(const CalibrateOptions& options) {
  const std::filesystem::path path = calibrationCachePath();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    warn("ignoring the calibration cache " + path.string() + ": it cannot be read");
    return std::nullopt;
  }
  try {
    const nlohmann::json value = nlohmann::json::parse(in);
    Calibration c = Calibration::fromJson(value, "");
    if (c.cpu != cpuModelName() || c.threads != calibrationThreads(options)) return std::nullopt;
    return c;
  } catch (const std::exception& e) {
    warn("ignoring the calibration cache " + path.string() + ": " + e.what());
    return std::nullopt;
  }
}

void saveCachedCalibration(const Calibration& calibration) {
  const std::filesystem::path path = calibrationCachePath();
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec)
    throw std::runtime_error("cannot create the calibration cache folder " +
                             path.parent_path().string() + ": " + ec.message());
#if defined(__unix__) || defined(__APPLE__)
  const std::string suffix = ".tmp." + std::to_string(::getpid());
#else
  const std::string suffix = ".tmp";
#endif
  const std::filesystem::path tmp = path.string() + suffix;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << calibration.toJson().dump(2) << "\n";
    out.close();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      throw std::runtime_error("cannot write the calibration cache " + tmp.string());
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw std::runtime_error("cannot replace the calibration cache " + path.string() + ": " +
                             ec.message());
  }
}

Calibration cachedOrCalibrate(const CalibrateOptions& options, bool* measuredNow) {
  if (std::optional<Calibration> cached = loadCachedCalibration(options)) {
    if (measuredNow) *measuredNow = false;
    return *cached;
  }
  Calibration c = calibrate(options);
  try {
    saveCachedCalibration(c);
  } catch (const std::exception& e) {
    warn(std::string("the calibration was not cached: ") + e.what());
  }
  if (measuredNow) *measuredNow = true;
  return c;
}

std::string formatCalibration(const Calibration& c) {
  const auto fixed = [](double v, int digits) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", digits, v);
    return std::string(buffer);
  };
  const auto ridge = [](double gflops, double gbs) { return gbs > 0 ? gflops / gbs : 0.0; };
  const auto row = [](const std::string& label, const std::string& one, const std::string& all) {
    char buffer[160];
    std::snprintf(buffer, sizeof buffer, "  %-28s %12s %14s\n", label.c_str(), one.c_str(),
                  all.c_str());
    return std::string(buffer);
  };
  std::ostringstream out;
  out << "Machine calibration (schema " << Calibration::kSchemaVersion << ")\n";
  out << "  CPU:      " << c.cpu << "\n";
  out << "  Host:     " << c.host << "\n";
  out << "  Measured: " << c.date << "\n\n";
  out << row("", "one thread", "all (" + std::to_string(c.threads) + " threads)");
  out << row("GEMM float32 (GFLOP/s)", fixed(c.gemmGflopsOne, 1), fixed(c.gemmGflopsAll, 1));
  out << row("Stream triad (GB/s)", fixed(c.bandwidthGBsOne, 1), fixed(c.bandwidthGBsAll, 1));
  out << row("Ridge point (flop/byte)", fixed(ridge(c.gemmGflopsOne, c.bandwidthGBsOne), 2),
             fixed(ridge(c.gemmGflopsAll, c.bandwidthGBsAll), 2));
  out << "\nA node whose arithmetic intensity (flops per byte) is below the ridge point is bound "
         "by\n"
         "memory bandwidth; above it, by compute. Stream bytes: 2 arrays read + 1 written per\n"
         "element (write-allocate traffic not counted).\n";
  return out.str();
}

}  // namespace tscope::prof
