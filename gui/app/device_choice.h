#pragma once
// The device choosers of the Run toolbar and the Profile dialog: CPU, and CUDA where this program
// can run on one (built with the CUDA backend and a device found). Without one the CUDA item is
// shown disabled, and its tooltip says why (engine::cuda::cudaStatus()).

#include "engine/tensor/dtype.h"

#include <QString>

class QComboBox;

namespace tscope::gui {

// Whether a CUDA device can run graphs here; *why gets the reason there is none, or the
// device's name and architecture. Asked once per process.
bool cudaAvailable(QString* why = nullptr);
// Fills combo with CPU and CUDA (item data: the engine::Device as int), CUDA disabled without a
// device.
void offerDevices(QComboBox* combo);

}  // namespace tscope::gui
