#include "gui/app/device_choice.h"

#include "engine/backends/cuda/cuda_backend.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QStandardItemModel>

namespace tscope::gui {

bool cudaAvailable(QString* why) {
  // The runtime's answer does not change while the program runs.
  static const engine::cuda::CudaStatus status = engine::cuda::cudaStatus();
  if (why) {
    auto tr = [](const char* text) { return QCoreApplication::translate("DeviceChoice", text); };
    *why = !status.built ? tr("this build has no CUDA backend")
           : !status.deviceFound
               ? tr("no CUDA device (%1)").arg(QString::fromStdString(status.error))
               : tr("%1, sm_%2").arg(QString::fromStdString(status.deviceName)).arg(status.arch);
  }
  return status.built && status.deviceFound;
}

void offerDevices(QComboBox* combo) {
  combo->clear();
  combo->addItem(QCoreApplication::translate("DeviceChoice", "CPU"),
                 static_cast<int>(engine::Device::Cpu));
  combo->addItem(QCoreApplication::translate("DeviceChoice", "CUDA"),
                 static_cast<int>(engine::Device::Cuda));
  QString why;
  const bool cuda = cudaAvailable(&why);
  if (auto* model = qobject_cast<QStandardItemModel*>(combo->model()))
    if (QStandardItem* item = model->item(1)) {
      item->setEnabled(cuda);
      item->setToolTip(why);
    }
  combo->setToolTip(
      QCoreApplication::translate("DeviceChoice", "Where the graph runs (CUDA: %1)").arg(why));
}

}  // namespace tscope::gui
