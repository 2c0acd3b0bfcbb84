// The RASP weight compiler: a program becomes the weights of a transformer whose forward
// pass (compiled_model.cpp) reproduces the interpreter on every input up to max_len.
//
// How (docs/rasp.md, "Weight compiler"):
// - compile runs the interpreter on every input over the vocabulary up to max_len. That
//   gives the exact value set of every s-op, how many keys each selector picks, and for
//   every element-wise s-op the table from its inputs' values to its value. Nothing is
//   guessed, so nothing is silently wrong; what the construction cannot express exactly is
//   refused naming the s-op.
// - The residual stream has "one" and "bos" directions and a subspace per s-op the
//   attention reads or the program outputs (one-hot per categorical value, one dimension per
//   numerical s-op). Element-wise operations are not materialised one by one: each needed
//   element-wise s-op is one MLP lookup over the attention outputs and inputs it depends on
//   (so chains of maps cost one MLP, not one layer each).
// - Attention: a head per aggregate, scores a bilinear form over one-hot subspaces (beta
//   for a selected pair), the BOS position scored in between, so nothing selected falls
//   back to BOS, whose value is the default. selector_width (and `length`, and sums of a
//   constant) attend BOS as strongly as a selected key and decode 1/(w+1) with an MLP.
// - The BOS position's residual is known at compile time (it attends only itself and the
//   MLPs are switched off there), so every head corrects its BOS key score and value to be
//   exactly what the construction needs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "lrnn/rasp.hpp"

namespace lrnn::rasp {

size_t compiled_input_count(size_t vocab, int max_len);
std::vector<Value> compiled_input(const std::vector<Value>& vocab, int max_len, size_t k);

namespace {

// Score of a selected pair: the softmax weight of a pair scored beta/2 lower is e^-50.
constexpr double kBeta = 100.0;

// The widest joint feature built (its head's score matrix is d_model squared).
constexpr size_t kMaxJointWidth = 4096;

[[noreturn]] void refuse(const Node* n, const std::string& why) {
  throw Error(ErrorKind::Semantic, "cannot compile " + n->description() + ": " + why);
}

bool elementwise(Kind k) {
  return k == Kind::Map || k == Kind::ZipMap || k == Kind::Unary || k == Kind::Binary || k == Kind::Where;
}

// Doubles rounded to 12 significant digits, so that 1/3 reached by different sums is one
// value of a set and one row of a table.
Value canon(const Value& v) {
  if (auto* d = std::get_if<double>(&v)) {
    if (!std::isfinite(*d)) return v;
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.12g", *d);
    return std::strtod(buf, nullptr);
  }
  return v;
}

std::string key_of(const Value& v) { return type_name(v) + ":" + repr(v); }

struct ValueSet {
  std::vector<Value> values;
  std::unordered_set<std::string> keys;
  void add(const Value& v) {
    if (keys.insert(key_of(v)).second) values.push_back(v);
  }
};

std::string tuple_key(const std::vector<Value>& t) {
  std::string k;
  for (const auto& v : t) k += key_of(v) + "\x1f";
  return k;
}

// A key under which numbers that compare equal (1, 1.0, True) are one: selectors compare
// them alike, so a joint feature gives them one dimension.
std::string number_key(const Value& v) {
  if (!is_number(v)) return key_of(v);
  char buf[40];
  std::snprintf(buf, sizeof buf, "n:%.12g", to_double(v));
  return buf;
}

std::string number_tuple_key(const std::vector<Value>& t) {
  std::string k;
  for (const auto& v : t) k += number_key(v) + "\x1f";
  return k;
}

// A lookup an MLP computes: input tuple -> value, as observed.
struct Table {
  std::vector<const Node*> inputs;  // features (a width's scratch is its own node's input)
  std::map<std::string, std::pair<std::vector<Value>, Value>> rows;
};

// What the attention of an aggregate / width / length saw over all inputs.
struct HeadStats {
  size_t max_selected = 0;
  bool some_empty = false;
  std::string causal_violation;
};


struct Feature {
  const Node* node = nullptr;
  bool constant = false;
  bool numerical = false;
  std::vector<Value> values;
  int offset = -1;
  int width = 0;
  int ready = 0;  // sublayer after which it is in the residual (attention 2l-1, MLP 2l)
  size_t space = 0;
};

// One summand of a head's score: table[query value][key value] over two categorical
// features (null: the "one" direction, i.e. a constant).
struct ScoreTerm {
  const Feature* query = nullptr;
  const Feature* key = nullptr;
  std::vector<std::vector<uint8_t>> table;
};

// A joint categorical feature: one dimension per tuple of the values of several s-ops
// (`components`) that occurs at some position of some input. An `or`/`not` of selectors
// over different s-ops is a table over the query's and the key's joint values, which a
// bilinear score expresses exactly (a sum of per-pair tables cannot). It is a lookup
// (an MLP, or the token / position embedding) over `table.inputs`: the non-element-wise
// s-ops the components are computed from, or the components themselves when those would
// need two numerical inputs in one MLP.
struct Joint {
  std::vector<const Node*> components;  // by id; constants excluded
  const Node* selector = nullptr;       // the first selector reading it (for messages)
  Table table;                          // inputs' values -> the tuple's label
  std::vector<std::vector<Value>> tuples;  // per dimension: the components' values
  std::unordered_map<std::string, size_t> index;  // tuple_key(tuple) -> dimension
  Feature feature;
  Kind embedded = Kind::Constant;  // Tokens / Indices: part of that embedding, no MLP
};

class Compiler {
 public:
  Compiler(const SOp& output, std::vector<Value> vocab, int max_len, const CompileOptions& options)
      : output_(output), vocab_(std::move(vocab)), max_len_(max_len), options_(options) {
    if (options_.convention == Convention::Default) options_.convention = Convention::Sum;
  }

  CompiledModel run() {
    const Node* root = output_.node().get();
    order_ = topological_order(output_.node());
    // An element-wise s-op is one MLP over the attention outputs it depends on, unless
    // that MLP would need two numerical inputs non-linearly: then its element-wise
    // children get their own MLPs (an earlier layer) and everything is observed again.
    while (true) {
      need(root);
      read_directly_.insert(root);
      enumerate();
      choose_encodings();
      if (!split_lookups()) break;
      needed_.clear();
      frontier_.clear();
      values_.clear();
      tables_.clear();
      width_tables_.clear();
      stats_.clear();
      features_.clear();
      read_directly_.clear();
      joints_.clear();
    }
    choose_count_readers();
    choose_embedded();
    choose_viewed();
    schedule();
    CompiledModel model;
    model.program = output_;
    model.convention = options_.convention;
    model.vocab = vocab_;
    model.max_len = max_len_;
    model.causal = options_.causal;
    model.analyzed_layers = analyze(output_).layers;
    layout(model);
    build_layers(model);
    model.output_space = features_.at(root).space;
    return model;
  }

 private:
  // ---- which s-ops the transformer materialises ----------------------------------------

  // The non-element-wise s-ops an element-wise s-op is a function of (constants aside).
  const std::vector<const Node*>& frontier(const Node* n) {
    if (auto it = frontier_.find(n); it != frontier_.end()) return it->second;
    std::vector<const Node*> out;
    std::set<const Node*> seen;
    std::vector<const Node*> stack{n};
    while (!stack.empty()) {
      const Node* c = stack.back();
      stack.pop_back();
      if (!seen.insert(c).second) continue;
      if (c != n && (!elementwise(c->kind) || materialized_.count(c))) {
        if (c->kind != Kind::Constant) out.push_back(c);
        continue;
      }
      for (const auto& k : c->children) stack.push_back(k.get());
    }
    std::sort(out.begin(), out.end(), [](const Node* a, const Node* b) { return a->id < b->id; });
    return frontier_[n] = out;
  }

  void need(const Node* n) {
    if (!needed_.insert(n).second) return;
    switch (n->kind) {
      case Kind::Map: case Kind::ZipMap: case Kind::Unary: case Kind::Binary: case Kind::Where:
        for (const Node* f : frontier(n)) need(f);
        break;
      case Kind::Aggregate:
        need(n->children[1].get());
        read_directly_.insert(n->children[1].get());
        need_selector(n->children[0].get());
        break;
      case Kind::SelectorWidth: need_selector(n->children[0].get()); break;
      default: break;
    }
  }

  void need_selector(const Node* s) {
    if (s->kind == Kind::Select) {
      if (s->predicate == Predicate::True || s->predicate == Predicate::False) return;
      need(s->children[0].get());
      need(s->children[1].get());
      read_directly_.insert(s->children[0].get());
      read_directly_.insert(s->children[1].get());
      return;
    }
    if (compared_pairs(s) > 1 && s->kind != Kind::SelectAnd) {  // one table over joint values
      need_side(s, 0);
      need_side(s, 1);
      return;
    }
    for (const auto& c : s->children) need_selector(c.get());
  }

