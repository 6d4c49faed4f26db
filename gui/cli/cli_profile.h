#pragma once
// `tensorscope profile`, `tensorscope diff-profile` and `tensorscope calibrate`: the profiler's
// engine (profiling/) on the command line, printing what the window's profiler shows.

#include <QCommandLineParser>

#include <string>

namespace tscope::gui {

void addProfileOptions(QCommandLineParser& p);
int runProfile(const QCommandLineParser& p, const std::string& file, std::string& out,
               std::string& err);

void addDiffProfileOptions(QCommandLineParser& p);
// Takes its two files from the parser's positional arguments.
int runDiffProfile(const QCommandLineParser& p, const std::string& file, std::string& out,
                   std::string& err);

void addCalibrateOptions(QCommandLineParser& p);
int runCalibrate(const QCommandLineParser& p, const std::string& file, std::string& out,
                 std::string& err);

}  // namespace tscope::gui
