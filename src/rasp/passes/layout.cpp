// Pass 6 of the weight compiler (passes.hpp): the residual stream. Dimensions 0 and 1 are
// "one" and "bos"; then a subspace per s-op the attention, an MLP or the output reads
// (one-hot per categorical value, one dimension per numerical s-op), a categorical copy
// after each numerical s-op read through one, a 1/(w+1) scratch dimension per count, and
// the joint features. The token, position and BOS embeddings are written here too,
// embedded s-ops and joints included.
#include <algorithm>

#include "rasp/passes/passes.hpp"

namespace lrnn::rasp::passes {

namespace {

class Layouter {
 public:
  explicit Layouter(Laid& l) : l_(l), m_(l.model) {}

  void run() {
    m_.dim_labels = {"one", "bos"};
    int d = 2;
    for (const Node* n : l_.order) {
      if (!l_.needed.count(n)) continue;
      Feature& f = l_.features.at(n);
      const bool undecoded = (is_count(l_, n) && !l_.decoded.count(n)) || l_.viewed.count(n) ||
                             ((n->kind == Kind::Tokens || n->kind == Kind::Indices) && !read_in_residual(n));
      f.width = f.constant || undecoded ? 0 : f.numerical ? 1 : static_cast<int>(f.values.size());
      f.offset = f.constant || undecoded ? -1 : d;
      f.space = m_.spaces.size();
      if (!undecoded) add_space(space_name(n), f.numerical, f.values, f.offset, f.width);
      d += f.width;
      if (auto copy = l_.shadows.find(n); copy != l_.shadows.end()) {
        Feature& c = copy->second;
        c.offset = d;
        c.width = static_cast<int>(c.values.size());
        c.space = m_.spaces.size();
        add_space(m_.spaces[f.space].name + ":categorical", false, c.values, d, c.width);
        d += c.width;
      }
      if (width_based(l_, n) && !f.constant) {
        Feature scratch;
        scratch.node = n;
        scratch.numerical = true;
        for (const auto& [k, row] : l_.width_tables.at(n).rows) scratch.values.push_back(row.first[0]);
        std::sort(scratch.values.begin(), scratch.values.end(),
                  [](const Value& a, const Value& b) { return to_double(a) < to_double(b); });
        scratch.offset = d;
        scratch.width = 1;
        scratch.ready = l_.attention_at.at(n);
        scratch.space = m_.spaces.size();
        add_space((undecoded ? space_name(n) : m_.spaces[f.space].name) + ":1/(width+1)", true, scratch.values, d, 1);
        d += 1;
        l_.scratch[n] = scratch;
      }
    }
    for (auto& [sops, j] : l_.joints) {  // joint features: their own subspaces, named by their s-ops
      j.feature.offset = d;
      j.feature.width = static_cast<int>(j.tuples.size());
      j.feature.space = m_.spaces.size();
      add_space(space_name(nullptr, joint_name(j)), false, j.feature.values, d, j.feature.width);
      d += j.feature.width;
    }
    m_.d_model = d;
    embed_all();
  }

 private:
  void add_space(const std::string& name, bool numerical, const std::vector<Value>& values, int offset, int width) {
    m_.spaces.push_back(ResidualSpace{name, numerical, values, offset, width});
    for (int i = 0; i < width; ++i)
      m_.dim_labels.push_back(numerical ? name : name + "=" + to_string(values[i]));
  }

  std::string space_name(const Node* n, std::string name = {}) {
    if (n) name = n->description();
    if (used_names_.insert(name).second) return name;
    for (int k = 2;; ++k)
      if (used_names_.insert(name + " (" + std::to_string(k) + ")").second) return name + " (" + std::to_string(k) + ")";
  }

