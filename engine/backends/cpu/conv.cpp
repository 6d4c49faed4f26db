#include "engine/backends/cpu/conv.h"

#include "engine/backends/cpu/gemm.h"
#include "engine/vm/cancel.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace tscope::engine::cpu {

namespace {

// The output positions ox in [0, outSize) whose input position ox*stride + offset lies in [0, in).
struct ValidRange {
  std::int64_t lo, hi;
};
ValidRange validOutputs(std::int64_t offset, std::int64_t stride, std::int64_t in,
                        std::int64_t outSize) {
  // ox*stride + offset >= 0  <=>  ox >= ceil(-offset / stride)
  std::int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  // ox*stride + offset < in  <=>  ox < ceil((in - offset) / stride)
  std::int64_t hi = in - offset <= 0 ? 0 : (in - offset + stride - 1) / stride;
  lo = std::min(lo, outSize);
  hi = std::clamp(hi, lo, outSize);
  return {lo, hi};
}

// Is the im2col matrix of one image and group the input itself? (1x1 filters, stride 1, no
// padding.)
bool colsAreInput(const Conv2dGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
}

// cols (Cg*KH*KW, OH*OW) from the Cg channels at x (each H*W): row (c, i, j), column (oy, ox) holds
// x[c][oy*sh - ph + i*dh][ox*sw - pw + j*dw], zero outside the image.
template <class T>
void im2col(const Conv2dGeometry& g, std::int64_t channels, const T* x, T* cols) {
  const std::int64_t plane = g.oh * g.ow;
  for (std::int64_t c = 0; c < channels; ++c) {
    const T* xc = x + c * g.h * g.w;
    for (std::int64_t i = 0; i < g.kh; ++i) {
      for (std::int64_t j = 0; j < g.kw; ++j) {
        T* row = cols + ((c * g.kh + i) * g.kw + j) * plane;
        const std::int64_t xOffset = j * g.dw - g.pw;
        const ValidRange xs = validOutputs(xOffset, g.sw, g.w, g.ow);
        for (std::int64_t oy = 0; oy < g.oh; ++oy) {
          T* out = row + oy * g.ow;
          const std::int64_t iy = oy * g.sh - g.ph + i * g.dh;
          if (iy < 0 || iy >= g.h) {
            std::fill(out, out + g.ow, T(0));
            continue;
          }
          const T* in = xc + iy * g.w + xOffset;
          std::fill(out, out + xs.lo, T(0));
          if (g.sw == 1) {
            std::copy(in + xs.lo, in + xs.hi, out + xs.lo);
          } else {
            for (std::int64_t ox = xs.lo; ox < xs.hi; ++ox) out[ox] = in[ox * g.sw];
          }
          std::fill(out + xs.hi, out + g.ow, T(0));
        }
      }
    }
  }
}

// The adjoint of im2col: accumulates every entry of cols into the input position it was read from.
// x must be zeroed (or hold a sum to add to).
template <class T>
void col2im(const Conv2dGeometry& g, std::int64_t channels, const T* cols, T* x) {
  const std::int64_t plane = g.oh * g.ow;
  for (std::int64_t c = 0; c < channels; ++c) {
    T* xc = x + c * g.h * g.w;
    for (std::int64_t i = 0; i < g.kh; ++i) {
      for (std::int64_t j = 0; j < g.kw; ++j) {
        const T* row = cols + ((c * g.kh + i) * g.kw + j) * plane;
        const std::int64_t xOffset = j * g.dw - g.pw;
        const ValidRange xs = validOutputs(xOffset, g.sw, g.w, g.ow);
        for (std::int64_t oy = 0; oy < g.oh; ++oy) {
          const std::int64_t iy = oy * g.sh - g.ph + i * g.dh;
          if (iy < 0 || iy >= g.h) continue;
          const T* in = row + oy * g.ow;
          T* out = xc + iy * g.w + xOffset;
          if (g.sw == 1) {
            for (std::int64_t ox = xs.lo; ox < xs.hi; ++ox) out[ox] += in[ox];
          } else {
            for (std::int64_t ox = xs.lo; ox < xs.hi; ++ox) out[ox * g.sw] += in[ox];
          }
        }
      }
    }
  }
}

}  // namespace

