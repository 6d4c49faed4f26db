// Reading .tsg files. Every value is checked before it is used; a refusal throws TsgError with the
// JSON path, and nothing of a refused document escapes (Note [Whole or nothing]).

#include "engine/graph/errors.h"
#include "engine/graph/id_index.h"
#include "engine/graph/op.h"
#include "engine/io/base64.h"
#include "engine/io/graph_json.h"
#include "engine/io/json_cursor.h"
#include "engine/io/tsg.h"
#include "engine/io/tsg_binary.h"

#include <algorithm>
#include <deque>
#include <unordered_map>
#include <unordered_set>

namespace tscope::engine::io {

using nlohmann::json;

namespace {

constexpr std::int64_t kMaxId = (std::int64_t{1} << 53) - 1;  // exact in every JSON reader
constexpr int kMaxRank = 32;

// A type is written "float32[?,784]": the dtype, the dimensions in brackets (a size, or ? when
// unknown), and "@cuda" for a type on the GPU.
TensorType readType(const JsonCursor& c) {
  std::string text = c.string();
  auto bad = [&](const std::string& why) {
    // describe() quotes the text shortened at a character boundary, so the message stays UTF-8.
    c.fail("expected a type such as \"float32[?,784]\", found " + c.describe() + " (" + why + ")");
  };
  std::size_t open = text.find('[');
  if (open == std::string::npos) bad("no '['");
  auto dtype = dtypeFromName(std::string_view(text).substr(0, open));
  if (!dtype)
    bad("unknown dtype \"" + text.substr(0, open) + "\"; expected bool, int8, ..., float64");
  std::size_t close = text.find(']', open);
  if (close == std::string::npos) bad("no ']'");
  std::vector<std::int64_t> dims;
  std::string_view body = std::string_view(text).substr(open + 1, close - open - 1);
  while (!body.empty()) {
    std::size_t comma = body.find(',');
    std::string_view dim = body.substr(0, comma);
    if (dim == "?") {
      dims.push_back(kUnknownDim);
    } else {
      std::int64_t d = 0;
      if (dim.empty() || dim.size() > 16) bad("a dimension must be a size or ?");
      for (char ch : dim) {
        if (ch < '0' || ch > '9') bad("a dimension must be a size or ?");
        d = d * 10 + (ch - '0');
      }
      if (d > kMaxId) bad("a dimension is too large");
      dims.push_back(d);
    }
    if (dims.size() > kMaxRank) bad("more than " + std::to_string(kMaxRank) + " dimensions");
    if (comma == std::string_view::npos) break;
    body.remove_prefix(comma + 1);
    if (body.empty()) bad("a dimension is missing after ','");
  }
  std::string_view rest = std::string_view(text).substr(close + 1);
  Device device = Device::Cpu;
  if (rest == "@cuda")
    device = Device::Cuda;
  else if (!rest.empty())
    bad("unexpected text after ']'");
  return TensorType(*dtype, std::move(dims), device);
}

// Where a document's tensors are: a version-2 tensor section, or none (base64 "data" only: a
// version-1 file, or a graph kept in op props). Counts the base64 tensors for the stats.
struct TensorSource {
  TensorSectionReader* section = nullptr;
  TsgTensorStats inline_;
};

// Which tensor a message is about: "the value of variable 12 'fc.weight'".
struct TensorLabel {
  const char* role;
  std::int64_t id;
  const std::string& name;
  std::string str() const {
    return std::string(role) + " of variable " + std::to_string(id) +
           (name.empty() ? std::string() : " '" + name + "'");
  }
};

Tensor readTensor(const JsonCursor& c, TensorSource& source, TensorSectionReader::Use use,
                  int graph, const TensorLabel& label) {
  c.expectObject();
  auto dtypeName = c.at("dtype").string();
  auto dtype = dtypeFromName(dtypeName);
  if (!dtype)
    c.at("dtype").fail("expected a dtype name (bool, int8, ..., float64), found \"" + dtypeName +
                       "\"");
  JsonCursor shapeCursor = c.at("shape");
  std::size_t ndim = shapeCursor.arraySize();
  if (ndim > kMaxRank)
    shapeCursor.fail("expected at most " + std::to_string(kMaxRank) + " dimensions");
  Shape shape;
  std::int64_t numel = 1;
  for (std::size_t i = 0; i < ndim; ++i) {
    std::int64_t d = shapeCursor.at(i).integer(0, kMaxId);
    if (__builtin_mul_overflow(numel, d, &numel) || numel > kMaxId)
      shapeCursor.fail("the shape has more elements than any file can hold");
    shape.push_back(d);
  }
  if (!c.find("data")) {
    if (!source.section)
      c.fail("expected the tensor's bytes in \"data\" (base64): " + label.str() +
             " refers to a tensor section, but this document has none (only version-2 files "
             "have one, after their JSON)");
    Tensor t = source.section->read(c, *dtype, std::move(shape), numel, use, graph, label.str());
    return t;
  }
  JsonCursor data = c.at("data");
  std::string text = data.string();
  auto size = base64DecodedSize(text);
  if (!size)
    data.fail("expected little-endian tensor data in base64 (length a multiple of 4, '=' padding)");
  std::uint64_t expected = static_cast<std::uint64_t>(numel) * dtypeSize(*dtype);
  if (*size != expected)
    data.fail("expected " + std::to_string(expected) + " bytes for " + dtypeName + " " +
              shapeToString(shape) + ", found " + std::to_string(*size));
  auto bytes = base64Decode(text);
  if (!bytes)
    data.fail("expected base64 data, found characters outside the base64 alphabet or bad padding");
  // A bool byte other than 0 or 1 is no bool value (reading it as one is undefined behaviour).
  if (*dtype == DType::Bool)
    for (std::size_t i = 0; i < bytes->size(); ++i)
      if (std::to_integer<unsigned>((*bytes)[i]) > 1)
        data.fail("expected bool data bytes 0 or 1, found " +
                  std::to_string(std::to_integer<unsigned>((*bytes)[i])) + " at byte " +
                  std::to_string(i));
  ++source.inline_.tensors;
  ++source.inline_.references;
  source.inline_.tensorBytes += bytes->size();
  return Tensor::fromBytes(*dtype, std::move(shape), *bytes);
}

std::string readScope(const JsonCursor& c) {
  auto s = c.find("scope");
  return s ? s->string() : std::string();
}

// The document's table of creation sites: [{"file", "function"}, ...]; a node refers to an entry
// and adds its line ("site": [index, line]), so long function signatures are stored once.
using SiteTable = std::vector<std::pair<std::string, std::string>>;

SiteTable readSiteTable(const JsonCursor& root) {
  SiteTable table;
  auto sites = root.find("sites");
  if (!sites) return table;
  for (std::size_t i = 0, n = sites->arraySize(); i < n; ++i) {
    JsonCursor e = sites->at(i);
    table.emplace_back(e.at("file").string(),
                       e.find("function") ? e.at("function").string() : std::string());
  }
  return table;
}

std::optional<SourceSite> readSite(const JsonCursor& c, const SiteTable& table) {
  auto s = c.find("site");
  if (!s) return std::nullopt;
  if (s->value().is_null()) return SourceSite{};
  if (s->arraySize() != 2) s->fail("expected [site table index, line]");
  auto index = static_cast<std::size_t>(
      s->at(std::size_t{0}).integer(0, static_cast<std::int64_t>(table.size()) - 1));
  SourceSite site;
  site.file = table[index].first;
  site.function = table[index].second;
  site.line = static_cast<std::uint32_t>(s->at(std::size_t{1}).integer(0, 0xffffffffLL));
  return site;
}

// One graph of the document.
class GraphReader {
 public:
  GraphReader(const JsonCursor& c, const OpRegistry& registry, const SiteTable& sites,
              TensorSource& tensors, int graph)
      : m_c(c), m_registry(registry), m_sites(sites), m_tensors(tensors), m_graph(graph) {}

