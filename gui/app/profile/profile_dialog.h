#pragma once
// ProfileDialog: what Profile > Profile... asks before a run: the mode the graph is compiled in,
// measured runs and warm-up calls, the seed of the random values of inputs without a test value
// (as `tensorscope profile --random-inputs`), whether to measure memory and the roofline.
//
//   ProfileDialog dialog(window);
//   dialog.setRequest(last);
//   connect(&dialog, &QDialog::accepted, [&] { ui->startProfile(dialog.request()); });

#include "engine/compile/function.h"

#include <QDialog>

#include <cstdint>

class QCheckBox;
class QComboBox;
class QSpinBox;

namespace tscope::gui {

struct ProfileRequest {
  engine::Mode mode = engine::Mode::FastRun;
  engine::Device device = engine::Device::Cpu;  // where the profiled graph runs
  std::int64_t runs = 10, warmup = 1;
  std::uint64_t seed = 0;  // random values for inputs without a test value
  bool memory = true;      // the allocation hook: bytes per node, live memory over time
  bool roofline = true;    // the machine's peaks (cached calibration; measured once)
};

class ProfileDialog : public QDialog {
  Q_OBJECT
 public:
  explicit ProfileDialog(QWidget* parent = nullptr);
  void setRequest(const ProfileRequest& request);
  ProfileRequest request() const;

 private:
  QComboBox* m_mode = nullptr;
  QComboBox* m_device = nullptr;
  QSpinBox* m_runs = nullptr;
  QSpinBox* m_warmup = nullptr;
  QSpinBox* m_seed = nullptr;
  QCheckBox* m_memory = nullptr;
  QCheckBox* m_roofline = nullptr;
};

}  // namespace tscope::gui
