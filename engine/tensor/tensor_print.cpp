// Tensor's text form: Tensor::toString (numpy-like, with "..." past edgeItems per axis end) and
// operator<<.
#include "engine/tensor/tensor.h"
#include "engine/tensor/tensor_internal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tscope::engine {

namespace {

using detail::toDouble;

// Up to 4 decimals with trailing zeros removed ("1.5", "2", "0.3333"); scientific notation where
// fixed notation would hide the value ("1e-05", "1.235e+20").
std::string formatFloat(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  auto stripZeros = [](std::string s) {
    const auto e = s.find('e');
    std::string mantissa = s.substr(0, e), exponent = e == std::string::npos ? "" : s.substr(e);
    if (mantissa.find('.') != std::string::npos) {
      while (mantissa.back() == '0') mantissa.pop_back();
      if (mantissa.back() == '.') mantissa.pop_back();
    }
    return mantissa + exponent;
  };
  char buffer[64];
  if (x == 0 || (std::fabs(x) >= 5e-5 && std::fabs(x) < 1e16)) {
    std::snprintf(buffer, sizeof buffer, "%.4f", x);
    return stripZeros(buffer);
  }
  std::snprintf(buffer, sizeof buffer, "%.3e", x);
  return stripZeros(buffer);
}

template <class T>
std::string formatElement(T x) {
  if constexpr (std::is_same_v<T, bool>)
    return x ? "true" : "false";
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>)
    return std::to_string(static_cast<unsigned long long>(x));
  else if constexpr (std::is_integral_v<T>)
    return std::to_string(static_cast<long long>(x));
  else
    return formatFloat(toDouble(x));
}

class TextPrinter {
 public:
  TextPrinter(const Tensor& t, int edgeItems) : m_tensor(t) {
    for (std::int64_t n : t.shape()) {
      std::vector<std::int64_t> axis;
      if (n > 2 * static_cast<std::int64_t>(edgeItems)) {
        for (std::int64_t i = 0; i < edgeItems; ++i) axis.push_back(i);
        axis.push_back(kEllipsis);
        for (std::int64_t i = n - edgeItems; i < n; ++i) axis.push_back(i);
      } else {
        for (std::int64_t i = 0; i < n; ++i) axis.push_back(i);
      }
      m_shown.push_back(std::move(axis));
    }
  }

  std::string text() {
    collect(0, m_tensor.offset());
    for (const std::string& cell : m_cells) m_width = std::max(m_width, cell.size());
    std::string out;
    emit(0, out);
    return out;
  }

 private:
  static constexpr std::int64_t kEllipsis = -1;

  void collect(int axis, std::int64_t offset) {
    if (axis == m_tensor.ndim()) {
      dispatchDType(m_tensor.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* base = reinterpret_cast<const T*>(m_tensor.storage()->data());
        m_cells.push_back(formatElement(base[offset]));
      });
      return;
    }
    for (std::int64_t i : m_shown[axis])
      if (i != kEllipsis) collect(axis + 1, offset + i * m_tensor.strides()[axis]);
  }

  void emit(int axis, std::string& out) {
    const int nd = m_tensor.ndim();
    if (axis == nd) {
      const std::string& cell = m_cells[m_next++];
      out.append(m_width - cell.size(), ' ');
      out += cell;
      return;
    }
    // numpy's separators: ", " inside a row, a newline between rows, a blank line between
    // matrices, and indentation that lines the brackets up.
    const std::string separator =
        nd - axis - 1 == 0 ? std::string(", ")
                           : "," + std::string(nd - axis - 1, '\n') + std::string(axis + 1, ' ');
    out += '[';
    bool first = true;
    for (std::int64_t i : m_shown[axis]) {
      if (!first) out += separator;
      first = false;
      if (i == kEllipsis)
        out += "...";
      else
        emit(axis + 1, out);
    }
    out += ']';
  }

  const Tensor& m_tensor;
  std::vector<std::vector<std::int64_t>> m_shown;
  std::vector<std::string> m_cells;
  std::size_t m_width = 0;
  std::size_t m_next = 0;
};

}  // namespace

// =============================================================================================
// Text

std::string Tensor::toString(int edgeItems) const {
  if (!defined()) return "undefined";
  if (device() != Device::Cpu)
    return "<" + shapeToString(m_shape) + " " + std::string(dtypeName(m_dtype)) + " on " +
           std::string(deviceName(device())) + ">";
  if (edgeItems < 1)
    throw std::invalid_argument("Tensor::toString: expected edgeItems >= 1, found " +
                                std::to_string(edgeItems));
  if (numel() == 0) return "[]";  // numpy prints every empty array as []
  return TextPrinter(*this, edgeItems).text();
}

// "Tensor(float32, (2, 3))" on the first line, then toString(); "Tensor(undefined)" for an
// undefined tensor.
std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "Tensor(undefined)";
  return os << "Tensor(" << dtypeName(t.dtype()) << ", " << shapeToString(t.shape()) << ")\n"
            << t.toString();
}

}  // namespace tscope::engine