  std::unique_ptr<FunctionGraph> read() {
    m_c.expectObject();
    readVariables();
    readApplies();
    std::vector<VarPtr> inputs = readVarList("inputs", true);
    std::vector<VarPtr> outputs = readVarList("outputs", false);
    std::unique_ptr<FunctionGraph> fg;
    try {
      fg = std::make_unique<FunctionGraph>(inputs, outputs, FunctionGraph::Ownership::Adopt);
    } catch (const std::exception& e) {
      m_c.at("outputs").fail(std::string("the graph does not hold together: ") + e.what());
    }
    // Dead code is reported at its first place in the file: applies first, they say more.
    std::vector<std::pair<std::size_t, std::int64_t>> deadApplies, deadVariables;
    for (const NodeEntry& n : m_nodes)
      if (n.node->fgraph() != fg.get()) deadApplies.emplace_back(n.position, n.id);
    for (const Entry& entry : m_entries)
      if (entry.var->fgraph() != fg.get() && entry.position != kImplicit)
        deadVariables.emplace_back(entry.position, entry.id);
    if (!deadApplies.empty()) {
      auto [position, id] = *std::min_element(deadApplies.begin(), deadApplies.end());
      m_c.at("applies").at(position).fail(
          "apply " + std::to_string(id) +
          " is not needed by any graph output (.tsg files hold no dead code)");
    }
    if (!deadVariables.empty()) {
      auto [position, id] = *std::min_element(deadVariables.begin(), deadVariables.end());
      m_c.at("variables")
          .at(position)
          .fail("variable " + std::to_string(id) +
                " is neither a graph input nor needed by a graph output "
                "(.tsg files hold no dead code)");
    }
    if (auto updates = m_c.find("updates")) {
      for (std::size_t i = 0, n = updates->arraySize(); i < n; ++i) {
        JsonCursor u = updates->at(i);
        auto out = static_cast<std::size_t>(
            u.at("output").integer(0, static_cast<std::int64_t>(outputs.size()) - 1));
        auto in = static_cast<std::size_t>(
            u.at("input").integer(0, static_cast<std::int64_t>(inputs.size()) - 1));
        try {
          fg->setUpdate(out, in);
        } catch (const std::exception& e) {
          u.fail(e.what());
        }
      }
    }
    if (auto next = m_c.find("next_id")) fg->reserveIds(next->integer(0, kMaxId + 1));
    return fg;
  }

