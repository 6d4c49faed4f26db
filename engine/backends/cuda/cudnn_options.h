#pragma once
// cuDNN's options (docs/gpu.md, Note [Convolution algorithms]): how the convolution kernels choose
// their algorithm, the workspace they may use, and the record of what they chose. No CUDA or cuDNN
// type here; the parsing and the record need no device (tests/engine/cuda/tst_cudnn_params.cpp).
// Part of tscope_cuda: a build without the toolkit has none of it.
//
//   TSCOPE_CUDNN_CONV_ALGO=time_on_shape_change TSCOPE_CUDNN_WORKSPACE_LIMIT=512M tensorscope run
//   ... setCudnnOptions({.algoMode = ConvAlgoMode::TimeOnce, .workspaceLimit = 64 << 20});
//
// Note [Convolution algorithms]: Theano's four modes, per node and per direction (forward,
// backward-data, backward-filter):
//   guess_once            cuDNN's heuristic (cudnnGet*Algorithm_v7) on the node's first call; the
//                         choice is kept for every later call, whatever the shapes
//   guess_on_shape_change the heuristic again whenever the node's input shapes change
//   time_once             every algorithm run once on the node's first call (cudnnFind*AlgorithmEx)
//                         and the fastest kept
//   time_on_shape_change  timed again whenever the input shapes change
// Only algorithms whose workspace fits workspaceLimit are taken (the heuristic's list is walked in
// its order; the timing gets a workspace of at most that size). Each choice is recorded
// (cudnnConvAlgoChoices) with the node, so a profile can say which algorithm ran.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine::cuda {

enum class ConvAlgoMode : std::uint8_t {
  GuessOnce,
  GuessOnShapeChange,
  TimeOnce,
  TimeOnShapeChange
};
inline constexpr std::size_t kConvAlgoModeCount = 4;

// "guess_once", "guess_on_shape_change", "time_once", "time_on_shape_change".
std::string_view convAlgoModeName(ConvAlgoMode mode);
// The mode named text; std::invalid_argument "<what>: expected one of guess_once,
// guess_on_shape_change, time_once, time_on_shape_change, found 'text'".
ConvAlgoMode parseConvAlgoMode(std::string_view text,
                               std::string_view what = "cuDNN algorithm mode");
// A byte count: digits with an optional K, M or G suffix (powers of 1024); std::invalid_argument
// naming what and the text otherwise.
std::size_t parseByteCount(std::string_view text, std::string_view what);

struct CudnnOptions {
  ConvAlgoMode algoMode = ConvAlgoMode::GuessOnce;
  std::size_t workspaceLimit = std::size_t(256) << 20;  // bytes
  // The defaults overridden by TSCOPE_CUDNN_CONV_ALGO and TSCOPE_CUDNN_WORKSPACE_LIMIT; a bad
  // value throws std::invalid_argument naming the variable.
  static CudnnOptions fromEnvironment();
};

// The options the kernels use: fromEnvironment() at the first call, unless set before.
CudnnOptions cudnnOptions();
// Takes effect for choices made after it (a node's kept choice stays: forgetConvAlgoChoices()).
void setCudnnOptions(const CudnnOptions& options);

// One algorithm choice of a convolution kernel, for the profile.
struct ConvAlgoChoice {
  std::int64_t nodeId = -1;
  std::string op;         // "Conv2d", "FusedConv2d", "Conv2dGradInputs", "Conv2dGradWeights"
  std::string direction;  // "fwd", "bwd_data", "bwd_filter"
  std::string algorithm;  // cuDNN's name without its prefix: "IMPLICIT_PRECOMP_GEMM", "WINOGRAD"
  std::size_t workspaceBytes = 0;
  ConvAlgoMode mode = ConvAlgoMode::GuessOnce;
  float timeMs = -1;   // the timed run of the chosen algorithm (time_* modes), else -1
  std::string shapes;  // "x (8, 3, 32, 32) w (16, 3, 3, 3)"
};

// Every choice made since the last forget, oldest first (a node chosen again appears again).
std::vector<ConvAlgoChoice> cudnnConvAlgoChoices();
// The last choice for a node id, formatted "cudnn fwd IMPLICIT_PRECOMP_GEMM (guess_once, ws 0 B)";
// empty when none.
std::string convAlgoNote(std::int64_t nodeId);
// Records a choice (the kernels call it).
void recordConvAlgoChoice(ConvAlgoChoice choice);
// Clears the record and the kept choices (the next call of each node chooses again).
void forgetConvAlgoChoices();
// Bumped by forgetConvAlgoChoices and setCudnnOptions: a kept choice from an older generation is
// chosen again.
std::uint64_t convAlgoGeneration();

}  // namespace tscope::engine::cuda
