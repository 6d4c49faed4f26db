#pragma once
// CPU kernels of 2-d convolution (NCHW input, OIHW filters): forward, gradient wrt the input and
// gradient wrt the filters, all through im2col + GEMM per image and group.
//
// Note [Conv2d geometry]: with input (N, C, H, W), filters (O, C/groups, KH, KW), stride s,
// symmetric padding p and dilation d per axis, the output is (N, O, OH, OW) with
//   OH = (H + 2 ph - dh (KH - 1) - 1) / sh + 1     (floor division; OW likewise)
// Output channel o belongs to group o / (O / groups) and reads input channels
// [g C/groups, (g+1) C/groups). Several input sizes give the same OH when sh > 1, which is why the
// gradient wrt the input needs the input size given explicitly (Conv2dGradInputs' H and W inputs).

#include <cstdint>

namespace tscope::engine::cpu {

struct Conv2dGeometry {
  std::int64_t n = 0, c = 0, h = 0, w = 0;  // input
  std::int64_t o = 0, kh = 0, kw = 0;       // filters (O, C/groups, KH, KW)
  std::int64_t oh = 0, ow = 0;              // output spatial size
  std::int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  std::int64_t groups = 1;

  std::int64_t cPerGroup() const { return c / groups; }
  std::int64_t oPerGroup() const { return o / groups; }
};

// The output size along one axis (Note [Conv2d geometry]); may be <= 0 for a too small input.
inline std::int64_t convOutputSize(std::int64_t in, std::int64_t k, std::int64_t stride,
                                   std::int64_t pad, std::int64_t dilation) {
  const std::int64_t span = in + 2 * pad - dilation * (k - 1) - 1;
  if (span < 0) return 0;
  return span / stride + 1;
}

// All arrays contiguous (row-major). T is float or double.
// y (N, O, OH, OW) = conv(x (N, C, H, W), w (O, C/groups, KH, KW)); y is overwritten.
template <class T>
void conv2dForward(const Conv2dGeometry& g, const T* x, const T* w, T* y);
// gx (N, C, H, W) = the gradient of <gy, conv(x, w)> wrt x; gx is overwritten.
template <class T>
void conv2dGradInputs(const Conv2dGeometry& g, const T* w, const T* gy, T* gx);
// gw (O, C/groups, KH, KW) = the gradient of <gy, conv(x, w)> wrt w; gw is overwritten.
template <class T>
void conv2dGradWeights(const Conv2dGeometry& g, const T* x, const T* gy, T* gw);

}  // namespace tscope::engine::cpu