 private:
  struct Entry {
    std::int64_t id;
    std::size_t position;  // index in "variables"; kImplicit for an output the file does not list
    std::string kind;
    TensorType type;
    VarPtr var;  // set at once for free variables, at the apply for computed ones
    bool produced = false;
    std::optional<JsonCursor> meta;  // a computed variable's entry, applied when its apply is read
  };
  struct NodeEntry {
    ApplyPtr node;
    std::size_t position;  // index in "applies"
    std::int64_t id;
  };

  static constexpr std::size_t kImplicit = ~std::size_t{0};

  void claimId(std::int64_t id, const JsonCursor& where) {
    static const char kUsed = 0;
    if (m_ids.contains(id)) where.fail("the id " + std::to_string(id) + " is used twice");
    m_ids.set(id, &kUsed);
  }

  void readVariables() {
    JsonCursor vars = m_c.at("variables");
    for (std::size_t i = 0, n = vars.arraySize(); i < n; ++i) {
      JsonCursor v = vars.at(i);
      v.expectObject();
      std::int64_t id = v.at("id").integer(0, kMaxId);
      claimId(id, v.at("id"));
      std::string kind = v.at("kind").string();
      if (kind == "computed" && v.find("type"))
        v.at("type").fail("a computed variable's type is given by its apply (\"types\"), not here");
      Entry e{
          id,      i,     kind,        kind == "computed" ? TensorType() : readType(v.at("type")),
          nullptr, false, std::nullopt};
      std::string name = v.find("name") ? v.at("name").string() : std::string();
      if (e.kind == "input") {
        e.var = Variable::create(e.type, name);
      } else if (e.kind == "constant" || e.kind == "shared") {
        // Note [Adopted values]: a value from the file is the variable's own already (decoded from
        // base64, or over the file's bytes: private for a shared variable), so it is not copied.
        Tensor value = readTensor(v.at("value"), m_tensors,
                                  e.kind == "shared" ? TensorSectionReader::Use::Shared
                                                     : TensorSectionReader::Use::Constant,
                                  m_graph, TensorLabel{"the value", id, name});
        if (TensorType::ofValue(value) != e.type &&
            !(e.kind == "shared" && e.type.isCompatibleWith(TensorType::ofValue(value))))
          v.at("value").fail("the value has type " + TensorType::ofValue(value).str() +
                             " but the variable's type is " + e.type.str());
        if (e.kind == "constant") {
          e.var = Constant::adopt(value, name);
        } else {
          try {
            e.var = SharedVariable::adopt(value, name, e.type);
          } catch (const std::exception& ex) {
            v.at("value").fail(ex.what());
          }
        }
      } else if (e.kind != "computed") {
        v.at("kind").fail("expected \"input\", \"constant\", \"shared\" or \"computed\", found \"" +
                          e.kind + "\"");
      }
      if (e.var)
        applyMetadata(*e.var, v, id);
      else
        e.meta = v;
      addEntry(std::move(e));
    }
  }

