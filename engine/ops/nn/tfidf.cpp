#include "engine/ops/nn/tfidf.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <map>

namespace tscope::engine {

namespace {

// n-gram -> pool position, for every length.
std::map<std::vector<std::int64_t>, std::size_t> poolIndex(const TfIdfParams& p) {
  std::map<std::vector<std::int64_t>, std::size_t> out;
  std::size_t gram = 0;
  for (std::size_t level = 0; level < p.ngramCounts.size(); ++level) {
    const auto n = static_cast<std::int64_t>(level + 1);
    const std::int64_t begin = p.ngramCounts[level];
    const std::int64_t end = level + 1 < p.ngramCounts.size()
                                 ? p.ngramCounts[level + 1]
                                 : static_cast<std::int64_t>(p.pool.size());
    if (begin < 0 || end < begin || end > static_cast<std::int64_t>(p.pool.size()) ||
        (end - begin) % n != 0)
      throw std::invalid_argument("TfIdfVectorizer: ngram_counts[" + std::to_string(level) +
                                  "] = " + std::to_string(begin) + " does not split the pool of " +
                                  std::to_string(p.pool.size()) + " into " + std::to_string(n) +
                                  "-grams");
    for (std::int64_t at = begin; at < end; at += n, ++gram)
      out.emplace(std::vector<std::int64_t>(p.pool.begin() + at, p.pool.begin() + at + n), gram);
  }
  if (gram != p.ngramIndexes.size())
    throw std::invalid_argument("TfIdfVectorizer: the pool holds " + std::to_string(gram) +
                                " n-grams, ngram_indexes " + std::to_string(p.ngramIndexes.size()));
  return out;
}

}  // namespace

TfIdfVectorizer::TfIdfVectorizer(TfIdfParams p) : m_p(std::move(p)) {
  if (m_p.minGram < 1 || m_p.maxGram < m_p.minGram || m_p.maxSkip < 0)
    throw std::invalid_argument(
        "TfIdfVectorizer: expected 1 <= min_gram_length <= "
        "max_gram_length and max_skip_count >= 0");
  if (m_p.mode != "TF" && m_p.mode != "IDF" && m_p.mode != "TFIDF")
    throw std::invalid_argument("TfIdfVectorizer: expected mode TF, IDF or TFIDF, found '" +
                                m_p.mode + "'");
  if (!m_p.weights.empty() && m_p.weights.size() != m_p.ngramIndexes.size())
    throw std::invalid_argument("TfIdfVectorizer: expected one weight per n-gram");
  (void)poolIndex(m_p);
  for (std::int64_t c : m_p.ngramIndexes) {
    if (c < 0) throw std::invalid_argument("TfIdfVectorizer: negative ngram_indexes entry");
    m_columns = std::max(m_columns, c + 1);
  }
}

nlohmann::json TfIdfVectorizer::props() const {
  return {{"min_gram_length", m_p.minGram},  {"max_gram_length", m_p.maxGram},
          {"max_skip_count", m_p.maxSkip},   {"mode", m_p.mode},
          {"ngram_counts", m_p.ngramCounts}, {"ngram_indexes", m_p.ngramIndexes},
          {"pool_int64s", m_p.pool},         {"weights", m_p.weights}};
}

std::vector<TensorType> TfIdfVectorizer::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& t = inputs[0]->type();
  if ((t.ndim() != 1 && t.ndim() != 2) || !isInteger(t.dtype()))
    throwInputError(inputs, 0, "integer tokens of shape (C) or (N, C)");
  if (t.ndim() == 1) return {TensorType(DType::Float32, {m_columns}, t.device())};
  return {TensorType(DType::Float32, {t.shape()[0], m_columns}, t.device())};
}

void TfIdfVectorizer::perform(const Apply&, std::span<const Tensor* const> inputs,
                              std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  const std::int64_t rows = x.ndim() == 1 ? 1 : x.shape()[0];
  const std::int64_t c = x.shape()[static_cast<std::size_t>(x.ndim() - 1)];
  const Tensor xc = x.astype(DType::Int64).contiguous();
  const std::int64_t* tokens = xc.data<std::int64_t>();
  const auto index = poolIndex(m_p);
  std::vector<double> counts(static_cast<std::size_t>(rows * m_columns), 0.0);
  std::vector<std::int64_t> gram;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t* row = tokens + r * c;
    double* out = counts.data() + r * m_columns;
    for (std::int64_t i = 0; i < c; ++i)
      for (std::int64_t n = m_p.minGram; n <= m_p.maxGram; ++n)
        for (std::int64_t s = 0; s <= (n == 1 ? 0 : m_p.maxSkip); ++s) {
          if (i + (n - 1) * (s + 1) >= c) break;
          gram.clear();
          for (std::int64_t k = 0; k < n; ++k) gram.push_back(row[i + k * (s + 1)]);
          auto it = index.find(gram);
          if (it != index.end()) out[m_p.ngramIndexes[it->second]] += 1;
        }
  }
  // Weights per column (the last n-gram mapped to a column wins, as columns are one per n-gram).
  std::vector<double> weight(static_cast<std::size_t>(m_columns), 1.0);
  if (!m_p.weights.empty())
    for (std::size_t g = 0; g < m_p.ngramIndexes.size(); ++g)
      weight[static_cast<std::size_t>(m_p.ngramIndexes[g])] = m_p.weights[g];
  for (std::size_t k = 0; k < counts.size(); ++k) {
    const double w = weight[k % static_cast<std::size_t>(m_columns)];
    if (m_p.mode == "IDF")
      counts[k] = counts[k] > 0 ? w : 0;
    else if (m_p.mode == "TFIDF")
      counts[k] *= w;
  }
  const Shape shape = x.ndim() == 1 ? Shape{m_columns} : Shape{rows, m_columns};
  *outputs[0] = Tensor::fromDoubles(DType::Float32, shape, counts);
}

std::vector<Grad> TfIdfVectorizer::pullback(const Apply&, std::span<const VarPtr>) const {
  return {Grad::disconnected()};
}

OpPtr TfIdfVectorizer::fromProps(const nlohmann::json& props) {
  shape_detail::propKeys(props, "TfIdfVectorizer",
                         {"min_gram_length", "max_gram_length", "max_skip_count", "mode",
                          "ngram_counts", "ngram_indexes", "pool_int64s", "weights"});
  try {
    TfIdfParams p;
    p.minGram = props.value("min_gram_length", std::int64_t{1});
    p.maxGram = props.value("max_gram_length", std::int64_t{1});
    p.maxSkip = props.value("max_skip_count", std::int64_t{0});
    p.mode = props.value("mode", std::string("TF"));
    p.ngramCounts = props.value("ngram_counts", std::vector<std::int64_t>{});
    p.ngramIndexes = props.value("ngram_indexes", std::vector<std::int64_t>{});
    p.pool = props.value("pool_int64s", std::vector<std::int64_t>{});
    p.weights = props.value("weights", std::vector<double>{});
    return std::make_shared<TfIdfVectorizer>(std::move(p));
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("TfIdfVectorizer: bad props: ") + e.what());
  }
}

VarPtr tfidfVectorizer(const VarPtr& x, TfIdfParams params, std::source_location site) {
  return (*std::make_shared<TfIdfVectorizer>(std::move(params)))({x}, site);
}

void registerTfIdfOps(OpRegistry& registry) {
  registry.add("TfIdfVectorizer", &TfIdfVectorizer::fromProps);
}

}  // namespace tscope::engine
