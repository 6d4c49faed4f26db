#pragma once
// CPU kernels of 2-d max and average pooling over NCHW tensors, with their gradients.
//
// Note [Pool2d geometry]: window (KH, KW), stride s, symmetric zero padding p < k per axis; the
// output is (N, C, OH, OW) with OH = (H + 2 ph - KH) / sh + 1 (floor; OW likewise). Because p < k,
// every window overlaps the image in at least one element, so a max window is never empty. Padded
// positions never win a max. An average divides by KH*KW when padding counts (include_pad), else by
// the number of window elements inside the image.
// Max ties: the first element of the window in row-major order wins (it alone receives the
// gradient).

#include <cstdint>

namespace tscope::engine::cpu {

struct Pool2dGeometry {
  std::int64_t n = 0, c = 0, h = 0, w = 0;  // input
  std::int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  std::int64_t oh = 0, ow = 0;  // output spatial size
};

// The output size along one axis (Note [Pool2d geometry]); 0 when the padded input is smaller than
// the window.
inline std::int64_t poolOutputSize(std::int64_t in, std::int64_t k, std::int64_t stride,
                                   std::int64_t pad) {
  const std::int64_t span = in + 2 * pad - k;
  if (span < 0) return 0;
  return span / stride + 1;
}

// All arrays contiguous (row-major); T is float or double. Outputs are overwritten.
// y (N, C, OH, OW): the max of each window of x (N, C, H, W).
template <class T>
void maxPool2dForward(const Pool2dGeometry& g, const T* x, T* y);
// gx (N, C, H, W): each gy element added at the position of its window's max in x.
template <class T>
void maxPool2dGrad(const Pool2dGeometry& g, const T* x, const T* gy, T* gx);
// gy (N, C, OH, OW): each window's value of gx at the position of its max in x (the adjoint of
// maxPool2dGrad in its gy argument, and the Jacobian-vector product of max pooling).
template <class T>
void maxPool2dGradGrad(const Pool2dGeometry& g, const T* x, const T* gx, T* gy);
// y (N, C, OH, OW): the mean of each window of x.
template <class T>
void avgPool2dForward(const Pool2dGeometry& g, bool includePad, const T* x, T* y);
// gx (N, C, H, W): the adjoint of avgPool2dForward applied to gy.
template <class T>
void avgPool2dGrad(const Pool2dGeometry& g, bool includePad, const T* gy, T* gx);

}  // namespace tscope::engine::cpu