  // A computed variable without "scope" or "site" has its apply's.
  void applyMetadata(Variable& var, const JsonCursor& v, std::int64_t id) {
    var.presetId(id);
    if (v.find("scope") || !var.owner()) var.setScope(readScope(v));
    if (auto site = readSite(v, m_sites))
      var.setSite(*site);
    else if (!var.owner())
      var.setSite({});
    if (auto tv = v.find("test_value")) {
      Tensor t = readTensor(*tv, m_tensors, TensorSectionReader::Use::TestValue, m_graph,
                            TensorLabel{"the test value", id, var.name()});
      try {
        var.setTestValue(t);
      } catch (const std::exception& e) {
        tv->fail(e.what());
      }
    }
  }

  Entry& entry(const JsonCursor& ref) {
    std::int64_t id = ref.integer(0, kMaxId);
    Entry* found = m_entryById.find(id);
    if (!found)
      ref.fail(
          "expected the id of a variable listed in \"variables\" or output by an earlier apply, "
          "found " +
          std::to_string(id));
    return *found;
  }

  void readApplies() {
    JsonCursor applies = m_c.at("applies");
    for (std::size_t i = 0, n = applies.arraySize(); i < n; ++i) {
      JsonCursor a = applies.at(i);
      a.expectObject();
      std::int64_t id = a.at("id").integer(0, kMaxId);
      claimId(id, a.at("id"));
      std::string opName = a.at("op").string();
      json props = json::object();
      if (auto p = a.find("props")) {
        p->expectObject();
        props = p->value();
      }
      std::vector<VarPtr> inputs;
      JsonCursor ins = a.at("inputs");
      for (std::size_t k = 0, m = ins.arraySize(); k < m; ++k) {
        Entry& e = entry(ins.at(k));
        if (!e.var)
          ins.at(k).fail("variable " + ins.at(k).value().dump() +
                         " is computed by an apply listed later or by none (applies must be in "
                         "topological order)");
        inputs.push_back(e.var);
      }
      OpPtr op = makeOp(opName, props, a);
      std::vector<TensorType> inferred;
      if (op->isExecutable()) {
        try {
          inferred = op->outputTypes(inputs);
        } catch (const std::exception& e) {
          a.at("inputs").fail(std::string("the op refuses its inputs: ") + e.what());
        }
      }
      // Note [Implicit outputs]: the types of an apply's outputs are on the apply ("types"); an
      // output with nothing else to say (no name, test value, own scope or site) is not listed
      // in "variables".
      JsonCursor outs = a.at("outputs");
      JsonCursor typeList = a.at("types");
      std::size_t nOutputs = outs.arraySize();
      if (typeList.arraySize() != nOutputs)
        typeList.fail("expected one type per output (" + std::to_string(nOutputs) + "), found " +
                      std::to_string(typeList.arraySize()));
      if (op->isExecutable() && inferred.size() != nOutputs)
        outs.fail("expected " + std::to_string(inferred.size()) + " outputs for " + op->str() +
                  ", found " + std::to_string(nOutputs));
      std::vector<Entry*> outEntries;
      std::vector<TensorType> types;
      for (std::size_t k = 0; k < nOutputs; ++k) {
        JsonCursor ref = outs.at(k);
        std::int64_t varId = ref.integer(0, kMaxId);
        TensorType declared = readType(typeList.at(k));
        if (op->isExecutable() && !declared.isCompatibleWith(inferred[k]))
          typeList.at(k).fail("the output type " + declared.str() + " contradicts the type " +
                              inferred[k].str() + " that " + op->str() + " computes");
        Entry* found = m_entryById.find(varId);
        if (!found) {
          claimId(varId, ref);
          found = &addEntry(
              Entry{varId, kImplicit, "computed", declared, nullptr, false, std::nullopt});
        }
        Entry& e = *found;
        if (e.kind != "computed")
          ref.fail("an apply output must be a variable of kind \"computed\", found \"" + e.kind +
                   "\"");
        if (e.produced)
          ref.fail("variable " + std::to_string(varId) + " is the output of two applies");
        e.type = declared;
        e.produced = true;
        outEntries.push_back(&e);
        types.push_back(std::move(declared));
      }
      ApplyPtr node = Apply::create(op, std::move(inputs), std::move(types),
                                    readSite(a, m_sites).value_or(SourceSite{}));
      node->setScope(readScope(a));
      if (auto g = a.find("gradient_of")) {  // Note [Gradient origin]
        GradientOrigin origin;
        origin.nodeId = g->at("id").integer(-1, kMaxId);
        origin.op = g->at("op").string();
        if (auto kind = g->find("kind")) origin.kind = kind->string();
        if (origin.kind != "grad" && origin.kind != "rop")
          g->fail("expected \"kind\": \"grad\" or \"rop\", found \"" + origin.kind + "\"");
        if (g->find("scope")) origin.scope = readScope(*g);
        origin.site = readSite(*g, m_sites).value_or(SourceSite{});
        node->setGradientOf(std::make_shared<const GradientOrigin>(std::move(origin)));
      }
      for (int k = 0; k < node->nOutputs(); ++k) node->outputRef(k).setScope(node->scope());
      node->presetId(id);
      for (std::size_t k = 0; k < outEntries.size(); ++k) {
        Entry& e = *outEntries[k];
        e.var = node->output(static_cast<int>(k));
        std::int64_t varId = outs.at(k).integer(0, kMaxId);
        if (e.position == kImplicit) {
          e.var->presetId(varId);
          continue;
        }
        const JsonCursor& meta = *e.meta;
        if (auto name = meta.find("name")) e.var->setName(name->string());
        applyMetadata(*e.var, meta, varId);
      }
      m_nodes.push_back(NodeEntry{std::move(node), i, id});
    }
    for (const Entry& e : m_entries)
      if (e.kind == "computed" && !e.produced)
        m_c.at("variables")
            .at(e.position)
            .fail("variable " + std::to_string(e.id) + " is \"computed\" but no apply outputs it");
  }

