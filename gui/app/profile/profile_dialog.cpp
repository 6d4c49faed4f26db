#include "gui/app/profile/profile_dialog.h"

#include "gui/app/device_choice.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QSpinBox>

namespace tscope::gui {

ProfileDialog::ProfileDialog(QWidget* parent) : QDialog(parent) {
  setObjectName(QStringLiteral("profileDialog"));
  setWindowTitle(tr("Profile"));
  m_mode = new QComboBox;
  for (engine::Mode mode :
       {engine::Mode::FastRun, engine::Mode::FastCompile, engine::Mode::None, engine::Mode::Debug})
    m_mode->addItem(QString::fromLatin1(engine::modeName(mode).data(),
                                        qsizetype(engine::modeName(mode).size())),
                    int(mode));
  m_device = new QComboBox;
  m_device->setObjectName(QStringLiteral("profileDeviceCombo"));
  offerDevices(m_device);
  m_runs = new QSpinBox;
  m_runs->setRange(1, 100000);
  m_warmup = new QSpinBox;
  m_warmup->setRange(0, 10000);
  m_seed = new QSpinBox;
  m_seed->setRange(0, 1 << 30);
  m_seed->setToolTip(tr("Inputs without a test value get uniform random values from this seed"));
  m_memory = new QCheckBox(tr("Measure memory (bytes per node, live memory)"));
  m_roofline = new QCheckBox(tr("Roofline (calibrates this machine once, then cached)"));
  auto* form = new QFormLayout(this);
  form->addRow(tr("Mode"), m_mode);
  form->addRow(tr("Device"), m_device);
  form->addRow(tr("Measured runs"), m_runs);
  form->addRow(tr("Warm-up calls"), m_warmup);
  form->addRow(tr("Random seed"), m_seed);
  form->addRow(m_memory);
  form->addRow(m_roofline);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  form->addRow(buttons);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  setRequest({});
}

void ProfileDialog::setRequest(const ProfileRequest& r) {
  m_mode->setCurrentIndex(std::max(0, m_mode->findData(int(r.mode))));
  m_device->setCurrentIndex(std::max(0, m_device->findData(int(r.device))));
  m_runs->setValue(int(r.runs));
  m_warmup->setValue(int(r.warmup));
  m_seed->setValue(int(r.seed));
  m_memory->setChecked(r.memory);
  m_roofline->setChecked(r.roofline);
}

ProfileRequest ProfileDialog::request() const {
  ProfileRequest r;
  r.mode = static_cast<engine::Mode>(m_mode->currentData().toInt());
  r.device = static_cast<engine::Device>(m_device->currentData().toInt());
  r.runs = m_runs->value();
  r.warmup = m_warmup->value();
  r.seed = static_cast<std::uint64_t>(m_seed->value());
  r.memory = m_memory->isChecked();
  r.roofline = m_roofline->isChecked();
  return r;
}

}  // namespace tscope::gui