  // Whether an s-op is read from the residual stream (by attention, the output or an MLP),
  // not only by embedded s-ops.
  bool read_in_residual(const Node* n) {
    if (n->kind == Kind::Tokens || n->kind == Kind::Indices)
      for (const Node* v : l_.viewed)
        if (l_.tables.at(v).inputs[0] == n) return true;
    return l_.read_directly.count(n) || read_by_lookup(l_, n);
  }

  void embed_all() {
    const int d = m_.d_model;
    const std::vector<Value>& vocab = l_.vocab;
    m_.token_embedding.assign(vocab.size() * d, 0.0);
    m_.position_embedding.assign(static_cast<size_t>(l_.max_len) * d, 0.0);
    m_.bos_embedding.assign(d, 0.0);
    m_.bos_embedding[0] = m_.bos_embedding[1] = 1.0;
    for (size_t v = 0; v < vocab.size(); ++v) m_.token_embedding[v * d] = 1.0;  // "one"
    // tokens and indices (and their annotated copies) are embedded
    for (const auto& [n, f] : l_.features) {
      if (f.offset < 0) continue;  // read only by embedded s-ops
      if (n->kind == Kind::Tokens)
        for (size_t v = 0; v < vocab.size(); ++v) {
          double* row = m_.token_embedding.data() + v * d;
          if (f.numerical) row[f.offset] = to_double(vocab[v]);
          else row[f.offset + v] = 1.0;
        }
      if (n->kind == Kind::Indices)
        for (int i = 0; i < l_.max_len; ++i) {
          double* row = m_.position_embedding.data() + static_cast<size_t>(i) * d;
          if (f.numerical) row[f.offset] = i;
          else row[f.offset + i] = 1.0;
        }
    }
    for (const auto& [n, by] : l_.embedded)
      if (!l_.viewed.count(n)) embed(n, by);
    for (const auto& [sops, j] : l_.joints)
      if (j.embedded != Kind::Constant) embed_joint(j);
  }

  // Writes an embedded s-op's value for every token (position) into the embedding.
  void embed(const Node* n, Kind by) {
    const Feature& f = l_.features.at(n);
    const Table& t = l_.tables.at(n);
    const int d = m_.d_model;
    const size_t count = by == Kind::Tokens ? l_.vocab.size() : static_cast<size_t>(l_.max_len);
    for (size_t i = 0; i < count; ++i) {
      Value x = by == Kind::Tokens ? canon(l_.vocab[i]) : Value(static_cast<int64_t>(i));
      std::vector<Value> tuple(t.inputs.size(), x);
      auto row = t.rows.find(tuple_key(tuple));
      if (row == t.rows.end()) continue;  // a position no input reaches
      std::vector<double> v = encode(f, row->second.second, d);
      double* out = (by == Kind::Tokens ? m_.token_embedding.data() : m_.position_embedding.data()) + i * d;
      for (int j = 0; j < d; ++j) out[j] += v[j];
    }
  }

  // Writes a joint feature computed from the tokens (positions) alone into the embedding.
  void embed_joint(const Joint& j) {
    const int d = m_.d_model;
    const bool by_tokens = j.embedded == Kind::Tokens;
    const size_t count = by_tokens ? l_.vocab.size() : static_cast<size_t>(l_.max_len);
    for (size_t i = 0; i < count; ++i) {
      Value x = by_tokens ? canon(l_.vocab[i]) : Value(static_cast<int64_t>(i));
      auto row = j.table.rows.find(tuple_key(std::vector<Value>(j.table.inputs.size(), x)));
      if (row == j.table.rows.end()) continue;  // a position no input reaches
      double* out = (by_tokens ? m_.token_embedding.data() : m_.position_embedding.data()) + i * d;
      out[dim_of(j.feature, row->second.second)] += 1.0;
    }
  }

  Laid& l_;
  CompiledModel& m_;
  std::set<std::string> used_names_;
};

}  // namespace

Laid layout(Scheduled scheduled) {
  Laid l(std::move(scheduled));
  Layouter(l).run();
  return l;
}

}  // namespace lrnn::rasp::passes
