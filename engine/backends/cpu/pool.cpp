#include "engine/backends/cpu/pool.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace tscope::engine::cpu {

namespace {

// The part of one window inside the image: rows [y0, y1), columns [x0, x1).
struct Window {
  std::int64_t y0, y1, x0, x1;
};

Window window(const Pool2dGeometry& g, std::int64_t oy, std::int64_t ox) {
  const std::int64_t ys = oy * g.sh - g.ph, xs = ox * g.sw - g.pw;
  return {std::max<std::int64_t>(ys, 0), std::min(ys + g.kh, g.h), std::max<std::int64_t>(xs, 0),
          std::min(xs + g.kw, g.w)};
}

template <class T>
T divisor(const Pool2dGeometry& g, const Window& win, bool includePad) {
  if (includePad) return static_cast<T>(g.kh * g.kw);
  return static_cast<T>((win.y1 - win.y0) * (win.x1 - win.x0));
}

// The offset (in one H*W plane) of the window's max; ties go to the first in row-major order.
// Note [Pool2d geometry]: the window is never empty.
template <class T>
std::int64_t argmaxIn(const Pool2dGeometry& g, const Window& win, const T* plane) {
  std::int64_t best = win.y0 * g.w + win.x0;
  T bestValue = plane[best];
  for (std::int64_t y = win.y0; y < win.y1; ++y) {
    const T* row = plane + y * g.w;
    for (std::int64_t x = win.x0; x < win.x1; ++x) {
      // A NaN wins over everything (and the first NaN over later ones), as numpy's max propagates
      // it.
      if (row[x] > bestValue || (row[x] != row[x] && bestValue == bestValue)) {
        bestValue = row[x];
        best = y * g.w + x;
      }
    }
  }
  return best;
}

// max(a, b) where a NaN in either wins (numpy's maximum).
template <class T>
inline T nanMax(T a, T b) {
  return (b > a || b != b) ? b : a;
}

}  // namespace

// Note [Separable max pooling]: a window's max is the max over its columns of each column's max
// over the window's rows. So each output row first reduces its kh input rows into one row (a
// vectorisable pass over contiguous memory), then takes kw-wide maxima along that row: about
// kh*W/OW + kw reads per output instead of kh*kw scattered ones with a window computed for each
// (1.56 ms -> about 0.3 ms for ResNet-18's 3x3/2 pool of 64x112x112). A NaN anywhere in the
// window gives NaN, as argmaxIn picks the first NaN.
template <class T>
void maxPool2dForward(const Pool2dGeometry& g, const T* x, T* y) {
  const std::int64_t planes = g.n * g.c;
  std::vector<T> col(static_cast<std::size_t>(g.w));
  for (std::int64_t pl = 0; pl < planes; ++pl) {
    const T* xp = x + pl * g.h * g.w;
    T* yp = y + pl * g.oh * g.ow;
    for (std::int64_t oy = 0; oy < g.oh; ++oy) {
      const Window rows = window(g, oy, 0);
      std::copy(xp + rows.y0 * g.w, xp + (rows.y0 + 1) * g.w, col.begin());
      for (std::int64_t yy = rows.y0 + 1; yy < rows.y1; ++yy) {
        const T* row = xp + yy * g.w;
        for (std::int64_t xx = 0; xx < g.w; ++xx) col[xx] = nanMax(col[xx], row[xx]);
      }
      for (std::int64_t ox = 0; ox < g.ow; ++ox) {
        const Window win = window(g, oy, ox);
        T best = col[win.x0];
        for (std::int64_t xx = win.x0 + 1; xx < win.x1; ++xx) best = nanMax(best, col[xx]);
        yp[oy * g.ow + ox] = best != best ? std::numeric_limits<T>::quiet_NaN() : best;
      }
    }
  }
}