  // One side (0: keys, 1: queries) of a selector compiled as one table: a single s-op is
  // read as it is, several through their joint feature.
  void need_side(const Node* sel, int side) {
    const std::vector<const Node*> sops = side_sops(sel, side);
    if (sops.size() <= 1) {
      for (const Node* c : sops) {
        need(c);
        read_directly_.insert(c);
      }
      return;
    }
    Joint& j = joints_[sops];
    if (j.components.empty()) {
      j.components = sops;
      j.selector = sel;
      j.feature.node = sel;
      j.feature.ready = -1;
      std::set<const Node*> inputs;
      const bool by_components = joint_by_components_.count(sops) > 0;
      for (const Node* c : sops) {
        if (by_components || !elementwise(c->kind)) inputs.insert(c);
        else for (const Node* f : frontier(c)) inputs.insert(f);
      }
      j.table.inputs.assign(inputs.begin(), inputs.end());
      std::sort(j.table.inputs.begin(), j.table.inputs.end(),
                [](const Node* a, const Node* b) { return a->id < b->id; });
    }
    for (const Node* in : j.table.inputs) need(in);
  }

  // ---- running every input ----------------------------------------------------------------

  void enumerate() {
    const size_t total = compiled_input_count(vocab_.size(), max_len_);
    if (total > options_.max_inputs)
      throw Error(ErrorKind::Semantic,
                  "cannot compile: " + (total == SIZE_MAX ? std::string("too many") : std::to_string(total)) +
                      " inputs over a vocabulary of " + std::to_string(vocab_.size()) + " up to length " +
                      std::to_string(max_len_) + " (the compiler runs every input to find exact value sets; the limit is " +
                      std::to_string(options_.max_inputs) + ": use a smaller vocabulary or max_len)");
    for (const Node* n : needed_) {
      if (elementwise(n->kind)) {
        Table& t = tables_[n];
        t.inputs = frontier(n);
      }
    }
    for (size_t k = 0; k < total; ++k) {
      std::vector<Value> in = compiled_input(vocab_, max_len_, k);
      Evaluation ev;
      try {
        ev = evaluate(output_, in, options_.convention);
      } catch (const Error& e) {
        std::string shown;
        for (size_t i = 0; i < in.size(); ++i) shown += (i ? ", " : "") + repr(in[i]);
        throw Error(ErrorKind::Semantic, "cannot compile: the program fails on the input [" + shown + "]: " + e.message());
      }
      observe(ev, in.size());
    }
  }

  void observe(const Evaluation& ev, size_t n) {
    for (auto& [sops, j] : joints_) observe_joint(j, ev, n);
    for (const Node* node : needed_) {
      const auto& vals = ev.values.at(node);
      ValueSet& set = values_[node];
      for (const auto& v : vals) set.add(canon(v));
      if (elementwise(node->kind)) {
        Table& t = tables_[node];
        for (size_t i = 0; i < n; ++i) {
          std::vector<Value> tuple;
          for (const Node* f : t.inputs) tuple.push_back(canon(ev.values.at(f)[i]));
          Value y = canon(vals[i]);
          auto [it, inserted] = t.rows.emplace(tuple_key(tuple), std::make_pair(tuple, y));
          if (!inserted && key_of(it->second.second) != key_of(y))
            refuse(node, "its value is not a function of its inputs' values (" + repr(it->second.second) + " and " +
                             repr(y) + " for the same inputs)");
        }
      }
      if (node->kind == Kind::Aggregate || node->kind == Kind::SelectorWidth || node->kind == Kind::Length) {
        HeadStats& st = stats_[node];
        Table& widths = width_tables_[node];
        for (size_t q = 0; q < n; ++q) {
          size_t selected = n;
          if (node->kind == Kind::Length && options_.causal && q + 1 < n && st.causal_violation.empty())
            st.causal_violation = "length attends every position";
          if (node->kind != Kind::Length) {
            const SelectorMatrix& m = ev.selectors.at(node->children[0].get());
            selected = 0;
            for (size_t k = 0; k < n; ++k) {
              if (!m[q][k]) continue;
              ++selected;
              if (k > q && options_.causal && st.causal_violation.empty())
                st.causal_violation = "query " + std::to_string(q) + " selects the later key " + std::to_string(k);
            }
          }
          st.max_selected = std::max(st.max_selected, selected);
          st.some_empty |= selected == 0;
          std::vector<Value> x{canon(Value(1.0 / static_cast<double>(selected + 1)))};
          widths.rows.emplace(tuple_key(x), std::make_pair(x, canon(vals[q])));
        }
      }
    }
  }

  // A joint's lookup rows as its MLP sees them: a numerical input and a categorical copy
  // hold 1 and 1.0 in one place, so rows differing only so are one row.
  Table joint_rows(const Joint& j, const std::vector<const Feature*>& inputs) {
    Table out;
    out.inputs = j.table.inputs;
    for (const auto& [k, given] : j.table.rows) {
      auto row = given;
      for (size_t i = 0; i < inputs.size(); ++i) {
        const Feature& in = *inputs[i];
        Value& v = row.first[i];
        if (in.numerical && !in.constant) v = canon(Value(to_double(v)));
        else if (shadows_.count(in.node) && &in == &shadows_.at(in.node)) v = in.values[dim_of(in, v) - in.offset];
      }
      auto [it, inserted] = out.rows.emplace(tuple_key(row.first), row);
      if (!inserted && key_of(it->second.second) != key_of(row.second))
        refuse(j.selector, "the values it compares differ (" + to_string(it->second.second) + ", " +
                               to_string(row.second) + ") for inputs the weights hold alike (numbers that compare equal)");
    }
    return out;
  }

  static std::string joint_name(const Joint& j) {
    std::string name;
    for (const Node* c : j.components) name += (name.empty() ? "" : ", ") + c->description();
    return "(" + name + ")";
  }

  // The tuples of the components' values that occur, and the lookup that computes them.
  void observe_joint(Joint& j, const Evaluation& ev, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      std::vector<Value> in, tuple;
      for (const Node* f : j.table.inputs) in.push_back(canon(ev.values.at(f)[i]));
      for (const Node* c : j.components) tuple.push_back(canon(ev.values.at(c)[i]));
      auto [at, added] = j.index.emplace(number_tuple_key(tuple), j.tuples.size());
      if (added && j.tuples.size() == kMaxJointWidth)
        refuse(j.selector, "it compares " + joint_name(j) + " jointly, which take more than " +
                               std::to_string(kMaxJointWidth) +
                               " different tuples of values (one dimension each); use a smaller vocabulary or max_len");
      if (added) {
        std::string label;
        for (const auto& v : tuple) label += (label.empty() ? "" : ", ") + repr(v);
        label = "(" + label + ")";
        for (const auto& other : j.feature.values)  // two tuples that print alike stay apart
          if (std::get<std::string>(other) == label) label += " #" + std::to_string(j.tuples.size());
        j.tuples.push_back(tuple);
        j.feature.values.emplace_back(label);
      }
      const Value& label = j.feature.values[at->second];
      auto [row, inserted] = j.table.rows.emplace(tuple_key(in), std::make_pair(in, label));
      if (!inserted && key_of(row->second.second) != key_of(label))
        refuse(j.selector, "the values it compares are not a function of the s-ops they are computed from");
    }
  }

  // ---- encodings ------------------------------------------------------------------------

  bool numbers_only(const std::vector<Value>& vals) {
    for (const auto& v : vals)
      if (!is_number(v)) return false;
    return true;
  }

  void choose_encodings() {
    for (const Node* n : order_) {
      if (!needed_.count(n)) continue;
      Feature f;
      f.node = n;
      f.values = values_.at(n).values;
      f.constant = n->kind == Kind::Constant || (elementwise(n->kind) && frontier(n).empty());
      if (n->kind == Kind::Tokens) f.values = vocab_;
      if (n->kind == Kind::Indices) {
        f.values.clear();
        for (int i = 0; i < max_len_; ++i) f.values.emplace_back(int64_t{i});
      }
      bool numerical = n->encoding == Encoding::Numerical;
      if (n->kind == Kind::Aggregate) {
        const HeadStats& st = stats_.at(n);
        const Feature& vals = features_.at(n->children[1].get());
        bool summed = st.max_selected >= 2;
        if (summed && n->encoding == Encoding::Categorical)
          refuse(n, "it is annotated categorical but a query selects " + std::to_string(st.max_selected) +
                        " keys (a categorical aggregate must select at most one)");
        numerical = numerical || summed || vals.numerical;
      }
      if (numerical && !f.constant) {
        for (const auto& v : f.values)
          if (!is_number(v))
            refuse(n, "it is numerical (one dimension) but takes the value " + repr(v) +
                          (is_none(v) ? " (a numerical s-op cannot be undefined: give a numeric default)" : ""));
      }
      f.numerical = numerical;
      features_[n] = f;
    }
  }

  // ---- element-wise s-ops over several numerical inputs ----------------------------------------

