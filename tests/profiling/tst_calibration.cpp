// Calibration: the JSON round trip and its refusals (with the JSON path), the cache (written and
// read back, another machine's ignored, a corrupt file ignored, atomic replacement, the
// environment's folders), a short real calibrate() (figures positive and finite, never a speed),
// the printed text, and that calibrate() restores the BLAS thread setting.

#include "engine/backends/cpu/gemm.h"
#include "profiling/calibration.h"
#include "profiling/profile_record.h"
#include "test_main.h"

#include <QtTest/QtTest>

#include <cmath>
#include <cstdlib>
#include <fstream>

using namespace tscope;
using prof::Calibration;

namespace {

Calibration sample() {
  Calibration c;
  c.cpu = prof::cpuModelName();
  c.host = "testhost";
  c.date = "2026-12-02T03:00:00Z";
  c.threads = prof::calibrationThreads();
  c.gemmGflopsOne = 101.5;
  c.gemmGflopsAll = 203.25;
  c.bandwidthGBsOne = 12.125;
  c.bandwidthGBsAll = 30.5;
  return c;
}

void writeFile(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// Sets an environment variable for the scope, restoring what was there.
class EnvGuard {
 public:
  EnvGuard(const char* name, const std::string& value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~EnvGuard() {
    if (m_old)
      ::setenv(m_name, m_old->c_str(), 1);
    else
      ::unsetenv(m_name);
  }

 private:
  const char* m_name;
  std::optional<std::string> m_old;
};

void expectRefused(const nlohmann::json& value, const std::string& pathInMessage) {
  try {
    Calibration::fromJson(value, "/calibration");
    QFAIL(("accepted " + value.dump()).c_str());
  } catch (const prof::ProfileError& e) {
    const std::string what = e.what();
    QVERIFY2(what.rfind(pathInMessage, 0) == 0, what.c_str());
  }
}

}  // namespace

class TestCalibration : public QObject {
  Q_OBJECT

  QTemporaryDir m_dir;
  std::optional<EnvGuard> m_cache;

 private slots:
  void init() {
    QVERIFY(m_dir.isValid());
    m_cache.emplace("TSCOPE_CACHE_DIR", m_dir.path().toStdString() + "/cache");
  }
  void cleanup() {
    m_cache.reset();
    std::filesystem::remove_all(m_dir.path().toStdString() + "/cache");
  }

  void jsonRoundTrip() {
    const Calibration c = sample();
    const nlohmann::json j = c.toJson();
    QCOMPARE(j.at("schema_version").get<int>(), Calibration::kSchemaVersion);
    QCOMPARE(j.at("gemm_gflops_all").get<double>(), 203.25);
    QVERIFY(Calibration::fromJson(j, "/calibration") == c);
    // Through text, too.
    QVERIFY(Calibration::fromJson(nlohmann::json::parse(j.dump()), "") == c);
  }

  void malformedJsonIsRefusedWithItsPath() {
    expectRefused(nlohmann::json::array(), "/calibration: expected a calibration object");
    nlohmann::json j = sample().toJson();
    j.erase("cpu");
    expectRefused(j, "/calibration: a calibration needs \"cpu\"");
    j = sample().toJson();
    j["gemm_gflops_one"] = "fast";
    expectRefused(j, "/calibration/gemm_gflops_one: expected a finite number >= 0");
    j = sample().toJson();
    j["bandwidth_gbs_all"] = -3;
    expectRefused(j, "/calibration/bandwidth_gbs_all");
    j = sample().toJson();
    j["threads"] = 0;
    expectRefused(j, "/calibration/threads: expected an integer >= 1");
    j = sample().toJson();
    j["schema_version"] = 99;
    expectRefused(j, "/calibration/schema_version: expected schema version 1");
  }

  void cachePathFollowsTheEnvironment() {
    QCOMPARE(prof::calibrationCachePath(),
             std::filesystem::path(m_dir.path().toStdString() + "/cache/calibration.json"));
    m_cache.reset();
    {
      EnvGuard unset("TSCOPE_CACHE_DIR", "");
      EnvGuard xdg("XDG_CACHE_HOME", "/tmp/xdg-test");
      QCOMPARE(prof::calibrationCachePath(),
               std::filesystem::path("/tmp/xdg-test/tensorscope/calibration.json"));
      EnvGuard noXdg("XDG_CACHE_HOME", "");
      EnvGuard home("HOME", "/home/someone");
      QCOMPARE(prof::calibrationCachePath(),
               std::filesystem::path("/home/someone/.cache/tensorscope/calibration.json"));
    }
  }

  void cacheWriteAndReadBack() {
    QVERIFY(!prof::loadCachedCalibration().has_value());  // none yet
    const Calibration c = sample();
    prof::saveCachedCalibration(c);
    QVERIFY(std::filesystem::exists(prof::calibrationCachePath()));
    const auto back = prof::loadCachedCalibration();
    QVERIFY(back.has_value());
    QVERIFY(*back == c);
    // No temporary file is left beside it.
    int files = 0;
    for (const auto& entry :
         std::filesystem::directory_iterator(prof::calibrationCachePath().parent_path())) {
      (void)entry;
      ++files;
    }
    QCOMPARE(files, 1);
    // Replacing it works (rename over an existing file).
    Calibration d = c;
    d.gemmGflopsOne = 7;
    prof::saveCachedCalibration(d);
    QCOMPARE(prof::loadCachedCalibration()->gemmGflopsOne, 7.0);
    // cachedOrCalibrate takes the cache without measuring.
    bool measured = true;
    QCOMPARE(prof::cachedOrCalibrate({}, &measured), d);
    QVERIFY(!measured);
  }

  void anotherMachinesCacheIsIgnored() {
    Calibration other = sample();
    other.cpu = "Some Other CPU 9000";
    prof::saveCachedCalibration(other);
    QVERIFY(!prof::loadCachedCalibration().has_value());
    Calibration moreThreads = sample();
    moreThreads.threads = prof::calibrationThreads() + 7;
    prof::saveCachedCalibration(moreThreads);
    QVERIFY(!prof::loadCachedCalibration().has_value());
    // The thread count asked for is what must match.
    prof::CalibrateOptions asked;
    asked.threads = moreThreads.threads;
    QVERIFY(prof::loadCachedCalibration(asked).has_value());
  }

  void corruptCacheIsIgnored() {
    writeFile(prof::calibrationCachePath(), "{ not json");
    QVERIFY(!prof::loadCachedCalibration().has_value());
    writeFile(prof::calibrationCachePath(), R"({"schema_version": 1, "cpu": 3})");
    QVERIFY(!prof::loadCachedCalibration().has_value());
    writeFile(prof::calibrationCachePath(), "");
    QVERIFY(!prof::loadCachedCalibration().has_value());
  }

  void unwritableCacheThrowsNamingThePath() {
    // The cache folder is a file: it cannot be created.
    writeFile(std::filesystem::path(m_dir.path().toStdString()) / "blocker", "x");
    EnvGuard blocked("TSCOPE_CACHE_DIR", m_dir.path().toStdString() + "/blocker/sub");
    try {
      prof::saveCachedCalibration(sample());
      QFAIL("saved under a file");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find("blocker") != std::string::npos, e.what());
    }
  }

  void shortCalibrationGivesPositiveFiniteFigures() {
    const int threadsBefore = engine::cpu::gemmThreads();
    prof::CalibrateOptions options;
    options.secondsPerFigure = 0.02;
    options.threads = 2;
    bool measured = false;
    const Calibration c = prof::cachedOrCalibrate(options, &measured);
    QVERIFY(measured);
    QCOMPARE(engine::cpu::gemmThreads(), threadsBefore);
    QCOMPARE(c.threads, std::int64_t{2});
    for (double v : {c.gemmGflopsOne, c.gemmGflopsAll, c.bandwidthGBsOne, c.bandwidthGBsAll}) {
      QVERIFY(std::isfinite(v));
      QVERIFY(v > 0);
    }
    // Not a speed check: the all-threads figure adds at most `threads` single-thread rates, so
    // one far above that (10x slack for a loaded machine) means the rounds were mis-timed.
    QVERIFY(c.gemmGflopsAll <= 10 * 2 * c.gemmGflopsOne);
    QVERIFY(c.bandwidthGBsAll <= 10 * 2 * c.bandwidthGBsOne);
    QVERIFY(!c.cpu.empty());
    QVERIFY(!c.host.empty());
    QCOMPARE(c.date.size(), std::size_t{20});  // 2026-12-02T03:00:00Z
    QCOMPARE(c.date.back(), 'Z');
    // It was cached, and the next call takes it.
    const auto cached = prof::loadCachedCalibration(options);
    QVERIFY(cached.has_value());
    QVERIFY(*cached == c);
    QVERIFY(prof::cachedOrCalibrate(options, &measured) == c);
    QVERIFY(!measured);
  }

  void formattedText() {
    const std::string text = prof::formatCalibration(sample());
    QVERIFY2(text.find("GEMM float32 (GFLOP/s)") != std::string::npos, text.c_str());
    QVERIFY(text.find("101.5") != std::string::npos);
    QVERIFY(text.find("203.2") != std::string::npos);
    QVERIFY(text.find("Stream triad (GB/s)") != std::string::npos);
    QVERIFY(text.find("30.5") != std::string::npos);
    // Ridge points: 101.5 / 12.125 = 8.37, 203.25 / 30.5 = 6.66.
    QVERIFY2(text.find("8.37") != std::string::npos, text.c_str());
    QVERIFY(text.find("6.66") != std::string::npos);
    QVERIFY(text.find("testhost") != std::string::npos);
  }
};

TSCOPE_TEST_MAIN(TestCalibration)
#include "tst_calibration.moc"