template <class T>
void conv2dForward(const Conv2dGeometry& g, const T* x, const T* w, T* y) {
  const std::int64_t cg = g.cPerGroup(), og = g.oPerGroup();
  const std::int64_t k = cg * g.kh * g.kw, p = g.oh * g.ow;
  if (p == 0 || og == 0) return;
  const bool direct = colsAreInput(g);
  std::vector<T> cols(direct ? 0 : static_cast<std::size_t>(k * p));
  for (std::int64_t n = 0; n < g.n; ++n) {
    throwIfCancelled();  // Note [Cancellation seam]: once per image
    for (std::int64_t grp = 0; grp < g.groups; ++grp) {
      const T* xg = x + (n * g.c + grp * cg) * g.h * g.w;
      T* yg = y + (n * g.o + grp * og) * p;
      const T* colPtr = xg;
      if (!direct) {
        im2col(g, cg, xg, cols.data());
        colPtr = cols.data();
      }
      // y_g (og x p) = w_g (og x k) * cols (k x p)
      gemm(false, false, og, p, k, T(1), w + grp * og * k, k, colPtr, p, T(0), yg, p);
    }
  }
}

template <class T>
void conv2dGradInputs(const Conv2dGeometry& g, const T* w, const T* gy, T* gx) {
  const std::int64_t cg = g.cPerGroup(), og = g.oPerGroup();
  const std::int64_t k = cg * g.kh * g.kw, p = g.oh * g.ow;
  std::fill(gx, gx + g.n * g.c * g.h * g.w, T(0));
  if (p == 0 || og == 0) return;
  const bool direct = colsAreInput(g);
  std::vector<T> cols(direct ? 0 : static_cast<std::size_t>(k * p));
  for (std::int64_t n = 0; n < g.n; ++n) {
    throwIfCancelled();  // Note [Cancellation seam]: once per image
    for (std::int64_t grp = 0; grp < g.groups; ++grp) {
      T* gxg = gx + (n * g.c + grp * cg) * g.h * g.w;
      const T* gyg = gy + (n * g.o + grp * og) * p;
      // cols (k x p) = w_g^T (k x og) * gy_g (og x p); with 1x1 filters the columns are gx itself.
      T* colPtr = direct ? gxg : cols.data();
      gemm(true, false, k, p, og, T(1), w + grp * og * k, k, gyg, p, T(0), colPtr, p);
      if (!direct) col2im(g, cg, cols.data(), gxg);
    }
  }
}

template <class T>
void conv2dGradWeights(const Conv2dGeometry& g, const T* x, const T* gy, T* gw) {
  const std::int64_t cg = g.cPerGroup(), og = g.oPerGroup();
  const std::int64_t k = cg * g.kh * g.kw, p = g.oh * g.ow;
  std::fill(gw, gw + g.o * k, T(0));
  if (p == 0 || og == 0) return;
  const bool direct = colsAreInput(g);
  std::vector<T> cols(direct ? 0 : static_cast<std::size_t>(k * p));
  for (std::int64_t n = 0; n < g.n; ++n) {
    throwIfCancelled();  // Note [Cancellation seam]: once per image
    for (std::int64_t grp = 0; grp < g.groups; ++grp) {
      const T* xg = x + (n * g.c + grp * cg) * g.h * g.w;
      const T* gyg = gy + (n * g.o + grp * og) * p;
      const T* colPtr = xg;
      if (!direct) {
        im2col(g, cg, xg, cols.data());
        colPtr = cols.data();
      }
      // gw_g (og x k) += gy_g (og x p) * cols^T (p x k)
      gemm(false, true, og, k, p, T(1), gyg, p, colPtr, p, T(1), gw + grp * og * k, k);
    }
  }
}

template void conv2dForward<float>(const Conv2dGeometry&, const float*, const float*, float*);
template void conv2dForward<double>(const Conv2dGeometry&, const double*, const double*, double*);
template void conv2dGradInputs<float>(const Conv2dGeometry&, const float*, const float*, float*);
template void conv2dGradInputs<double>(const Conv2dGeometry&, const double*, const double*,
                                       double*);
template void conv2dGradWeights<float>(const Conv2dGeometry&, const float*, const float*, float*);
template void conv2dGradWeights<double>(const Conv2dGeometry&, const double*, const double*,
                                        double*);

}  // namespace tscope::engine::cpu
