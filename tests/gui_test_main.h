#pragma once
// The test main of suites that need widgets, fonts or painting (visualizers, the window): a
// QApplication on the offscreen platform.
#include <QApplication>
#include <QtTest/QtTest>

#include <cstdlib>

#define TSCOPE_GUI_TEST_MAIN(TestClass)          \
  int main(int argc, char** argv) {              \
    ::setenv("QT_QPA_PLATFORM", "offscreen", 1); \
    QApplication app(argc, argv);                \
    TestClass test;                              \
    QTEST_SET_MAIN_SOURCE_PATH                   \
    return QTest::qExec(&test, argc, argv);      \
  }
