#pragma once
// The small value language of `tensorscope debug` (and the GUI's edit box): slices of a value to
// print, and the edits `set` applies. Pure functions over Tensor; every parse error is a
// std::invalid_argument whose one-line message says what was expected and what was found.
//
//   auto [name, slice] = splitSliceSuffix("h1[0:2, :]");   // "h1", "[0:2, :]"
//   Tensor part = applySlice(value, parseSlice(slice));     // value[0:2, :]
//   ValueEdit e = parseValueEdit("nan@1,4");                // element [1, 4] becomes NaN
//   Tensor edited = applyValueEdit(value, e);               // a new tensor; value is unchanged

#include "engine/tensor/tensor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tscope::engine::session {

// One axis of a slice: an index (drops the axis) or start:stop:step (numpy semantics, negative
// values count from the end, omitted bounds are the whole axis).
struct SliceAxis {
  bool isIndex = false;
  std::int64_t index = 0;
  std::optional<std::int64_t> start, stop;
  std::int64_t step = 1;
};
using SliceSpec = std::vector<SliceAxis>;

// "VAR[...]" -> ("VAR", "[...]"); a name without brackets -> (name, "").
std::pair<std::string, std::string> splitSliceSuffix(std::string_view text);
// "[0:2, :, 3]", "[::2]", "[-1]"; the brackets are required.
SliceSpec parseSlice(std::string_view text);
// A view of `value`; throws std::invalid_argument for more axes than the value has or an index
// out of range (naming the axis and its size).
Tensor applySlice(const Tensor& value, const SliceSpec& slice);

// What `set VAR = ...` does to a value.
struct ValueEdit {
  enum class Kind { File, Zeros, Scale, NanAt, InfAt, Fill };
  Kind kind = Kind::Zeros;
  std::string path;                 // File: a NumPy .npy file
  double k = 0;                     // Scale: the factor; Fill: the value; InfAt: the sign
  std::vector<std::int64_t> index;  // NanAt / InfAt: the element
};
// "FILE.npy" | "zeros" | "scale K" | "fill K" | "nan@I,J,..." | "inf@I,..." | "-inf@I,...".
ValueEdit parseValueEdit(std::string_view text);
// The edited value (a new tensor of the same dtype and shape, or the file's content converted to
// `like`'s dtype when that is lossless). Throws std::invalid_argument for an index of the wrong
// rank or out of range, nan/inf into an integer or bool value, or a file whose shape differs.
Tensor applyValueEdit(const Tensor& like, const ValueEdit& edit);

}  // namespace tscope::engine::session
