#pragma once
// The shared test main: every Qt Test executable forces the offscreen platform before Qt starts,
// so the suite runs the same on a desktop, under CI and on a machine without a display.
#include <QtTest/QtTest>

#include <cstdlib>

#define TSCOPE_TEST_MAIN(TestClass)              \
  int main(int argc, char** argv) {              \
    ::setenv("QT_QPA_PLATFORM", "offscreen", 1); \
    QCoreApplication app(argc, argv);            \
    TestClass test;                              \
    QTEST_SET_MAIN_SOURCE_PATH                   \
    return QTest::qExec(&test, argc, argv);      \
  }
