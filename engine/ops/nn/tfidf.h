#pragma once
// TfIdfVectorizer{...}(x) -> y: ONNX's TfIdfVectorizer over integer token ids. x is (C) or (N, C)
// int32/int64; y float32 (K) or (N, K), K = max(ngram_indexes) + 1. For each row, every n-gram
// with min_gram_length <= n <= max_gram_length whose tokens are x[i], x[i + s + 1], ...,
// x[i + (n - 1)(s + 1)] for a skip 0 <= s <= max_skip_count (unigrams once per position) that is in
// the pool counts once at its column; mode TF keeps the counts, IDF gives weight (or 1) where
// the count is positive, TFIDF count * weight. The pool lists the unigrams, then the bigrams...:
// ngram_counts[n - 1] is where the n-grams start in pool, ngram_indexes the column of each.
//   VarPtr y = tfidfVectorizer(tokens, params);
// Not differentiable (integer input).
#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

struct TfIdfParams {
  std::int64_t minGram = 1, maxGram = 1, maxSkip = 0;
  std::string mode = "TF";  // TF, IDF, TFIDF
  std::vector<std::int64_t> ngramCounts, ngramIndexes, pool;
  std::vector<double> weights;  // empty: all 1
};

class TfIdfVectorizer final : public Op {
 public:
  // Throws std::invalid_argument when the pool, counts and indexes do not fit together.
  explicit TfIdfVectorizer(TfIdfParams p);
  std::string name() const override { return "TfIdfVectorizer"; }
  nlohmann::json props() const override;
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  static OpPtr fromProps(const nlohmann::json& props);

 private:
  TfIdfParams m_p;
  std::int64_t m_columns = 0;
};

VarPtr tfidfVectorizer(const VarPtr& x, TfIdfParams params,
                       std::source_location site = std::source_location::current());

void registerTfIdfOps(OpRegistry& registry);

}  // namespace tscope::engine