  std::vector<size_t> numerical_inputs(const std::vector<const Node*>& inputs) {
    std::vector<size_t> out;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Feature& f = features_.at(inputs[i]);
      if (f.numerical && !f.constant) out.push_back(i);
    }
    return out;
  }

  // y = a + sum_i w_i x_i over the rows of each combination of categorical inputs, exactly
  // (to 1e-9), or false. Fills linear_[n] with the coefficients per combination.
  bool fit_linear(const Node* n) {
    const Table& t = tables_.at(n);
    std::vector<size_t> nums = numerical_inputs(t.inputs);
    const size_t k = nums.size();
    std::map<std::string, std::vector<const std::pair<std::vector<Value>, Value>*>> groups;
    for (const auto& [key, row] : t.rows) {
      if (!is_number(row.second)) return false;
      std::vector<Value> cats;
      for (size_t i = 0; i < row.first.size(); ++i)
        if (std::find(nums.begin(), nums.end(), i) == nums.end()) cats.push_back(row.first[i]);
      groups[tuple_key(cats)].push_back(&row);
    }
    std::map<std::string, std::vector<double>> fitted;
    for (const auto& [g, rows] : groups) {
      // normal equations with a tiny ridge: (X^T X + eps I) c = X^T y, X = [1, x_1..x_k]
      const size_t m = k + 1;
      std::vector<std::vector<double>> a(m, std::vector<double>(m + 1, 0.0));
      for (const auto* row : rows) {
        std::vector<double> x{1.0};
        for (size_t i : nums) x.push_back(to_double(row->first[i]));
        const double y = to_double(row->second);
        for (size_t r = 0; r < m; ++r) {
          for (size_t c = 0; c < m; ++c) a[r][c] += x[r] * x[c];
          a[r][m] += x[r] * y;
        }
      }
      for (size_t r = 0; r < m; ++r) a[r][r] += 1e-12;
      for (size_t c = 0; c < m; ++c) {
        size_t pivot = c;
        for (size_t r = c + 1; r < m; ++r)
          if (std::fabs(a[r][c]) > std::fabs(a[pivot][c])) pivot = r;
        std::swap(a[c], a[pivot]);
        if (a[c][c] == 0) return false;
        for (size_t r = 0; r < m; ++r) {
          if (r == c) continue;
          const double f = a[r][c] / a[c][c];
          for (size_t j = c; j <= m; ++j) a[r][j] -= f * a[c][j];
        }
      }
      std::vector<double> coef(m);
      for (size_t r = 0; r < m; ++r) coef[r] = a[r][m] / a[r][r];
      for (size_t r = 0; r < m; ++r)  // integral coefficients stay integral
        if (std::fabs(coef[r] - std::nearbyint(coef[r])) < 1e-9) coef[r] = std::nearbyint(coef[r]);
      for (const auto* row : rows) {
        double y = coef[0];
        for (size_t i = 0; i < k; ++i) y += coef[i + 1] * to_double(row->first[nums[i]]);
        const double want = to_double(row->second);
        if (std::fabs(y - want) > 1e-9 * std::max(1.0, std::fabs(want))) return false;
      }
      fitted[g] = coef;
    }
    linear_[n] = fitted;
    return true;
  }

  // True when some element-wise s-op needed its children materialised (then everything is
  // observed again); refuses what no split makes compilable.
  bool split_lookups() {
    bool split = false;
    const std::set<const Node*> before = materialized_;  // what the frontiers were computed with
    shadowed_.clear();
    linear_.clear();
    joint_shadowed_.clear();
    for (const auto& [sops, j] : joints_) {
      const std::vector<size_t> nums = numerical_inputs(j.table.inputs);
      if (nums.size() < 2) continue;
      if (joint_by_components_.count(sops)) {
        // it reads several numerical components: all but the one with most values through
        // a categorical copy (as a lookup does)
        size_t keep = nums[0];
        for (size_t i : nums)
          if (features_.at(j.table.inputs[i]).values.size() > features_.at(j.table.inputs[keep]).values.size()) keep = i;
        for (size_t i : nums)
          if (i != keep) joint_shadowed_[sops].insert(j.table.inputs[i]);
        continue;
      }
      // one MLP discretises one numerical input: the element-wise s-ops inside the
      // components that read a numerical input get their own MLP (as for lookups), or,
      // when the components are those inputs, the joint reads the components
      std::set<const Node*> numeric_inputs;
      for (size_t i : nums) numeric_inputs.insert(j.table.inputs[i]);
      bool added = false;
      std::set<const Node*> seen;
      std::vector<const Node*> stack;
      for (const Node* c : sops)
        if (elementwise(c->kind) && !before.count(c)) stack.push_back(c);
      while (!stack.empty()) {
        const Node* x = stack.back();
        stack.pop_back();
        if (!seen.insert(x).second) continue;
        for (const auto& c : x->children) {
          if (numeric_inputs.count(c.get())) {
            materialized_.insert(x);
            added = true;
          }
          if (elementwise(c->kind) && !before.count(c.get())) stack.push_back(c.get());
        }
      }
      if (!added) joint_by_components_.insert(sops);
      split = true;
    }
    for (const Node* n : order_) {
      if (!needed_.count(n) || !elementwise(n->kind) || features_.at(n).constant) continue;
      const Table& t = tables_.at(n);
      std::vector<size_t> nums = numerical_inputs(t.inputs);
      if (nums.size() < 2) continue;
      if (features_.at(n).numerical && fit_linear(n)) continue;
      // the element-wise s-ops inside that read one of the numerical inputs get their own MLP
      std::set<const Node*> numeric_inputs;
      for (size_t i : nums) numeric_inputs.insert(t.inputs[i]);
      bool added = false;
      std::set<const Node*> seen;
      std::vector<const Node*> stack{n};
      while (!stack.empty()) {
        const Node* x = stack.back();
        stack.pop_back();
        if (!seen.insert(x).second) continue;
        for (const auto& c : x->children) {
          if (x != n && numeric_inputs.count(c.get())) {
            materialized_.insert(x);  // possibly already by another s-op of this pass
            added = true;
          }
          if (elementwise(c->kind) && !before.count(c.get())) stack.push_back(c.get());
        }
      }
      if (!added) {
        // it reads the numerical s-ops itself: all but the one with most values are read
        // through a categorical copy (one-hot, made by an MLP of an earlier layer)
        size_t keep = nums[0];
        for (size_t i : nums)
          if (features_.at(t.inputs[i]).values.size() > features_.at(t.inputs[keep]).values.size()) keep = i;
        for (size_t i : nums)
          if (i != keep) shadowed_[n].insert(t.inputs[i]);
        continue;
      }
      split = true;
    }
    return split;
  }

  // ---- counts read without decoding ---------------------------------------------------------

  // A count (selector_width, length, a sum of a constant) is 1/(w+1) after its head. An
  // element-wise s-op with no other numerical input reads that directly, in the MLP of the
  // same layer, instead of waiting a layer for the decoded count. The count is decoded
  // only for the attention and the output (or when a reader cannot take it directly).
  bool is_count(const Node* n) {
    return (n->kind == Kind::SelectorWidth || n->kind == Kind::Length || n->kind == Kind::Aggregate) &&
           !features_.at(n).constant && width_based(n);
  }

  // value -> 1/(w+1) of a count, or empty when two widths give one value.
  std::map<std::string, Value> count_inverse(const Node* n) {
    std::map<std::string, Value> inverse;
    for (const auto& [k, row] : width_tables_.at(n).rows) {
      auto [it, inserted] = inverse.emplace(key_of(row.second), row.first[0]);
      if (!inserted && key_of(it->second) != key_of(row.first[0])) return {};
    }
    return inverse;
  }

  void choose_count_readers() {
    decoded_.clear();
    direct_.clear();
    for (const Node* n : order_)
      if (needed_.count(n) && read_directly_.count(n) && is_count(n)) decoded_.insert(n);
    for (const Node* n : order_) {
      if (!needed_.count(n) || !elementwise(n->kind) || features_.at(n).constant) continue;
      const Table& t = tables_.at(n);
      size_t numeric = 0;
      std::vector<const Node*> counts;
      for (const Node* in : t.inputs) {
        if (is_count(in)) counts.push_back(in);
        else if (features_.at(in).numerical && !features_.at(in).constant) ++numeric;
      }
      bool direct = !counts.empty() && numeric + counts.size() <= 1 && !linear_.count(n) && !shadowed_.count(n);
      for (const Node* c : counts) direct = direct && !count_inverse(c).empty();
      if (direct) direct_.insert(n);
      else decoded_.insert(counts.begin(), counts.end());
    }
    for (const auto& [sops, j] : joints_)  // a joint's lookup reads counts decoded
      for (const Node* in : j.table.inputs)
        if (is_count(in)) decoded_.insert(in);
  }

