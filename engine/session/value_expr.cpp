#include "engine/session/value_expr.h"

#include "engine/io/npy.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace tscope::engine::session {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = s.find(sep, begin);
    parts.push_back(s.substr(begin, end == std::string_view::npos ? s.npos : end - begin));
    if (end == std::string_view::npos) break;
    begin = end + 1;
  }
  return parts;
}

std::int64_t parseInt(std::string_view s, std::string_view what) {
  s = trim(s);
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    throw std::invalid_argument("expected an integer for " + std::string(what) + ", found '" +
                                std::string(s) + "'");
  return v;
}

double parseNumber(std::string_view s, std::string_view what) {
  s = trim(s);
  const std::string text(s);
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size())
    throw std::invalid_argument("expected a number for " + std::string(what) + ", found '" + text +
                                "'");
  return v;
}

std::vector<std::int64_t> parseIndex(std::string_view s) {
  std::vector<std::int64_t> index;
  if (trim(s).empty()) return index;  // a 0-d value: "nan@"
  for (std::string_view part : split(s, ',')) index.push_back(parseInt(part, "an element index"));
  return index;
}

std::string indexText(std::span<const std::int64_t> index) {
  std::string s = "[";
  for (std::size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + "]";
}

}  // namespace

std::pair<std::string, std::string> splitSliceSuffix(std::string_view text) {
  text = trim(text);
  const std::size_t open = text.find('[');
  if (open == std::string_view::npos) return {std::string(text), std::string()};
  return {std::string(trim(text.substr(0, open))), std::string(text.substr(open))};
}

SliceSpec parseSlice(std::string_view text) {
  text = trim(text);
  if (text.size() < 2 || text.front() != '[' || text.back() != ']')
    throw std::invalid_argument("expected a slice in brackets like [0:2, :], found '" +
                                std::string(text) + "'");
  SliceSpec spec;
  const std::string_view body = text.substr(1, text.size() - 2);
  if (trim(body).empty()) return spec;
  for (std::string_view part : split(body, ',')) {
    part = trim(part);
    SliceAxis axis;
    if (part.find(':') == std::string_view::npos) {
      axis.isIndex = true;
      axis.index = parseInt(part, "a slice index");
    } else {
      const auto bounds = split(part, ':');
      if (bounds.size() > 3)
        throw std::invalid_argument("expected start:stop:step in a slice, found '" +
                                    std::string(part) + "'");
      if (!trim(bounds[0]).empty()) axis.start = parseInt(bounds[0], "a slice start");
      if (bounds.size() > 1 && !trim(bounds[1]).empty())
        axis.stop = parseInt(bounds[1], "a slice stop");
      if (bounds.size() > 2 && !trim(bounds[2]).empty()) {
        axis.step = parseInt(bounds[2], "a slice step");
        if (axis.step == 0) throw std::invalid_argument("a slice step cannot be 0");
      }
    }
    spec.push_back(axis);
  }
  return spec;
}

Tensor applySlice(const Tensor& value, const SliceSpec& slice) {
  if (static_cast<int>(slice.size()) > value.ndim())
    throw std::invalid_argument("the slice has " + std::to_string(slice.size()) +
                                " axes but the value has " + std::to_string(value.ndim()) +
                                " (shape " + shapeToString(value.shape()) + ")");
  Tensor t = value;
  int axis = 0;
  for (const SliceAxis& s : slice) {
    const std::int64_t n = t.shape()[static_cast<std::size_t>(axis)];
    if (s.isIndex) {
      const std::int64_t i = s.index < 0 ? s.index + n : s.index;
      if (i < 0 || i >= n)
        throw std::invalid_argument("index " + std::to_string(s.index) +
                                    " is out of range for axis " + std::to_string(axis) +
                                    " of size " + std::to_string(n));
      t = t.select(axis, i);
      continue;
    }
    const std::int64_t big = std::numeric_limits<std::int64_t>::max() / 4;
    const std::int64_t start = s.start.value_or(s.step > 0 ? 0 : big);
    const std::int64_t stop = s.stop.value_or(s.step > 0 ? big : -big);
    t = t.slice(axis, start, stop, s.step);
    ++axis;
  }
  return t;
}

