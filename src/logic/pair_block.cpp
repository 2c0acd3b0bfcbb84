#include "logic/pair_block.hpp"

#include <algorithm>

#include "logic/grounder.hpp"

namespace lrnn::logic {

namespace {

using Kind = BodyLiteral::Kind;

bool is_var(const ArgRef& a, uint32_t var) { return a.is_var && a.value == var; }

// The score rule's literals into `shape`: head w(I, J) over two variables; inputs that
// are ground, k(J) or q(I) (one each); at most one comparison J <= I or J < I.
bool read_score_rule(const CompiledRule& cr, PairBlockShape& shape) {
  const ArgRef* h = cr.head_args();
  if (cr.is_fact || cr.head_arity != 2 || cr.var_names.size() != 2 || !h[0].is_var || !h[1].is_var ||
      h[0].value == h[1].value)
    return false;
  const uint32_t I = h[0].value, J = h[1].value;
  shape.pair_pred = cr.head_pred;
  shape.score_inputs.assign(cr.input_literals.size(), kNone);
  for (const BodyLiteral& bl : cr.body) {
    const ArgRef* args = cr.lit_args(bl);
    if (bl.source == kNone) return false;  // a typed term's literal or the active domain
    if (bl.kind == Kind::Builtin) {
      if (shape.comparison != BuiltinOp::True || bl.input_slot != kNone) return false;
      const bool column_first = bl.op == BuiltinOp::Leq || bl.op == BuiltinOp::Lt;
      const bool row_first = bl.op == BuiltinOp::Geq || bl.op == BuiltinOp::Gt;
      if (!(column_first && is_var(args[0], J) && is_var(args[1], I)) &&
          !(row_first && is_var(args[0], I) && is_var(args[1], J)))
        return false;
      shape.comparison = bl.op;
      shape.column_first = column_first;
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
  return shape.row_pred != kNone && shape.column_pred != kNone;
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
    if (shape.comparison != BuiltinOp::True && r > 0 && symbols.compare(block.column_symbol.back(), j) >= 0)
      return false;
    block.column_atom.push_back(r);
    block.value_atom.push_back(value);
    block.column_symbol.push_back(j);
  }
  return true;
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
    if (shape.comparison != BuiltinOp::True) {
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
  // Keys past every row's band pair with no row: they are no columns (relevance pruning
  // then treats them as the general path treats keys no pair atom reads).
  if (!block.band.empty() || block.rows() == 0) {
    const size_t used = block.rows() == 0 ? 0 : *std::max_element(block.band.begin(), block.band.end());
    for (auto* column : {&block.column_atom, &block.value_atom, &block.column_symbol}) column->resize(used);
  }
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
  for (const auto* atoms : {&block.row_atom, &block.head_atom, &block.column_atom, &block.value_atom})
    for (uint32_t a : *atoms) keep[a] = 1;
  for (uint32_t a : block.score_inputs)
    if (a != kRowInput && a != kColumnInput) keep[a] = 1;
  return true;
}

bool remap_pair_block(PairBlock& block, const std::vector<uint32_t>& new_id) {
  if (std::none_of(block.head_atom.begin(), block.head_atom.end(), [&](uint32_t a) { return new_id[a] != kNone; }))
    return false;
  for (auto* atoms : {&block.row_atom, &block.head_atom, &block.column_atom, &block.value_atom})
    for (uint32_t& a : *atoms) a = new_id[a];
  for (uint32_t& a : block.score_inputs)
    if (a != kRowInput && a != kColumnInput) a = new_id[a];
  return true;
}

}  // namespace lrnn::logic