  OpPtr makeOp(const std::string& name, const json& props, const JsonCursor& a) {
    if (!m_registry.contains(name))
      return std::make_shared<OpaqueOp>(name, props, "no op named '" + name + "' is registered");
    std::string key = name + props.dump();
    if (auto it = m_opCache.find(key); it != m_opCache.end()) return it->second;
    try {
      OpPtr op = m_registry.make(name, props);
      m_opCache.emplace(std::move(key), op);
      return op;
    } catch (const std::exception& e) {
      (a.find("props") ? *a.find("props") : a)
          .fail(std::string("the props do not describe a valid ") + name + ": " + e.what());
    }
  }

  std::vector<VarPtr> readVarList(const char* key, bool free) {
    JsonCursor list = m_c.at(key);
    std::vector<VarPtr> out;
    std::unordered_set<std::int64_t> seen;
    for (std::size_t i = 0, n = list.arraySize(); i < n; ++i) {
      Entry& e = entry(list.at(i));
      if (free && e.kind == "computed")
        list.at(i).fail("a graph input must not be computed by an apply");
      if (free && !seen.insert(list.at(i).integer(0, kMaxId)).second)
        list.at(i).fail("the input is listed twice");
      out.push_back(e.var);
    }
    return out;
  }

  JsonCursor m_c;
  const OpRegistry& m_registry;
  const SiteTable& m_sites;
  TensorSource& m_tensors;
  int m_graph;  // 0: original, 1: optimized
  Entry& addEntry(Entry e) {
    Entry& added = m_entries.emplace_back(std::move(e));
    m_entryById.set(added.id, &added);
    return added;
  }