ValueEdit parseValueEdit(std::string_view text) {
  text = trim(text);
  ValueEdit e;
  auto after = [&](std::string_view prefix) { return trim(text.substr(prefix.size())); };
  if (text == "zeros") {
    e.kind = ValueEdit::Kind::Zeros;
  } else if (text.starts_with("scale ") || text == "scale") {
    e.kind = ValueEdit::Kind::Scale;
    e.k = parseNumber(after("scale"), "scale K");
  } else if (text.starts_with("fill ") || text == "fill") {
    e.kind = ValueEdit::Kind::Fill;
    e.k = parseNumber(after("fill"), "fill K");
  } else if (text.starts_with("nan@")) {
    e.kind = ValueEdit::Kind::NanAt;
    e.index = parseIndex(after("nan@"));
  } else if (text.starts_with("inf@") || text.starts_with("+inf@")) {
    e.kind = ValueEdit::Kind::InfAt;
    e.k = 1;
    e.index = parseIndex(text.substr(text.find('@') + 1));
  } else if (text.starts_with("-inf@")) {
    e.kind = ValueEdit::Kind::InfAt;
    e.k = -1;
    e.index = parseIndex(after("-inf@"));
  } else if (text.ends_with(".npy")) {
    e.kind = ValueEdit::Kind::File;
    e.path = std::string(text);
  } else {
    throw std::invalid_argument(
        "expected FILE.npy, zeros, scale K, fill K, nan@I,J,... or [-]inf@I,J,..., found '" +
        std::string(text) + "'");
  }
  return e;
}

Tensor applyValueEdit(const Tensor& like, const ValueEdit& e) {
  switch (e.kind) {
    case ValueEdit::Kind::File: {
      Tensor loaded = io::loadNpy(e.path);
      if (loaded.shape() != like.shape())
        throw std::invalid_argument(e.path + " holds shape " + shapeToString(loaded.shape()) +
                                    ", the value has shape " + shapeToString(like.shape()));
      if (loaded.dtype() == like.dtype()) return loaded;
      Tensor converted = loaded.astype(like.dtype());
      if (!converted.astype(loaded.dtype()).bitwiseEqual(loaded.contiguous()))
        throw std::invalid_argument(e.path + " holds " + std::string(dtypeName(loaded.dtype())) +
                                    " values that do not convert exactly to " +
                                    std::string(dtypeName(like.dtype())));
      return converted;
    }
    case ValueEdit::Kind::Zeros:
      return Tensor::zeros(like.dtype(), like.shape());
    case ValueEdit::Kind::Fill:
      return Tensor::full(like.dtype(), like.shape(), e.k);
    case ValueEdit::Kind::Scale: {
      Tensor t = like.clone();
      std::vector<double> v = t.toDoubles();
      for (double& x : v) x *= e.k;
      return Tensor::fromDoubles(like.dtype(), like.shape(), v);
    }
    case ValueEdit::Kind::NanAt:
    case ValueEdit::Kind::InfAt: {
      if (!isFloat(like.dtype()))
        throw std::invalid_argument("a " + std::string(dtypeName(like.dtype())) +
                                    " value cannot hold " +
                                    (e.kind == ValueEdit::Kind::NanAt ? "NaN" : "Inf"));
      if (static_cast<int>(e.index.size()) != like.ndim())
        throw std::invalid_argument("the element index " + indexText(e.index) + " has " +
                                    std::to_string(e.index.size()) + " axes; the value has " +
                                    std::to_string(like.ndim()) + " (shape " +
                                    shapeToString(like.shape()) + ")");
      for (std::size_t a = 0; a < e.index.size(); ++a)
        if (e.index[a] < 0 || e.index[a] >= like.shape()[a])
          throw std::invalid_argument("the element index " + indexText(e.index) +
                                      " is outside shape " + shapeToString(like.shape()));
      Tensor t = like.clone();
      const double bad = e.kind == ValueEdit::Kind::NanAt
                             ? std::numeric_limits<double>::quiet_NaN()
                             : e.k * std::numeric_limits<double>::infinity();
      t.set(e.index, bad);
      return t;
    }
  }
  throw std::logic_error("applyValueEdit: unknown edit");
}

}  // namespace tscope::engine::session