  // An element-wise s-op of the tokens alone (or the indices alone) is part of the token
  // (position) embedding: no MLP, no layer.
  void choose_embedded() {
    embedded_.clear();
    for (const Node* n : order_) {
      if (!needed_.count(n) || !elementwise(n->kind) || features_.at(n).constant) continue;
      const auto& inputs = tables_.at(n).inputs;
      bool tokens_only = true, indices_only = true;
      for (const Node* in : inputs) {
        tokens_only &= in->kind == Kind::Tokens;
        indices_only &= in->kind == Kind::Indices;
      }
      if (tokens_only) embedded_[n] = Kind::Tokens;
      else if (indices_only) embedded_[n] = Kind::Indices;
    }
    for (auto& [sops, j] : joints_) {
      bool tokens_only = true, indices_only = true;
      for (const Node* in : j.table.inputs) {
        tokens_only &= in->kind == Kind::Tokens;
        indices_only &= in->kind == Kind::Indices;
      }
      j.embedded = tokens_only ? Kind::Tokens : indices_only ? Kind::Indices : Kind::Constant;
    }
  }

  // An embedded s-op read only by attention (as a selector's side or an aggregate's
  // values) needs no subspace: the head reads the token (position) one-hot it is a
  // function of, with the function folded into its score table or value map.
  // Done only where it saves width: the s-ops' subspaces against the one-hot they are read
  // through, when nothing else puts that one-hot in the residual.
  void choose_viewed() {
    viewed_.clear();
    const Node* root = output_.node().get();
    std::map<const Node*, std::vector<const Node*>> by_input;
    for (const auto& [n, by] : embedded_) {
      const Table& t = tables_.at(n);
      if (n == root || t.inputs.size() != 1 || features_.at(t.inputs[0]).numerical) continue;
      if (read_by_lookup(n)) continue;
      bool every_value = true;  // a row for every token (position): the view is total
      for (const Value& e : features_.at(t.inputs[0]).values)
        every_value &= t.rows.count(tuple_key({canon(e)})) > 0;
      if (every_value) by_input[t.inputs[0]].push_back(n);
    }
    for (const auto& [input, sops] : by_input) {
      size_t saved = 0;
      for (const Node* n : sops) saved += features_.at(n).numerical ? 1 : features_.at(n).values.size();
      const bool in_residual = read_directly_.count(input) || read_by_lookup(input);
      if (saved > (in_residual ? 0 : features_.at(input).values.size())) viewed_.insert(sops.begin(), sops.end());
    }
  }

  // Whether a non-embedded element-wise s-op or joint feature reads `n` from the residual.
  bool read_by_lookup(const Node* n) {
    for (const Node* e : order_)
      if (needed_.count(e) && elementwise(e->kind) && !embedded_.count(e) && !features_.at(e).constant) {
        const auto& inputs = tables_.at(e).inputs;
        if (std::find(inputs.begin(), inputs.end(), n) != inputs.end()) return true;
      }
    for (const auto& [sops, j] : joints_)
      if (j.embedded == Kind::Constant &&
          std::find(j.table.inputs.begin(), j.table.inputs.end(), n) != j.table.inputs.end())
        return true;
    return false;
  }

  // A viewed s-op's values per dimension of the one-hot it is read through.
  std::pair<const Feature*, std::vector<Value>> view_of(const Node* n) {
    const Table& t = tables_.at(n);
    const Feature* in = &features_.at(t.inputs[0]);
    std::vector<Value> values;
    for (const Value& e : in->values) values.push_back(t.rows.at(tuple_key({canon(e)})).second);
    return {in, values};
  }

  // Whether an s-op is read from the residual stream (by attention, the output or an MLP),
  // not only by embedded s-ops.
  bool read_in_residual(const Node* n) {
    if (n->kind == Kind::Tokens || n->kind == Kind::Indices)
      for (const Node* v : viewed_)
        if (tables_.at(v).inputs[0] == n) return true;
    return read_directly_.count(n) || read_by_lookup(n);
  }

  // Writes an embedded s-op's value for every token (position) into the embedding.
  void embed(CompiledModel& m, const Node* n, Kind by) {
    const Feature& f = features_.at(n);
    const Table& t = tables_.at(n);
    const int d = m.d_model;
    const size_t count = by == Kind::Tokens ? vocab_.size() : static_cast<size_t>(max_len_);
    for (size_t i = 0; i < count; ++i) {
      Value x = by == Kind::Tokens ? canon(vocab_[i]) : Value(static_cast<int64_t>(i));
      std::vector<Value> tuple(t.inputs.size(), x);
      auto row = t.rows.find(tuple_key(tuple));
      if (row == t.rows.end()) continue;  // a position no input reaches
      std::vector<double> v = encode(f, row->second.second, d);
      double* out = (by == Kind::Tokens ? m.token_embedding.data() : m.position_embedding.data()) + i * d;
      for (int j = 0; j < d; ++j) out[j] += v[j];
    }
  }

  // Writes a joint feature computed from the tokens (positions) alone into the embedding.
  void embed_joint(CompiledModel& m, const Joint& j) {
    const int d = m.d_model;
    const bool by_tokens = j.embedded == Kind::Tokens;
    const size_t count = by_tokens ? vocab_.size() : static_cast<size_t>(max_len_);
    for (size_t i = 0; i < count; ++i) {
      Value x = by_tokens ? canon(vocab_[i]) : Value(static_cast<int64_t>(i));
      auto row = j.table.rows.find(tuple_key(std::vector<Value>(j.table.inputs.size(), x)));
      if (row == j.table.rows.end()) continue;  // a position no input reaches
      double* out = (by_tokens ? m.token_embedding.data() : m.position_embedding.data()) + i * d;
      out[dim_of(j.feature, row->second.second)] += 1.0;
    }
  }

  // The inputs and rows an element-wise lookup reads: counts as 1/(w+1) when read directly.
  std::pair<std::vector<const Feature*>, Table> lookup_inputs(const Node* n) {
    const Table& t = tables_.at(n);
    std::vector<const Feature*> inputs;
    if (!direct_.count(n)) {
      auto sh = shadowed_.find(n);
      for (const Node* in : t.inputs)
        inputs.push_back(sh != shadowed_.end() && sh->second.count(in) ? &shadows_.at(in) : &features_.at(in));
      return {inputs, t};
    }
    Table mapped;
    mapped.inputs = t.inputs;
    std::vector<std::map<std::string, Value>> inverse;
    for (const Node* in : t.inputs) {
      inputs.push_back(is_count(in) ? &scratch_.at(in) : &features_.at(in));
      inverse.push_back(is_count(in) ? count_inverse(in) : std::map<std::string, Value>{});
    }
    for (const auto& [k, row] : t.rows) {
      std::vector<Value> x = row.first;
      for (size_t i = 0; i < x.size(); ++i)
        if (!inverse[i].empty()) x[i] = inverse[i].at(key_of(x[i]));
      mapped.rows.emplace(tuple_key(x), std::make_pair(x, row.second));
    }
    return {inputs, mapped};
  }

  // ---- selectors as score terms -----------------------------------------------------------

  static void leaves(const Node* s, std::vector<const Node*>& out) {
    if (s->kind == Kind::Select) out.push_back(s);
    else for (const auto& c : s->children) leaves(c.get(), out);
  }