  // Ids index vectors (id_index.h): a file's ids are dense, and a hash map keyed by id cost a
  // cache miss per lookup on a 100k-node graph.
  IdIndex<const char> m_ids;    // every id the graph uses, variables and applies
  std::deque<Entry> m_entries;  // variables in the order first met (stable addresses)
  IdIndex<Entry> m_entryById;
  std::vector<NodeEntry> m_nodes;  // applies in file order
  std::unordered_map<std::string, OpPtr> m_opCache;
};

std::vector<RewriteRecord> readRewrites(const JsonCursor& c) {
  std::vector<RewriteRecord> out;
  auto ids = [](const JsonCursor& list) {
    std::vector<std::int64_t> v;
    for (std::size_t i = 0, n = list.arraySize(); i < n; ++i)
      v.push_back(list.at(i).integer(0, kMaxId));
    return v;
  };
  for (std::size_t i = 0, n = c.arraySize(); i < n; ++i) {
    JsonCursor r = c.at(i);
    RewriteRecord rec;
    rec.order = static_cast<std::size_t>(r.at("order").integer(0, kMaxId));
    rec.phase = r.at("phase").string();
    rec.reason = r.at("reason").string();
    JsonCursor replaced = r.at("replaced");
    for (std::size_t k = 0, m = replaced.arraySize(); k < m; ++k) {
      JsonCursor pair = replaced.at(k);
      if (pair.arraySize() != 2) pair.fail("expected a pair [old id, new id]");
      rec.replaced.emplace_back(pair.at(std::size_t{0}).integer(0, kMaxId),
                                pair.at(std::size_t{1}).integer(0, kMaxId));
    }
    if (auto owners = r.find("replaced_owners")) {
      if (owners->arraySize() != rec.replaced.size())
        owners->fail("expected one owner pair per replaced pair (" +
                     std::to_string(rec.replaced.size()) + ")");
      for (std::size_t k = 0, m = owners->arraySize(); k < m; ++k) {
        JsonCursor pair = owners->at(k);
        if (pair.arraySize() != 2) pair.fail("expected a pair [old owner id, new owner id]");
        rec.replacedOwners.emplace_back(pair.at(std::size_t{0}).integer(-1, kMaxId),
                                        pair.at(std::size_t{1}).integer(-1, kMaxId));
      }
    }
    rec.addedNodes = ids(r.at("added"));
    rec.removedNodes = ids(r.at("removed"));
    JsonCursor seconds = r.at("seconds");
    if (!seconds.value().is_number() || seconds.value().get<double>() < 0)
      seconds.fail("expected a duration in seconds (a number >= 0), found " + seconds.describe());
    rec.seconds = seconds.value().get<double>();
    out.push_back(std::move(rec));
  }
  return out;
}

// The deepest nesting of arrays and objects in a JSON text (strings skipped). Checked before
// parsing: the parser copes with any depth, but comparing or printing a value recurses.
std::size_t nestingDepth(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  bool inString = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (inString) {
      if (ch == '\\')
        ++i;
      else if (ch == '"')
        inString = false;
    } else if (ch == '"') {
      inString = true;
    } else if (ch == '[' || ch == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

constexpr std::size_t kMaxNesting = 64;

json parseJson(std::string_view text, const std::string& src) {
  if (std::size_t depth = nestingDepth(text); depth > kMaxNesting)
    throw TsgError(src, "/",
                   "the JSON nests " + std::to_string(depth) +
                       " levels deep; a .tsg file needs at most " + std::to_string(kMaxNesting));
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    // nlohmann's message: "[json.exception.parse_error.101] parse error at line 1, column 2: ...";
    // a number too large for a double is out_of_range.406 ("number overflow parsing '1e999'").
    std::string what = e.what();
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    throw TsgError(src, "/", "not valid JSON (" + what + ")");
  }
}

// Note [Whole or nothing]: the reader builds every object locally; only a fully checked document
// is returned. The graphs' nodes are adopted by their FunctionGraph only at the end of each graph.
TsgDocument readDocument(const json& root, const std::string& src, const OpRegistry& registry,
                         TensorSource& tensors) {
  JsonCursor::Fail fail = [&](const std::string& path, const std::string& message) {
    throw TsgError(src, path, message);
  };
  JsonCursor c(root, &fail);
  c.expectObject();
  std::string format = c.at("format").string();
  if (format != kTsgFormat)
    c.at("format").fail("expected \"" + std::string(kTsgFormat) + "\", found \"" + format +
                        "\" (not a Tensorscope graph file)");
  std::int64_t version = c.at("version").integer(1, 1'000'000);
  if (version > kTsgVersion)
    c.at("version").fail("the file has format version " + std::to_string(version) +
                         "; this Tensorscope reads up to version " + std::to_string(kTsgVersion) +
                         " (a newer Tensorscope wrote it)");
  if (tensors.section && version != 2)
    c.at("version").fail("expected 2 (the version in the file's header), found " +
                         std::to_string(version));
  if (!tensors.section && version != 1)
    c.at("version").fail(
        "the document says format version " + std::to_string(version) +
        ", but version-2 files begin with a binary header (the bytes 89 54 53 47 0d 0a 1a 0a) "
        "and this is JSON text only; expected version 1 for a JSON file");
  TsgDocument doc;
  if (auto p = c.find("producer")) {
    p->expectObject();
    doc.producer = p->value();
  }
  JsonCursor graphs = c.at("graphs");
  graphs.expectObject();
  SiteTable sites = readSiteTable(c);
  doc.original = GraphReader(graphs.at("original"), registry, sites, tensors, 0).read();
  if (auto opt = graphs.find("optimized"))
    doc.optimized = GraphReader(*opt, registry, sites, tensors, 1).read();
  for (const auto& [key, value] : graphs.value().items())
    if (key != "original" && key != "optimized")
      graphs.fail("expected only the graphs \"original\" and \"optimized\", found \"" + key + "\"");
  if (auto r = c.find("rewrites")) doc.rewrites = readRewrites(*r);
  if (auto p = c.find("profiles")) {
    p->arraySize();
    doc.profiles = p->value();
  }
  if (tensors.section) {
    doc.tensorStats = tensors.section->stats();
  } else {
    doc.tensorStats = tensors.inline_;
    doc.tensorStats.version = 1;
  }
  return doc;
}

TsgDocument readText(std::string_view text, const std::string& src, const OpRegistry& registry) {
  json root = parseJson(text, src);
  TensorSource tensors;
  return readDocument(root, src, registry, tensors);
}

// Note [Lazy tensors]: a version-2 document's tensors are Storages over `bytes` (the file's map):
// building the graphs reads the JSON only, and a weight's pages are read when a kernel or the
// inspector first touches them.
TsgDocument readBinary(const std::shared_ptr<TsgBytes>& bytes, const std::string& src,
                       const OpRegistry& registry) {
  const TsgHeader header = parseTsgHeader(bytes->view(), src);
  json root = parseJson(bytes->view().substr(header.jsonOffset, header.jsonLength), src);
  TensorSectionReader section(bytes, header);
  TensorSource tensors;
  tensors.section = &section;
  TsgDocument doc = readDocument(root, src, registry, tensors);
  bytes->closeFile();
  return doc;
}

}  // namespace

TsgDocument readTsg(std::string_view bytes, std::string_view source, const OpRegistry& registry) {
  const std::string src(source);
  if (looksLikeBinaryTsg(bytes)) return readBinary(TsgBytes::copy(bytes), src, registry);
  return readText(bytes, src, registry);
}

std::string_view tsgJson(std::string_view bytes, std::string_view source) {
  if (!looksLikeBinaryTsg(bytes)) return bytes;
  const TsgHeader h = parseTsgHeader(bytes, std::string(source));
  return bytes.substr(h.jsonOffset, h.jsonLength);
}

std::string withTsgJson(std::string_view bytes, std::string_view json) {
  if (!looksLikeBinaryTsg(bytes)) return std::string(json);
  const TsgHeader h = parseTsgHeader(bytes, "<memory>");
  return assembleTsg(json, bytes.substr(h.sectionOffset, h.sectionLength));
}

std::unique_ptr<FunctionGraph> graphFromJson(const json& value, const OpRegistry& registry,
                                             const std::string& source) {
  JsonCursor::Fail fail = [&](const std::string& path, const std::string& message) {
    throw TsgError(source, path.empty() ? "/" : path, message);
  };
  JsonCursor c(value, &fail);
  c.expectObject();
  SiteTable sites = readSiteTable(c);
  TensorSource tensors;
  return GraphReader(c, registry, sites, tensors, 0).read();
}

TsgDocument loadTsg(const std::filesystem::path& path, const OpRegistry& registry) {
  std::shared_ptr<TsgBytes> bytes = TsgBytes::map(path);
  if (looksLikeBinaryTsg(bytes->view())) return readBinary(bytes, path.string(), registry);
  return readText(bytes->view(), path.string(), registry);
}

}  // namespace tscope::engine::io
