#pragma once
// Calibration: this machine's peak float32 GEMM rate and stream bandwidth, on one thread and on
// all threads: the roof of the roofline (profiling/roofline.h) the profiler compares each node
// with. `tensorscope calibrate` measures and prints it; the first profile measures it once and
// caches it in the user's cache folder, keyed by CPU model and thread count.
//
//   Calibration machine = cachedOrCalibrate();          // a cached one, or a fresh measurement
//   std::cout << formatCalibration(machine);
//   RooflinePoint p = roofline(node.cost, node.time.mean, machine);
//
// Note [Calibration figures]: GEMM is the engine's own float32 product (engine/backends/cpu/
// gemm.h, so OpenBLAS when the engine links it) on square sizes 512..2048, best of several
// repetitions; "all" runs one independent product per thread at once, each single-threaded, and
// adds their rates. Bandwidth is the stream triad a[i] = b[i] + s * c[i] on arrays of 64 MiB each,
// or 4 times the last-level cache when that is larger (well past it), counting 3 arrays' bytes per
// element (2 read, 1 written); the write-allocate read of a, which the hardware also performs, is
// not counted, as STREAM does not, so the figure is what a kernel's "bytes read + written" can
// reach. "all" splits the arrays into one chunk per thread.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tscope::prof {

struct Calibration {
  static constexpr int kSchemaVersion = 1;
  std::string cpu, host, date;                      // model name, hostname, ISO 8601 UTC
  std::int64_t threads = 0;                         // threads used for the "all" figures
  double gemmGflopsOne = 0, gemmGflopsAll = 0;      // float32 GEMM peak, one thread / all
  double bandwidthGBsOne = 0, bandwidthGBsAll = 0;  // stream triad, one thread / all

  // {"schema_version": 1, "cpu", "host", "date", "threads", "gemm_gflops_one", "gemm_gflops_all",
  //  "bandwidth_gbs_one", "bandwidth_gbs_all"} (docs/profiling.md).
  nlohmann::json toJson() const;
  // Throws ProfileError (profiling/profile_record.h) naming the JSON path of what does not fit:
  // not an object, a missing or mistyped key, a figure that is not a finite number >= 0, a
  // schema_version this build does not read.
  static Calibration fromJson(const nlohmann::json& value, const std::string& jsonPath);
  bool operator==(const Calibration&) const = default;
};

struct CalibrateOptions {
  double secondsPerFigure = 0.3;  // time spent measuring each of the four figures (about)
  std::int64_t threads = 0;       // 0: std::thread::hardware_concurrency()
};

// Measures the four figures (Note [Calibration figures]); takes about 4 * secondsPerFigure plus
// the buffers' first touch. Restores the BLAS thread setting it found.
Calibration calibrate(const CalibrateOptions& options = {});

// The CPU's model name (/proc/cpuinfo's "model name", else "unknown CPU") and the host name.
std::string cpuModelName();
std::string hostName();
// The threads calibrate() uses for `options` (options.threads, else the hardware's, at least 1).
std::int64_t calibrationThreads(const CalibrateOptions& options = {});

// $TSCOPE_CACHE_DIR/calibration.json when TSCOPE_CACHE_DIR is set (tests), else
// $XDG_CACHE_HOME/tensorscope/calibration.json, else ~/.cache/tensorscope/calibration.json.
std::filesystem::path calibrationCachePath();
// The cached calibration when it was measured on this machine (same cpu model and thread count
// as calibrationThreads()); nullopt when there is none or it is another machine's. A corrupt or
// unreadable cache is ignored with a warning on stderr, never fatal.
std::optional<Calibration> loadCachedCalibration(const CalibrateOptions& options = {});
// Writes the cache atomically (a temporary file in the same folder, then a rename); creates the
// folder. Throws std::runtime_error naming the path when it cannot write.
void saveCachedCalibration(const Calibration& calibration);
// The cached calibration, else a fresh one (saved; a cache that cannot be written is warned
// about, not fatal). *measuredNow says which.
Calibration cachedOrCalibrate(const CalibrateOptions& options = {}, bool* measuredNow = nullptr);

// The text `tensorscope calibrate` prints: the machine, then the four figures and the ridge
// points (flops per byte where compute and bandwidth bounds meet).
std::string formatCalibration(const Calibration& calibration);

}  // namespace tscope::prof