  // The s-ops a selector's leaves compare on one side (0: keys, 1: queries), by id;
  // constants and always-true/false leaves aside.
  static std::vector<const Node*> side_sops(const Node* sel, int side) {
    std::vector<const Node*> ls, out;
    leaves(sel, ls);
    for (const Node* l : ls) {
      if (l->predicate == Predicate::True || l->predicate == Predicate::False) continue;
      const Node* c = l->children[side].get();
      if (c->kind != Kind::Constant && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    }
    std::sort(out.begin(), out.end(), [](const Node* a, const Node* b) { return a->id < b->id; });
    return out;
  }

  // How many different (keys, queries) pairs of s-ops a selector's leaves compare.
  static size_t compared_pairs(const Node* sel) {
    std::vector<const Node*> ls;
    leaves(sel, ls);
    std::set<std::pair<const Node*, const Node*>> pairs;
    for (const Node* l : ls)
      if (l->predicate != Predicate::True && l->predicate != Predicate::False)
        pairs.emplace(l->children[0].get(), l->children[1].get());
    return pairs.size();
  }

  // One side of a score table: the feature it reads (null: constants only, read from
  // "one") and, per dimension of it, the values of the s-ops compared on that side.
  struct Side {
    const Feature* feature = nullptr;
    std::vector<const Node*> sops;
    std::vector<std::vector<Value>> values;
  };

  static Value side_value(const Side& side, const std::vector<Value>& values, const Node* sop) {
    for (size_t i = 0; i < side.sops.size(); ++i)
      if (side.sops[i] == sop) return values[i];
    return canon(sop->constant);  // a constant
  }

  static bool formula(const Node* s, const Side& q, const std::vector<Value>& qv, const Side& k,
                      const std::vector<Value>& kv) {
    switch (s->kind) {
      case Kind::Select:
        if (s->predicate == Predicate::True || s->predicate == Predicate::False)
          return apply_predicate(s->predicate, Value{}, Value{});
        return apply_predicate(s->predicate, side_value(k, kv, s->children[0].get()),
                               side_value(q, qv, s->children[1].get()));
      case Kind::SelectAnd: return formula(s->children[0].get(), q, qv, k, kv) && formula(s->children[1].get(), q, qv, k, kv);
      case Kind::SelectOr: return formula(s->children[0].get(), q, qv, k, kv) || formula(s->children[1].get(), q, qv, k, kv);
      case Kind::SelectNot: return !formula(s->children[0].get(), q, qv, k, kv);
      default: return false;
    }
  }

  // The categorical feature a selector compares (null: a constant, read from "one").
  const Feature* compared(const Node* sel, const Node* sop, const char* role) {
    const Feature& f = features_.at(sop);
    if (f.constant) return nullptr;
    if (f.numerical)
      refuse(sel, std::string("its ") + role + " " + sop->description() + " is numerical (" + why_numerical(sop) +
                      "); selectors compare categorical s-ops");
    return &f;
  }

  // Why an s-op is numerical, for a refusal: the user's annotation, or what made it so.
  std::string why_numerical(const Node* sop) const {
    if (sop->encoding == Encoding::Numerical) return "annotated numerical: drop the annotation";
    if (sop->kind == Kind::Aggregate) {
      const HeadStats& st = stats_.at(sop);
      if (st.max_selected >= 2)
        return "an aggregate whose queries select up to " + std::to_string(st.max_selected) +
               " keys averages them; make it select one key per query, or map it to categories";
      return "it aggregates the numerical " + sop->children[1]->description();
    }
    return "its values are numbers computed from a numerical s-op";
  }

  Side side_of(const Node* sel, int side) {
    Side out;
    out.sops = side_sops(sel, side);
    if (out.sops.size() >= 2) {
      Joint& j = joints_.at(out.sops);
      if (j.feature.ready < 0) {  // first asked by schedule(), once its inputs are scheduled
        int ready = 0;
        const auto sh = joint_shadowed_.find(out.sops);
        for (const Node* in : j.table.inputs)
          ready = std::max(ready, sh != joint_shadowed_.end() && sh->second.count(in) ? shadow(in).ready
                                                                                      : features_.at(in).ready);
        j.feature.ready = j.embedded != Kind::Constant ? 0 : next_mlp(ready);
      }
      out.feature = &j.feature;
      out.values = j.tuples;
    } else if (out.sops.size() == 1) {
      out.feature = compared(sel, out.sops[0], side == 0 ? "keys" : "queries");
      if (viewed_.count(out.sops[0])) {
        auto [in, values] = view_of(out.sops[0]);
        out.feature = in;
        for (const auto& v : values) out.values.push_back({v});
      } else {
        for (const auto& v : features_.at(out.sops[0]).values) out.values.push_back({v});
      }
    } else {
      out.values.emplace_back();  // constants only: one row, the values not looked at
    }
    return out;
  }

  // One score term: the selector's table over its query side's and key side's values.
  ScoreTerm term(const Node* sel) {
    const Side q = side_of(sel, 1), k = side_of(sel, 0);
    ScoreTerm t;
    t.query = q.feature;
    t.key = k.feature;
    t.table.assign(q.values.size(), std::vector<uint8_t>(k.values.size()));
    for (size_t a = 0; a < q.values.size(); ++a)
      for (size_t b = 0; b < k.values.size(); ++b) t.table[a][b] = formula(sel, q, q.values[a], k, k.values[b]);
    return t;
  }

  // The summands of a selector's score: an `and` of parts sums a table per part (the
  // cheap case: each part's own s-ops); anything else over several pairs of s-ops is one
  // table over joint values.
  std::vector<ScoreTerm> score_terms(const Node* sel) {
    if (compared_pairs(sel) <= 1 || sel->kind != Kind::SelectAnd) return {term(sel)};
    std::vector<ScoreTerm> out = score_terms(sel->children[0].get());
    for (auto& t : score_terms(sel->children[1].get())) out.push_back(std::move(t));
    return out;
  }

  // ---- layers -----------------------------------------------------------------------------

  static int next_attention(int ready) { return ready % 2 == 0 ? ready + 1 : ready + 2; }
  static int next_mlp(int ready) { return ready % 2 == 0 ? ready + 2 : ready + 1; }

  // Sums of several selected values compile as a width times a constant.
  bool width_based(const Node* n) {
    if (n->kind == Kind::SelectorWidth || n->kind == Kind::Length) return true;
    if (n->kind != Kind::Aggregate) return false;
    Convention conv = n->convention == Convention::Default ? options_.convention : n->convention;
    if (conv != Convention::Sum || stats_.at(n).max_selected < 2) return false;
    const Feature& v = features_.at(n->children[1].get());
    if (v.values.size() != 1 || !is_number(v.values[0]))
      refuse(n, "it sums several selected values that are not one constant; a head averages, so sums compile "
                "only as a constant times selector_width (use convention mean, or sum a constant)");
    return true;
  }

  // The categorical copy of a numerical s-op (one-hot over the numbers it takes), made by
  // the MLP after it.
  const Feature& shadow(const Node* in) {
    Feature& copy = shadows_[in];
    copy.node = in;
    copy.values.clear();
    for (const auto& v : features_.at(in).values) {
      bool seen = false;
      for (const auto& c : copy.values) seen |= values_equal(c, v);
      if (!seen) copy.values.push_back(v);
    }
    copy.ready = next_mlp(features_.at(in).ready);
    return copy;
  }

  void schedule() {
    shadows_.clear();
    for (const Node* n : order_) {
      if (!needed_.count(n)) continue;
      Feature& f = features_.at(n);
      if (f.constant || n->kind == Kind::Tokens || n->kind == Kind::Indices) {
        f.ready = 0;
        continue;
      }
      if (embedded_.count(n)) {
        f.ready = 0;
        continue;
      }
      if (elementwise(n->kind)) {
        int ready = 0;
        auto sh = shadowed_.find(n);
        for (const Node* in : frontier(n)) {
          int at = direct_.count(n) && is_count(in) ? attention_at_.at(in) : features_.at(in).ready;
          if (sh != shadowed_.end() && sh->second.count(in)) at = shadow(in).ready;
          ready = std::max(ready, at);
        }
        f.ready = next_mlp(ready);
        continue;
      }
      int ready = 0;
      if (n->kind == Kind::Aggregate) ready = features_.at(n->children[1].get()).ready;
      if (n->kind != Kind::Length) {
        const Node* sel = n->children[0].get();
        for (const ScoreTerm& t : score_terms(sel)) {
          if (t.query) ready = std::max(ready, t.query->ready);
          if (t.key) ready = std::max(ready, t.key->ready);
        }
      }
      if (options_.causal && !stats_.at(n).causal_violation.empty())
        refuse(n, "causal attention sees only earlier positions, but " + stats_.at(n).causal_violation);
      attention_at_[n] = next_attention(ready);
      f.ready = attention_at_[n] + (width_based(n) ? 1 : 0);
    }
  }

  // ---- the residual stream ----------------------------------------------------------------

  void add_space(CompiledModel& m, const std::string& name, bool numerical, const std::vector<Value>& values,
                 int offset, int width) {
    m.spaces.push_back(ResidualSpace{name, numerical, values, offset, width});
    for (int i = 0; i < width; ++i)
      m.dim_labels.push_back(numerical ? name : name + "=" + to_string(values[i]));
  }

  std::string space_name(const Node* n, std::string name = {}) {
    if (n) name = n->description();
    if (used_names_.insert(name).second) return name;
    for (int k = 2;; ++k)
      if (used_names_.insert(name + " (" + std::to_string(k) + ")").second) return name + " (" + std::to_string(k) + ")";
  }

  void layout(CompiledModel& m) {
    m.dim_labels = {"one", "bos"};
    int d = 2;
    for (const Node* n : order_) {
      if (!needed_.count(n)) continue;
      Feature& f = features_.at(n);
      const bool undecoded = (is_count(n) && !decoded_.count(n)) || viewed_.count(n) ||
                             ((n->kind == Kind::Tokens || n->kind == Kind::Indices) && !read_in_residual(n));
      f.width = f.constant || undecoded ? 0 : f.numerical ? 1 : static_cast<int>(f.values.size());
      f.offset = f.constant || undecoded ? -1 : d;
      f.space = m.spaces.size();
      if (!undecoded) add_space(m, space_name(n), f.numerical, f.values, f.offset, f.width);
      d += f.width;
      if (auto copy = shadows_.find(n); copy != shadows_.end()) {
        Feature& c = copy->second;
        c.offset = d;
        c.width = static_cast<int>(c.values.size());
        c.space = m.spaces.size();
        add_space(m, m.spaces[f.space].name + ":categorical", false, c.values, d, c.width);
        d += c.width;
      }
      if (width_based(n) && !f.constant) {
        Feature scratch;
        scratch.node = n;
        scratch.numerical = true;
        for (const auto& [k, row] : width_tables_.at(n).rows) scratch.values.push_back(row.first[0]);
        std::sort(scratch.values.begin(), scratch.values.end(),
                  [](const Value& a, const Value& b) { return to_double(a) < to_double(b); });
        scratch.offset = d;
        scratch.width = 1;
        scratch.ready = attention_at_.at(n);
        scratch.space = m.spaces.size();
        add_space(m, (undecoded ? space_name(n) : m.spaces[f.space].name) + ":1/(width+1)", true, scratch.values, d, 1);
        d += 1;
        scratch_[n] = scratch;
      }
    }
    for (auto& [sops, j] : joints_) {  // joint features: their own subspaces, named by their s-ops
      j.feature.offset = d;
      j.feature.width = static_cast<int>(j.tuples.size());
      j.feature.space = m.spaces.size();
      add_space(m, space_name(nullptr, joint_name(j)), false, j.feature.values, d, j.feature.width);
      d += j.feature.width;
    }
    m.d_model = d;
    m.token_embedding.assign(vocab_.size() * d, 0.0);
    m.position_embedding.assign(static_cast<size_t>(max_len_) * d, 0.0);
    m.bos_embedding.assign(d, 0.0);
    m.bos_embedding[0] = m.bos_embedding[1] = 1.0;
    for (size_t v = 0; v < vocab_.size(); ++v) m.token_embedding[v * d] = 1.0;  // "one"
    // tokens and indices (and their annotated copies) are embedded
    for (const auto& [n, f] : features_) {
      if (f.offset < 0) continue;  // read only by embedded s-ops
      if (n->kind == Kind::Tokens)
        for (size_t v = 0; v < vocab_.size(); ++v) {
          double* row = m.token_embedding.data() + v * d;
          if (f.numerical) row[f.offset] = to_double(vocab_[v]);
          else row[f.offset + v] = 1.0;
        }
      if (n->kind == Kind::Indices)
        for (int i = 0; i < max_len_; ++i) {
          double* row = m.position_embedding.data() + static_cast<size_t>(i) * d;
          if (f.numerical) row[f.offset] = i;
          else row[f.offset + i] = 1.0;
        }
    }
    for (const auto& [n, by] : embedded_)
      if (!viewed_.count(n)) embed(m, n, by);
    for (const auto& [sops, j] : joints_)
      if (j.embedded != Kind::Constant) embed_joint(m, j);
  }

  // ---- reading and writing the residual -----------------------------------------------------

  // The dimension holding `value` of a categorical feature ("one" for a constant).
  int dim_of(const Feature& f, const Value& value) {
    if (f.constant) return 0;
    for (size_t i = 0; i < f.values.size(); ++i)
      if (key_of(f.values[i]) == key_of(canon(value))) return f.offset + static_cast<int>(i);
    // a categorical copy of a numerical s-op has one dimension per number (2 and 2.0 alike)
    if (is_number(value))
      for (size_t i = 0; i < f.values.size(); ++i)
        if (is_number(f.values[i]) && values_equal(f.values[i], value)) return f.offset + static_cast<int>(i);
    refuse(f.node, "the value " + repr(value) + " is not among those it takes");
  }

  bool has_value(const Feature& f, const Value& value) {
    for (const auto& v : f.values)
      if (key_of(v) == key_of(canon(value))) return true;
    return false;
  }

  // The residual vector a feature holding `value` is.
  std::vector<double> encode(const Feature& f, const Value& value, int d) {
    std::vector<double> out(d, 0.0);
    if (f.numerical) {
      if (!is_number(value)) refuse(f.node, "a numerical s-op would hold " + repr(value));
      out[f.offset] = to_double(value);
    } else {
      out[dim_of(f, value)] = 1.0;
    }
    return out;
  }

  struct MlpUnits {
    std::vector<std::vector<double>> w1;  // per unit: d_model weights
    std::vector<double> b1;
    std::vector<std::vector<double>> w2;  // per unit: d_model output column
    void add(std::vector<double> w, double b, std::vector<double> out) {
      w1.push_back(std::move(w));
      b1.push_back(b);
      w2.push_back(std::move(out));
    }
  };

  // An MLP computing `out` from the table's inputs. Categorical inputs only: a decision
  // tree of conjunction units (below). One numerical input: per combination of the
  // categorical ones, the piecewise-linear interpolant through the values it takes, as a
  // gated base unit plus one ramp relu(x - t) per point where the slope changes.
  void lookup(const Node* node, const std::vector<const Feature*>& inputs, const Table& table, const Feature& out,
              int d, MlpUnits& units) {
    if (auto it = linear_.find(node); it != linear_.end()) return linear(inputs, table, it->second, out, d, units);
    int numeric = -1;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i]->numerical || inputs[i]->constant) continue;
      if (numeric >= 0)
        refuse(node, "it depends on two numerical s-ops (" + inputs[numeric]->node->description() + ", " +
                         inputs[i]->node->description() +
                         "); an MLP discretises one numerical input exactly (make one of them categorical)");
      numeric = static_cast<int>(i);
    }
    if (numeric < 0) return categorical_lookup(inputs, table, out, d, units);
    double xmin = 0, xmax = 0;
    {
      const auto& vs = inputs[numeric]->values;
      xmin = xmax = to_double(vs.at(0));
      for (const auto& v : vs) {
        xmin = std::min(xmin, to_double(v));
        xmax = std::max(xmax, to_double(v));
      }
    }
    // group the rows by their categorical values
    std::map<std::string, std::vector<std::pair<double, Value>>> groups;
    std::map<std::string, std::vector<Value>> group_values;
    for (const auto& [k, row] : table.rows) {
      std::vector<Value> cats;
      for (size_t i = 0; i < inputs.size(); ++i)
        if (static_cast<int>(i) != numeric) cats.push_back(row.first[i]);
      std::string g = tuple_key(cats);
      group_values[g] = cats;
      groups[g].emplace_back(to_double(row.first[numeric]), row.second);
    }
    const double gate = (xmax - xmin) + 1.0;  // switches other combinations' ramps off
    for (auto& [g, rows] : groups) {
      std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      const std::vector<Value>& cats = group_values[g];
      std::vector<double> match(d, 0.0);  // sum of the group's one-hot dimensions
      int m = 0;
      for (size_t i = 0, c = 0; i < inputs.size(); ++i) {
        if (static_cast<int>(i) == numeric) continue;
        const Value& v = cats[c++];
        if (inputs[i]->constant) continue;
        match[dim_of(*inputs[i], v)] += 1.0;
        ++m;
      }
      // the points (x, encoded value), the same number twice (2 and 2.0) being one point
      std::vector<std::pair<double, std::vector<double>>> points;
      for (size_t i = 0; i < rows.size(); ++i) {
        std::vector<double> y = encode(out, rows[i].second, d);
        if (i > 0 && rows[i].first - rows[i - 1].first <= 1e-12 * std::max(1.0, std::fabs(rows[i].first))) {
          if (y != points.back().second)
            refuse(node, "it gives " + repr(rows[i - 1].second) + " and " + repr(rows[i].second) +
                             " for two inputs that are the same number");
          rows[i].first = rows[i - 1].first;
          continue;
        }
        points.emplace_back(rows[i].first, std::move(y));
      }
      // base unit: 1 exactly when the categorical inputs hold this combination
      const std::vector<double>& first = points[0].second;
      if (std::any_of(first.begin(), first.end(), [](double v) { return v != 0; }))
        units.add(match, m == 0 ? 1.0 : 1.0 - m, first);
      std::vector<double> slope(d, 0.0);  // of the segment before the current point
      for (size_t i = 0; i + 1 < points.size(); ++i) {
        const double gap = points[i + 1].first - points[i].first;
        std::vector<double> next(d), change(d);
        bool changes = false;
        for (int j = 0; j < d; ++j) {
          next[j] = (points[i + 1].second[j] - points[i].second[j]) / gap;
          change[j] = next[j] - slope[j];
          changes |= change[j] != 0;
        }
        if (changes) {  // relu(x - x_i), gated: the slope changes at x_i
          std::vector<double> w(d, 0.0);
          for (int j = 0; j < d; ++j) w[j] = gate * match[j];
          w[inputs[numeric]->offset] += 1.0;
          units.add(w, -points[i].first - gate * m, change);
        }
        slope = std::move(next);
      }
    }
  }

  // A lookup over categorical inputs only, as a decision tree of conjunction units: a unit
  // relu(sum of the one-hot dimensions of a partial assignment - (size - 1)) is 1 exactly
  // where the inputs hold that assignment. Splitting on one input at a time, a node writes
  // the value most of its branches take (one unit) and only the other branches go deeper,
  // so an input that decides the output alone (a None that stays None) costs one unit per
  // value, not one per combination.
  struct CatRow {
    std::vector<int> dims;  // per input: its one-hot dimension (-1: a constant)
    std::vector<double> y;
  };
  struct CatUnit {
    std::vector<int> assignment;  // the dimensions that must be hot
    std::vector<double> y;
  };

  void categorical_lookup(const std::vector<const Feature*>& inputs, const Table& table, const Feature& out, int d,
                          MlpUnits& units) {
    std::vector<CatRow> rows;
    std::vector<size_t> free;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!inputs[i]->constant) free.push_back(i);
    for (const auto& [k, row] : table.rows) {
      CatRow r;
      for (size_t i = 0; i < inputs.size(); ++i) r.dims.push_back(inputs[i]->constant ? -1 : dim_of(*inputs[i], row.first[i]));
      r.y = encode(out, row.second, d);
      rows.push_back(std::move(r));
    }
    std::vector<CatUnit> tree = split(rows, {}, std::vector<double>(d, 0.0), free, true);
    for (const CatUnit& u : tree) {
      std::vector<double> w(d, 0.0);
      for (int dim : u.assignment) w[dim] += 1.0;
      units.add(w, 1.0 - static_cast<double>(u.assignment.size()), u.y);
    }
  }

  // The units writing rows' values given that `base` is already written where `fixed` holds.
  std::vector<CatUnit> split(const std::vector<CatRow>& rows, const std::vector<int>& fixed,
                             const std::vector<double>& base, const std::vector<size_t>& free, bool search) {
    auto minus = [](const std::vector<double>& a, const std::vector<double>& b) {
      std::vector<double> out(a);
      for (size_t j = 0; j < out.size(); ++j) out[j] -= b[j];
      return out;
    };
    bool uniform = true;
    for (const CatRow& r : rows) uniform &= r.y == rows[0].y;
    if (uniform || free.empty()) {
      if (rows.empty() || rows[0].y == base) return {};
      return {CatUnit{fixed, minus(rows[0].y, base)}};
    }
    std::vector<CatUnit> best;
    bool found = false;
    // every input as the first split where the tree is small enough to search, else in order
    const size_t tries = search && free.size() <= 3 ? free.size() : 1;
    for (size_t t = 0; t < tries; ++t) {
      const size_t x = free[t];
      std::vector<size_t> rest;
      for (size_t f : free)
        if (f != x) rest.push_back(f);
      std::map<int, std::vector<CatRow>> parts;
      for (const CatRow& r : rows) parts[r.dims[x]].push_back(r);
      // the default: what most single-valued branches write (or nothing new)
      std::map<std::vector<double>, int> votes;
      for (const auto& [dim, part] : parts) {
        bool same = true;
        for (const CatRow& r : part) same &= r.y == part[0].y;
        if (same) ++votes[part[0].y];
      }
      std::vector<std::vector<double>> defaults{base};
      int most = 0;
      for (const auto& [y, n] : votes)
        if (n > most) most = n;
      for (const auto& [y, n] : votes)
        if (n == most && y != base) {
          defaults.push_back(y);
          break;
        }
      for (const auto& dflt : defaults) {
        std::vector<CatUnit> units;
        if (dflt != base) units.push_back(CatUnit{fixed, minus(dflt, base)});
        for (const auto& [dim, part] : parts) {
          std::vector<int> deeper(fixed);
          deeper.push_back(dim);
          for (auto& u : split(part, deeper, dflt, rest, search && free.size() <= 3)) units.push_back(std::move(u));
        }
        if (!found || units.size() < best.size()) {
          best = std::move(units);
          found = true;
        }
      }
    }
    return best;
  }

  // A linear function of several numerical inputs per combination of categorical ones:
  // relu(x + g) - relu(-x + g) = x where the combination matches (g = 0), 0 elsewhere.
  void linear(const std::vector<const Feature*>& inputs, const Table& table,
              const std::map<std::string, std::vector<double>>& coefficients, const Feature& out, int d,
              MlpUnits& units) {
    std::vector<size_t> nums;
    double bound = 1;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i]->numerical && !inputs[i]->constant) {
        nums.push_back(i);
        for (const auto& v : inputs[i]->values) bound = std::max(bound, std::fabs(to_double(v)));
      }
    std::map<std::string, std::vector<Value>> group_values;
    for (const auto& [k, row] : table.rows) {
      std::vector<Value> cats;
      for (size_t i = 0; i < inputs.size(); ++i)
        if (std::find(nums.begin(), nums.end(), i) == nums.end()) cats.push_back(row.first[i]);
      group_values[tuple_key(cats)] = cats;
    }
    const double gate = bound + 1;
    for (const auto& [g, coef] : coefficients) {
      const std::vector<Value>& cats = group_values.at(g);
      std::vector<double> match(d, 0.0);
      int m = 0;
      for (size_t i = 0, c = 0; i < inputs.size(); ++i) {
        if (std::find(nums.begin(), nums.end(), i) != nums.end()) continue;
        const Value& v = cats[c++];
        if (inputs[i]->constant) continue;
        match[dim_of(*inputs[i], v)] += 1.0;
        ++m;
      }
      std::vector<double> base(d, 0.0);
      base[out.offset] = coef[0];
      if (coef[0] != 0) units.add(match, m == 0 ? 1.0 : 1.0 - m, base);
      for (size_t j = 0; j < nums.size(); ++j) {
        if (coef[j + 1] == 0) continue;
        std::vector<double> w(d, 0.0), up(d, 0.0), down(d, 0.0);
        for (int x = 0; x < d; ++x) w[x] = gate * match[x];
        std::vector<double> wneg(w);
        const int xd = inputs[nums[j]]->offset;
        w[xd] += 1.0;
        wneg[xd] -= 1.0;
        up[out.offset] = coef[j + 1];
        down[out.offset] = -coef[j + 1];
        // an input that is never negative (never positive) is its own relu (of its
        // negation): one unit; otherwise x = relu(x) - relu(-x), two
        double lo = 0, hi = 0;
        for (const auto& v : inputs[nums[j]]->values) {
          lo = std::min(lo, to_double(v));
          hi = std::max(hi, to_double(v));
        }
        if (hi > 0 || lo == 0) units.add(w, -gate * m, up);
        if (lo < 0) units.add(wneg, -gate * m, down);
      }
    }
  }

  // ---- heads ----------------------------------------------------------------------------------

  // Adds a head for `n` (an aggregate, a width or length) given the BOS residual `bos`;
  // returns what the head writes at the BOS position.
  std::vector<double> head(const Node* n, const std::vector<double>& bos, int d, CompiledLayer& layer) {
    std::vector<ScoreTerm> terms;
    std::string selector = "select(tokens, tokens, true)";
    if (n->kind == Kind::Length) {
      ScoreTerm all;
      all.table.assign(1, std::vector<uint8_t>(1, 1));
      terms.push_back(all);
    } else {
      terms = score_terms(n->children[0].get());
      selector = n->children[0]->description();
    }
    const bool counting = width_based(n);
    std::vector<double> qk(static_cast<size_t>(d) * d, 0.0), ov(static_cast<size_t>(d) * d, 0.0);
    for (const ScoreTerm& t : terms) {
      const Feature* q = t.query;
      const Feature* k = t.key;
      for (size_t a = 0; a < t.table.size(); ++a)
        for (size_t b = 0; b < t.table[a].size(); ++b) {
          if (!t.table[a][b]) continue;
          int qd = q ? q->offset + static_cast<int>(a) : 0;
          int kd = k ? k->offset + static_cast<int>(b) : 0;
          qk[static_cast<size_t>(qd) * d + kd] += kBeta;
        }
    }
    // BOS: as strong as a selected key for counting heads, half a step below otherwise
    const double bos_score = kBeta * (static_cast<double>(terms.size()) - (counting ? 0.0 : 0.5));
    std::vector<double> bos_value(d, 0.0);
    const Feature& out = features_.at(n);
    if (counting) {
      bos_value[scratch_.at(n).offset] = 1.0;
    } else {
      const Feature& vals = features_.at(n->children[1].get());
      const bool viewed = viewed_.count(vals.node) > 0;
      const Feature* through = &vals;  // a viewed s-op is read through the one-hot it is a function of
      std::vector<Value> values = vals.values;
      if (viewed) std::tie(through, values) = view_of(vals.node);
      const size_t entries = !viewed && (vals.constant || vals.numerical) ? 1 : values.size();
      for (size_t i = 0; i < entries; ++i) {
        const Value& v = values.at(i);
        int from = vals.constant ? 0 : through->offset + (vals.numerical && !viewed ? 0 : static_cast<int>(i));
        if (out.numerical) {
          if (!is_number(v)) refuse(n, "a numerical aggregate of " + vals.node->description() + ", which holds " + repr(v));
          double scale = vals.numerical && !vals.constant && !viewed ? 1.0 : to_double(v);
          ov[static_cast<size_t>(out.offset) * d + from] += scale;
        } else {
          if (vals.numerical && !vals.constant && !viewed)
            refuse(n, "a categorical aggregate of the numerical s-op " + vals.node->description());
          // a value no query ever receives (never selected, on any input) needs no weight
          if (!has_value(out, v)) continue;
          ov[static_cast<size_t>(dim_of(out, v)) * d + from] += 1.0;
        }
      }
      const HeadStats& st = stats_.at(n);
      if (st.some_empty) bos_value = encode(out, n->constant, d);
    }
    // The BOS key's score and value, exactly as intended whatever the BOS residual holds.
    double magnitude = 0;
    for (double w : qk) magnitude += std::fabs(w);
    double bound = 1;
    for (double x : bos) bound = std::max(bound, std::fabs(x));
    for (const auto& f : features_)
      if (f.second.numerical)
        for (const auto& v : f.second.values) bound = std::max(bound, std::fabs(to_double(v)));
    const double big = 2 * magnitude * bound * bound + 2 * kBeta + bos_score;
    std::vector<double> col(d, 0.0), vcol(d, 0.0);
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) {
        if (j == 1) continue;
        col[i] += qk[static_cast<size_t>(i) * d + j] * bos[j];
        vcol[i] += ov[static_cast<size_t>(i) * d + j] * bos[j];
      }
    for (int i = 0; i < d; ++i) {
      qk[static_cast<size_t>(i) * d + 1] = -col[i];
      ov[static_cast<size_t>(i) * d + 1] = bos_value[i] - vcol[i];
    }
    qk[0 * d + 1] += bos_score;  // every query scores BOS at bos_score
    qk[1 * d + 1] += big;        // the BOS position attends only to itself
    // Aggregates of one layer that attend alike (the same score matrix, BOS included) are
    // one head writing several outputs: the attention weights are the same, and the value
    // maps write disjoint subspaces (their BOS corrections too), so summing them is exact.
    for (CompiledHead& same : layer.heads)
      if (same.qk == qk) {
        for (size_t i = 0; i < ov.size(); ++i) same.ov[i] += ov[i];
        same.output += ", " + out.node->description();
        return bos_value;
      }
    layer.heads.push_back(CompiledHead{out.node->description(), selector, std::move(qk), std::move(ov)});
    return bos_value;
  }

  // ---- putting it together ------------------------------------------------------------------

  void build_layers(CompiledModel& m) {
    const int d = m.d_model;
    int top = 0;
    for (const auto& [n, f] : features_) top = std::max(top, f.ready);
    const int layers = (top + 1) / 2;
    std::vector<double> bos = m.bos_embedding;  // the BOS residual, known at every point
    for (int l = 1; l <= layers; ++l) {
      CompiledLayer layer;
      std::vector<double> written(d, 0.0);
      for (const Node* n : order_) {
        auto it = attention_at_.find(n);
        if (it == attention_at_.end() || it->second != 2 * l - 1 || features_.at(n).constant) continue;
        std::vector<double> w = head(n, bos, d, layer);
        for (int i = 0; i < d; ++i) written[i] += w[i];
      }
      for (int i = 0; i < d; ++i) bos[i] += written[i];
      MlpUnits units;
      for (const Node* n : order_) {
        if (!needed_.count(n)) continue;
        const Feature& f = features_.at(n);
        if (f.constant || f.ready != 2 * l) continue;
        if (elementwise(n->kind)) {
          const Table& t = tables_.at(n);
          std::vector<const Feature*> inputs;
          for (const Node* in : t.inputs) inputs.push_back(&features_.at(in));
          auto [direct_inputs, direct_table] = lookup_inputs(n);
          lookup(n, direct_inputs, direct_table, f, d, units);
        } else if (decoded_.count(n)) {  // decode a count: 1/(w+1) -> the s-op's value
          lookup(n, {&scratch_.at(n)}, width_tables_.at(n), f, d, units);
        } else {
          continue;  // read as 1/(w+1) by the element-wise s-ops that use it
        }
        layer.mlp.outputs.push_back(n->description());
      }
      for (const auto& [sops, j] : joints_) {
        if (j.embedded != Kind::Constant || j.feature.ready != 2 * l) continue;
        std::vector<const Feature*> inputs;
        const auto sh = joint_shadowed_.find(sops);
        for (const Node* in : j.table.inputs)
          inputs.push_back(sh != joint_shadowed_.end() && sh->second.count(in) ? &shadows_.at(in) : &features_.at(in));
        lookup(j.selector, inputs, joint_rows(j, inputs), j.feature, d, units);
        layer.mlp.outputs.push_back(m.spaces[j.feature.space].name + " (joint values for " + j.selector->description() + ")");
      }
      for (const Node* n : order_) {  // categorical copies, in program order
        auto it = shadows_.find(n);
        if (it == shadows_.end() || it->second.ready != 2 * l) continue;
        const Feature& copy = it->second;
        Table identity;
        for (const auto& v : copy.values) identity.rows.emplace(tuple_key({v}), std::make_pair(std::vector<Value>{v}, v));
        lookup(n, {&features_.at(n)}, identity, copy, d, units);
        layer.mlp.outputs.push_back(n->description() + " (categorical copy)");
      }
      CompiledMlp& mlp = layer.mlp;
      mlp.hidden = static_cast<int>(units.b1.size());
      mlp.w1.assign(static_cast<size_t>(mlp.hidden) * d, 0.0);
      mlp.w2.assign(static_cast<size_t>(d) * mlp.hidden, 0.0);
      mlp.b1 = units.b1;
      for (int u = 0; u < mlp.hidden; ++u) {
        // switched off at the BOS position, whose residual is known
        double pre = units.b1[u];
        for (int j = 0; j < d; ++j)
          if (j != 1) pre += units.w1[u][j] * bos[j];
        units.w1[u][1] = -(std::max(pre, 0.0) + 1.0);
        for (int j = 0; j < d; ++j) {
          mlp.w1[static_cast<size_t>(u) * d + j] = units.w1[u][j];
          mlp.w2[static_cast<size_t>(j) * mlp.hidden + u] = units.w2[u][j];
        }
      }
      m.layers.push_back(std::move(layer));
    }
  }

  SOp output_;
  std::vector<Value> vocab_;
  int max_len_;
  CompileOptions options_;
  std::vector<const Node*> order_;
  std::set<const Node*> needed_;
  std::map<const Node*, std::vector<const Node*>> frontier_;  // references stay valid
  std::unordered_map<const Node*, ValueSet> values_;
  std::unordered_map<const Node*, Table> tables_;
  std::unordered_map<const Node*, Table> width_tables_;
  std::unordered_map<const Node*, HeadStats> stats_;
  std::map<const Node*, Feature> features_;
  std::unordered_map<const Node*, Feature> scratch_;
  std::unordered_map<const Node*, int> attention_at_;
  std::set<std::string> used_names_;
  std::set<const Node*> materialized_;  // element-wise s-ops with their own MLP
  std::set<const Node*> read_directly_;  // read by attention or the output (not an MLP lookup)
  std::set<const Node*> decoded_;        // counts decoded by an MLP
  std::set<const Node*> direct_;         // element-wise s-ops reading counts as 1/(w+1)
  std::map<const Node*, Kind> embedded_;  // element-wise s-ops of the tokens / indices alone
  std::set<const Node*> viewed_;  // embedded s-ops read by attention through the tokens' (indices') one-hot
  // element-wise s-op -> numerical inputs it reads through a categorical copy
  std::map<const Node*, std::set<const Node*>> shadowed_;
  std::map<const Node*, Feature> shadows_;  // numerical s-op -> its categorical copy
  std::map<const Node*, std::map<std::string, std::vector<double>>> linear_;
  std::map<std::vector<const Node*>, Joint> joints_;  // by their components
  // joints whose inputs would be two numerical s-ops: computed from their components
  std::set<std::vector<const Node*>> joint_by_components_;
  // joint -> numerical inputs it reads through a categorical copy
  std::map<std::vector<const Node*>, std::set<const Node*>> joint_shadowed_;
};

}  // namespace

CompiledModel compile(const SOp& output, const std::vector<Value>& vocab, int max_len, const CompileOptions& options) {
  if (!output.node()) throw Error(ErrorKind::Semantic, "cannot compile an empty s-op");
  if (max_len < 1) throw Error(ErrorKind::Semantic, "max_len must be at least 1");
  if (vocab.empty()) throw Error(ErrorKind::Semantic, "the vocabulary is empty");
  std::vector<Value> unique;
  std::set<std::string> seen;
  for (const auto& v : vocab) {
    if (is_none(v)) throw Error(ErrorKind::Semantic, "the vocabulary holds None; tokens are defined values");
    if (seen.insert(key_of(v)).second) unique.push_back(v);
  }
  return Compiler(output, std::move(unique), max_len, options).run();
}

}  // namespace lrnn::rasp
