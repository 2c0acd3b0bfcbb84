#include "logic/pair_block.hpp"

#include <algorithm>

#include "logic/grounder.hpp"

namespace lrnn::logic {

namespace {

using Kind = BodyLiteral::Kind;

bool is_var(const ArgRef& a, uint32_t var) { return a.is_var && a.value == var; }

bool is_bound(BuiltinOp op) {
  return op == BuiltinOp::Leq || op == BuiltinOp::Lt || op == BuiltinOp::Geq || op == BuiltinOp::Gt;
}

// A comparison J <= I, J < I, I >= J or I > J into `shape`; false if `bl` is none.
bool read_comparison(const BodyLiteral& bl, const ArgRef* args, uint32_t I, uint32_t J, PairBlockShape& shape) {
  const bool column_first = bl.op == BuiltinOp::Leq || bl.op == BuiltinOp::Lt;
  const bool row_first = bl.op == BuiltinOp::Geq || bl.op == BuiltinOp::Gt;
  if (shape.comparison != BuiltinOp::True || bl.arity != 2 ||
      (!(column_first && is_var(args[0], J) && is_var(args[1], I)) &&
       !(row_first && is_var(args[0], I) && is_var(args[1], J))))
    return false;
  shape.comparison = bl.op;
  shape.column_first = column_first;
  return true;
}

// A window's literal into `shape`: @sub(I, J, D) (D the offset), or a bound @op(D, c) on
// the rule's other variable D (checked to be the offset once the body is read); false if
// `bl` is neither.
bool read_window(const BodyLiteral& bl, const ArgRef* args, uint32_t I, uint32_t J, uint32_t& offset_var,
                 PairBlockShape& shape) {
  if (bl.op == BuiltinOp::Sub && bl.arity == 3 && is_var(args[0], I) && is_var(args[1], J) && args[2].is_var &&
      args[2].value != I && args[2].value != J && !shape.window) {
    shape.window = true;
    return offset_var == kNone || offset_var == args[2].value ? (offset_var = args[2].value, true) : false;
  }
  if (!is_bound(bl.op) || bl.arity != 2 || !args[0].is_var || args[1].is_var || args[0].value == I ||
      args[0].value == J || (offset_var != kNone && offset_var != args[0].value))
    return false;
  offset_var = args[0].value;
  shape.window_bounds.emplace_back(bl.op, args[1].value);
  return true;
}

// The score rule's literals into `shape`: head w(I, J); inputs that are ground, k(J) or
// q(I) (one each); at most one comparison J <= I or J < I, or a window: @sub(I, J, D) and
// bounds on D, the rule's one other variable.
bool read_score_rule(const CompiledRule& cr, PairBlockShape& shape) {
  const ArgRef* h = cr.head_args();
  if (cr.is_fact || cr.head_arity != 2 || cr.var_names.size() < 2 || cr.var_names.size() > 3 || !h[0].is_var ||
      !h[1].is_var || h[0].value == h[1].value)
    return false;
  const uint32_t I = h[0].value, J = h[1].value;
  uint32_t offset_var = kNone;
  shape.pair_pred = cr.head_pred;
  shape.score_inputs.assign(cr.input_literals.size(), kNone);
  for (const BodyLiteral& bl : cr.body) {
    const ArgRef* args = cr.lit_args(bl);
    if (bl.source == kNone) return false;  // a typed term's literal or the active domain
    if (bl.kind == Kind::Builtin) {
      if (bl.input_slot != kNone) return false;
      if (!read_comparison(bl, args, I, J, shape) && !read_window(bl, args, I, J, offset_var, shape)) return false;
      continue;
    }
    if (bl.kind != Kind::Positive || bl.input_slot == kNone) return false;
    uint32_t& slot = shape.score_inputs[bl.input_slot];
    if (std::none_of(args, args + bl.arity, [](const ArgRef& a) { return a.is_var; })) {
      slot = uint32_t(shape.ground_pred.size());
      shape.ground_pred.push_back(bl.pred);
      shape.ground_tuple.emplace_back();
      for (uint32_t k = 0; k < bl.arity; ++k) shape.ground_tuple.back().push_back(args[k].value);
    } else if (bl.arity == 1 && is_var(args[0], J) && shape.column_pred == kNone) {
      slot = kColumnInput;
      shape.column_pred = bl.pred;
    } else if (bl.arity == 1 && is_var(args[0], I) && shape.row_pred == kNone) {
      slot = kRowInput;
      shape.row_pred = bl.pred;
    } else {
      return false;
    }
  }
  const bool window = shape.window && !shape.window_bounds.empty() && shape.comparison == BuiltinOp::True &&
                      cr.var_names.size() == 3;
  const bool no_window = !shape.window && shape.window_bounds.empty() && cr.var_names.size() == 2;
  return shape.row_pred != kNone && shape.column_pred != kNone && (window || no_window);
}

// The sum rule's literals into `shape`: head a(I); body exactly w(I, J) and v(J), both inputs.
bool read_sum_rule(const CompiledRule& cr, PairBlockShape& shape) {
  const ArgRef* h = cr.head_args();
  if (cr.is_fact || cr.head_arity != 1 || cr.var_names.size() != 2 || !h[0].is_var || cr.body.size() != 2)
    return false;
  const uint32_t I = h[0].value;
  const uint32_t J = 1 - I;  // the other of the rule's two variables
  bool pair_seen = false;
  for (const BodyLiteral& bl : cr.body) {
    const ArgRef* args = cr.lit_args(bl);
    if (bl.source == kNone || bl.kind != Kind::Positive || bl.input_slot == kNone) return false;
    if (bl.pred == shape.pair_pred && is_var(args[0], I) && is_var(args[1], J)) {
      pair_seen = true;
      shape.sum_pair_input = bl.input_slot;
    } else if (bl.arity == 1 && is_var(args[0], J)) {
      shape.value_pred = bl.pred;
    } else {
      return false;
    }
  }
  shape.head_pred = cr.head_pred;
  return pair_seen && shape.value_pred != kNone;
}

// w derived by the score rule alone and read by the sum rule alone, a derived by the sum
// rule alone (template facts count as rules), and no recursion anywhere.
bool rules_keep_to_themselves(const Program& program, const PairBlockShape& shape) {
  const auto& rules = program.compiled_rules();
  for (uint32_t r = 0; r < rules.size(); ++r) {
    const CompiledRule& cr = rules[r];
    if (cr.head_pred == shape.pair_pred && r != shape.score_rule) return false;
    if (cr.head_pred == shape.head_pred && r != shape.sum_rule) return false;
    if (r == shape.sum_rule) continue;
    for (const BodyLiteral& bl : cr.body)
      if (bl.pred == shape.pair_pred) return false;
  }
  return std::none_of(program.strata().begin(), program.strata().end(),
                      [](const Stratum& s) { return s.recursive; });
}

// Whether the comparison allows row symbol i with column symbol j (as run_builtin would).
bool allows(const PairBlockShape& shape, const Symbols& symbols, uint32_t i, uint32_t j) {
  const int c = shape.column_first ? symbols.compare(j, i) : symbols.compare(i, j);
  switch (shape.comparison) {
    case BuiltinOp::Leq: return c <= 0;
    case BuiltinOp::Lt: return c < 0;
    case BuiltinOp::Geq: return c >= 0;
    case BuiltinOp::Gt: return c > 0;
    default: return true;
  }
}

// The columns (keys and their values) into `block`; false if a key has no value or, with
// a comparison, the keys do not ascend strictly.
bool read_columns(const PairBlockShape& shape, const std::vector<Relation>& rels, const Symbols& symbols,
                  PairBlock& block) {
  const Relation& keys = rels[shape.column_pred];
  const Relation& values = rels[shape.value_pred];
  for (uint32_t r = 0; r < keys.rows(); ++r) {
    const uint32_t j = keys.row(r)[0];
    const uint32_t value = values.find(&j);
    if (value == kNone) return false;
    if ((shape.comparison != BuiltinOp::True || shape.window) && r > 0 &&
        symbols.compare(block.column_symbol.back(), j) >= 0)
      return false;
    if (shape.window && !Symbols::is_small_int(j)) return false;
    block.column_atom.push_back(r);
    block.value_atom.push_back(value);
    block.column_symbol.push_back(j);
  }
  return true;
}

// Whether offset d = I - J meets every bound of the window (as run_arithmetic binds D and
// run_builtin compares it); `upper`: the bounds from above (leq, lt), else those from below.
bool within(const PairBlockShape& shape, const Symbols& symbols, int64_t d, bool upper) {
  const uint32_t offset = Symbols::encode_int(d);
  for (const auto& [op, bound] : shape.window_bounds) {
    const bool from_above = op == BuiltinOp::Leq || op == BuiltinOp::Lt;
    if (from_above != upper) continue;
    const int c = symbols.compare(offset, bound);
    const bool ok = op == BuiltinOp::Leq ? c <= 0 : op == BuiltinOp::Lt ? c < 0 : op == BuiltinOp::Geq ? c >= 0 : c > 0;
    if (!ok) return false;
  }
  return true;
}

// Row i's window over the ascending small-integer keys: [first, end), the keys whose
// offset i - j meets the bounds (it falls as j rises, so they are one run); false when an
// offset would leave the small integers (the general path then grounds the rule).
bool window_of(const PairBlockShape& shape, const Symbols& symbols, uint32_t i, const std::vector<uint32_t>& keys,
               uint32_t& first, uint32_t& end) {
  if (!Symbols::is_small_int(i) || keys.empty()) return false;
  const int64_t x = Symbols::small_int(i);
  for (uint32_t j : {keys.front(), keys.back()}) {
    const int64_t d = x - Symbols::small_int(j);
    if (d < Symbols::kIntMin || d > Symbols::kIntMax) return false;
  }
  const auto offset = [&](uint32_t j) { return x - Symbols::small_int(j); };
  first = uint32_t(std::partition_point(keys.begin(), keys.end(),
                                        [&](uint32_t j) { return !within(shape, symbols, offset(j), true); }) -
                   keys.begin());
  end = uint32_t(std::partition_point(keys.begin(), keys.end(),
                                      [&](uint32_t j) { return within(shape, symbols, offset(j), false); }) -
                 keys.begin());
  end = std::max(end, first);
  return true;
}

// Keys in no row's band pair with no row: they are no columns (relevance pruning then
// treats them as the general path treats keys no pair atom reads). A window can leave such
// keys between the bands of two rows (queries 5 and 20, keys 3..20, width 2); every band
// lies wholly on one side of them, so each stays one run of the remaining columns.
void drop_unused_columns(PairBlock& block) {
  if (block.band.empty() && block.rows() > 0) return;
  std::vector<int32_t> cover(block.columns() + 1, 0);
  for (size_t r = 0; r < block.rows(); ++r) {
    ++cover[block.first_of(r)];
    --cover[block.first_of(r) + block.band_of(r)];
  }
  std::vector<uint32_t> new_index(block.columns() + 1, 0);  // kept columns before column c
  int32_t covering = 0;
  for (size_t c = 0; c < block.columns(); ++c) {
    covering += cover[c];
    new_index[c + 1] = new_index[c] + (covering > 0 ? 1 : 0);
    if (covering == 0) continue;
    const uint32_t to = new_index[c];
    block.column_atom[to] = block.column_atom[c];
    block.value_atom[to] = block.value_atom[c];
    block.column_symbol[to] = block.column_symbol[c];
  }
  const uint32_t kept = new_index[block.columns()];
  for (auto* column : {&block.column_atom, &block.value_atom, &block.column_symbol}) column->resize(kept);
  for (uint32_t& f : block.band_first) f = new_index[f];
}

}  // namespace

std::optional<PairBlockShape> pair_block_shape(const Program& program, uint32_t score_rule, uint32_t sum_rule) {
  if (score_rule >= program.num_rules() || sum_rule >= program.num_rules() || score_rule == sum_rule) return {};
  PairBlockShape shape;
  shape.score_rule = score_rule;
  shape.sum_rule = sum_rule;
  const CompiledRule& sum = program.compiled_rules()[sum_rule];
  if (!read_score_rule(program.compiled_rules()[score_rule], shape) || !read_sum_rule(sum, shape) ||
      !rules_keep_to_themselves(program, shape))
    return {};
  shape.level = sum.stratum;
  return shape;
}

bool pair_block_structure(const Program& program, uint32_t score_rule, uint32_t sum_rule) {
  return pair_block_shape(program, score_rule, sum_rule).has_value();
}

std::optional<PairBlock> build_pair_block(const PairBlockShape& shape, const std::vector<Relation>& rels,
                                          const Symbols& symbols) {
  if (rels[shape.pair_pred].rows() != 0) return {};
  PairBlock block;
  block.score_rule = shape.score_rule;
  block.sum_rule = shape.sum_rule;
  block.sum_pair_input = shape.sum_pair_input;
  block.level = shape.level;
  for (uint32_t slot : shape.score_inputs) {
    if (slot == kRowInput || slot == kColumnInput) {
      block.score_inputs.push_back(slot);
      continue;
    }
    const uint32_t row = rels[shape.ground_pred[slot]].find(shape.ground_tuple[slot].data());
    if (row == kNone) return {};
    block.score_inputs.push_back(row);
  }
  if (!read_columns(shape, rels, symbols, block)) return {};
  if (block.columns() == 0) return block;  // no pairs: no rows
  const Relation& queries = rels[shape.row_pred];
  for (uint32_t r = 0; r < queries.rows(); ++r) {
    const uint32_t i = queries.row(r)[0];
    if (shape.window) {
      uint32_t first = 0, end = 0;
      if (!window_of(shape, symbols, i, block.column_symbol, first, end)) return {};
      if (end == first) continue;
      block.band_first.push_back(first);
      block.band.push_back(end - first);
    } else if (shape.comparison != BuiltinOp::True) {
      // The keys ascend, so the comparison allows a prefix of them.
      const auto end = std::partition_point(block.column_symbol.begin(), block.column_symbol.end(),
                                            [&](uint32_t j) { return allows(shape, symbols, i, j); });
      const uint32_t band = uint32_t(end - block.column_symbol.begin());
      if (band == 0) continue;
      block.band.push_back(band);
    }
    block.row_atom.push_back(r);
    block.row_symbol.push_back(i);
  }
  drop_unused_columns(block);
  return block;
}

void offset_pair_block(PairBlock& block, const PairBlockShape& shape, const std::vector<uint32_t>& base) {
  auto offset = [](std::vector<uint32_t>& rows, uint32_t b) {
    for (uint32_t& r : rows) r += b;
  };
  offset(block.row_atom, base[shape.row_pred]);
  offset(block.head_atom, base[shape.head_pred]);
  offset(block.column_atom, base[shape.column_pred]);
  offset(block.value_atom, base[shape.value_pred]);
  for (size_t s = 0; s < block.score_inputs.size(); ++s) {
    const uint32_t slot = shape.score_inputs[s];
    if (slot != kRowInput && slot != kColumnInput) block.score_inputs[s] += base[shape.ground_pred[slot]];
  }
}

bool keep_pair_block(const PairBlock& block, std::vector<char>& keep) {
  if (std::none_of(block.head_atom.begin(), block.head_atom.end(), [&](uint32_t a) { return keep[a]; }))
    return false;
  block.for_each_atom([&](uint32_t a) { keep[a] = 1; });
  return true;
}

bool remap_pair_block(PairBlock& block, const std::vector<uint32_t>& new_id) {
  if (std::none_of(block.head_atom.begin(), block.head_atom.end(), [&](uint32_t a) { return new_id[a] != kNone; }))
    return false;
  block.for_each_atom([&](uint32_t& a) { a = new_id[a]; });
  return true;
}

}  // namespace lrnn::logic