template <class T>
void maxPool2dGrad(const Pool2dGeometry& g, const T* x, const T* gy, T* gx) {
  const std::int64_t planes = g.n * g.c;
  std::fill(gx, gx + planes * g.h * g.w, T(0));
  for (std::int64_t pl = 0; pl < planes; ++pl) {
    const T* xp = x + pl * g.h * g.w;
    const T* gyp = gy + pl * g.oh * g.ow;
    T* gxp = gx + pl * g.h * g.w;
    for (std::int64_t oy = 0; oy < g.oh; ++oy)
      for (std::int64_t ox = 0; ox < g.ow; ++ox)
        gxp[argmaxIn(g, window(g, oy, ox), xp)] += gyp[oy * g.ow + ox];
  }
}

template <class T>
void maxPool2dGradGrad(const Pool2dGeometry& g, const T* x, const T* gx, T* gy) {
  const std::int64_t planes = g.n * g.c;
  for (std::int64_t pl = 0; pl < planes; ++pl) {
    const T* xp = x + pl * g.h * g.w;
    const T* gxp = gx + pl * g.h * g.w;
    T* gyp = gy + pl * g.oh * g.ow;
    for (std::int64_t oy = 0; oy < g.oh; ++oy)
      for (std::int64_t ox = 0; ox < g.ow; ++ox)
        gyp[oy * g.ow + ox] = gxp[argmaxIn(g, window(g, oy, ox), xp)];
  }
}

template <class T>
void avgPool2dForward(const Pool2dGeometry& g, bool includePad, const T* x, T* y) {
  const std::int64_t planes = g.n * g.c;
  for (std::int64_t pl = 0; pl < planes; ++pl) {
    const T* xp = x + pl * g.h * g.w;
    T* yp = y + pl * g.oh * g.ow;
    for (std::int64_t oy = 0; oy < g.oh; ++oy) {
      for (std::int64_t ox = 0; ox < g.ow; ++ox) {
        const Window win = window(g, oy, ox);
        T sum = 0;
        for (std::int64_t yy = win.y0; yy < win.y1; ++yy) {
          const T* row = xp + yy * g.w;
          for (std::int64_t xx = win.x0; xx < win.x1; ++xx) sum += row[xx];
        }
        yp[oy * g.ow + ox] = sum / divisor<T>(g, win, includePad);
      }
    }
  }
}

template <class T>
void avgPool2dGrad(const Pool2dGeometry& g, bool includePad, const T* gy, T* gx) {
  const std::int64_t planes = g.n * g.c;
  std::fill(gx, gx + planes * g.h * g.w, T(0));
  for (std::int64_t pl = 0; pl < planes; ++pl) {
    const T* gyp = gy + pl * g.oh * g.ow;
    T* gxp = gx + pl * g.h * g.w;
    for (std::int64_t oy = 0; oy < g.oh; ++oy) {
      for (std::int64_t ox = 0; ox < g.ow; ++ox) {
        const Window win = window(g, oy, ox);
        const T share = gyp[oy * g.ow + ox] / divisor<T>(g, win, includePad);
        for (std::int64_t yy = win.y0; yy < win.y1; ++yy) {
          T* row = gxp + yy * g.w;
          for (std::int64_t xx = win.x0; xx < win.x1; ++xx) row[xx] += share;
        }
      }
    }
  }
}

#define TSCOPE_POOL_INSTANTIATE(T)                                                   \
  template void maxPool2dForward<T>(const Pool2dGeometry&, const T*, T*);            \
  template void maxPool2dGrad<T>(const Pool2dGeometry&, const T*, const T*, T*);     \
  template void maxPool2dGradGrad<T>(const Pool2dGeometry&, const T*, const T*, T*); \
  template void avgPool2dForward<T>(const Pool2dGeometry&, bool, const T*, T*);      \
  template void avgPool2dGrad<T>(const Pool2dGeometry&, bool, const T*, T*);
TSCOPE_POOL_INSTANTIATE(float)
TSCOPE_POOL_INSTANTIATE(double)
#undef TSCOPE_POOL_INSTANTIATE

}  // namespace tscope::engine::cpu
