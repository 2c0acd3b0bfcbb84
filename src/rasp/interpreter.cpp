// The RASP interpreter: evaluates a program DAG on one input, each node once.
#include <cstdio>
#include <unordered_set>

#include "lrnn/rasp.hpp"

namespace lrnn::rasp {

namespace {

// Errors raised while computing a node name the node (and point at its `.rasp` source).
[[noreturn]] void node_error(const Node& n, const std::string& message) {
  std::string text = "in " + n.display_name() + ": " + message;
  if (n.span.file) throw Error(ErrorKind::Runtime, n.span, text);
  throw Error(ErrorKind::Runtime, text);
}

// Combines the values one query selected. Nothing selected gives the default, one value
// passes through unchanged (strings too), several numbers are summed or averaged.
Value combine(const Node& n, const std::vector<const Value*>& selected, Convention convention,
              size_t query) {
  if (selected.empty()) return n.constant;
  if (selected.size() == 1) return *selected[0];
  bool all_int = true;
  for (const Value* v : selected) {
    if (!is_number(*v)) {
      std::string shown;
      for (size_t i = 0; i < selected.size() && i < 4; ++i) shown += (i ? ", " : "") + repr(*selected[i]);
      if (selected.size() > 4) shown += ", ...";
      node_error(n, "cannot aggregate " + std::to_string(selected.size()) +
                        " selected values that are not all numbers (" + shown + ") at position " +
                        std::to_string(query) +
                        ": a non-numeric aggregate must select at most one value per query");
    }
    if (std::holds_alternative<double>(*v)) all_int = false;
  }
  if (convention == Convention::Mean) {
    double sum = 0;
    for (const Value* v : selected) sum += to_double(*v);
    return sum / static_cast<double>(selected.size());
  }
  if (all_int) {
    int64_t sum = 0;
    for (const Value* v : selected)
      sum += std::holds_alternative<bool>(*v) ? int64_t{std::get<bool>(*v)} : std::get<int64_t>(*v);
    return sum;
  }
  double sum = 0;
  for (const Value* v : selected) sum += to_double(*v);
  return sum;
}

// A selector compares values; `None` (undefined) has no place in that comparison. The
// error names the s-op that holds it (tracr refuses it too: "key is None!").
void require_defined(const Node& sel, const Node& sop, const std::vector<Value>& values, const char* role) {
  for (size_t i = 0; i < values.size(); ++i)
    if (is_none(values[i]))
      node_error(sel, std::string("the ") + role + " s-op " + sop.description() + " is None at position " +
                          std::to_string(i) + ": a selector cannot compare an undefined value");
}

}  // namespace

Value apply_elementwise(const Node& n, const std::vector<Value>& args) {
  if (n.kind == Kind::Where) return is_none(args[0]) ? Value{} : truthy(args[0]) ? args[1] : args[2];
  for (const Value& a : args)
    if (is_none(a)) return Value{};
  switch (n.kind) {
    case Kind::Map: return n.map_fn(args[0]);
    case Kind::ZipMap: return n.zip_fn(args);
    case Kind::Unary: return apply_value_unary(n.op, args[0]);
    case Kind::Binary: return apply_value_op(n.op, args[0], args[1]);
    default: break;
  }
  throw Error(ErrorKind::Semantic, std::string(kind_name(n.kind)) + " is not an element-wise operation");
}

std::vector<const Node*> topological_order(const NodePtr& root) {
  std::vector<const Node*> order;
  if (!root) return order;
  std::unordered_set<const Node*> done;
  // Iterative post-order: deep programs must not overflow the stack.
  std::vector<std::pair<const Node*, size_t>> stack{{root.get(), 0}};
  std::unordered_set<const Node*> on_stack{root.get()};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->children.size()) {
      const Node* child = node->children[next++].get();
      if (!done.count(child) && !on_stack.count(child)) {
        stack.emplace_back(child, 0);
        on_stack.insert(child);
      }
      continue;
    }
    order.push_back(node);
    done.insert(node);
    on_stack.erase(node);
    stack.pop_back();
  }
  return order;
}

namespace {

// A run keeps every selector's whole n x n matrix (draw and the lowering read them): an
// input long enough to exhaust memory is refused up front, naming the size, rather than
// ending the process (bad input never crashes).
constexpr uint64_t kMaxSelectorEntries = uint64_t{1} << 30;

void check_selector_memory(const std::vector<const Node*>& order, size_t n) {
  uint64_t selectors = 0;
  for (const Node* node : order)
    if (node->kind == Kind::Select || node->kind == Kind::SelectAnd || node->kind == Kind::SelectOr ||
        node->kind == Kind::SelectNot)
      ++selectors;
  if (!selectors || !n) return;
  if (n <= kMaxSelectorEntries && selectors <= kMaxSelectorEntries / n / n) return;
  char entries[32];
  std::snprintf(entries, sizeof entries, "%.3g", static_cast<double>(selectors) * n * n);
  throw Error(ErrorKind::Limit, "an input of " + std::to_string(n) + " positions: the program's " +
                                    std::to_string(selectors) + " selector(s) would hold " + entries +
                                    " matrix entries, over the limit of " + std::to_string(kMaxSelectorEntries) +
                                    " (a RASP run keeps every selector matrix; use a shorter input)");
}

}  // namespace

Evaluation evaluate(const SOp& output, const std::vector<Value>& input, Convention convention) {
  if (!output.node()) throw Error(ErrorKind::Semantic, "cannot evaluate an empty s-op");
  if (convention == Convention::Default) convention = Convention::Sum;
  Evaluation ev;
  ev.order = topological_order(output.node());
  const size_t n = input.size();
  check_selector_memory(ev.order, n);
  for (const Node* node : ev.order) {
    auto child_values = [&](size_t i) -> const std::vector<Value>& {
      return ev.values.at(node->children[i].get());
    };
    auto child_matrix = [&](size_t i) -> const SelectorMatrix& {
      return ev.selectors.at(node->children[i].get());
    };
    std::vector<Value> out;
    SelectorMatrix mat;
    try {
      switch (node->kind) {
        case Kind::Tokens: out = input; break;
        case Kind::Indices:
          for (size_t i = 0; i < n; ++i) out.emplace_back(static_cast<int64_t>(i));
          break;
        case Kind::Length: out.assign(n, Value(static_cast<int64_t>(n))); break;
        case Kind::Constant: out.assign(n, node->constant); break;
        case Kind::Map: case Kind::ZipMap: case Kind::Unary: case Kind::Binary: case Kind::Where: {
          std::vector<Value> args(node->children.size());
          out.reserve(n);
          for (size_t i = 0; i < n; ++i) {
            for (size_t c = 0; c < node->children.size(); ++c) args[c] = child_values(c)[i];
            out.push_back(apply_elementwise(*node, args));
          }
          break;
        }
        case Kind::Select: {
          const auto& keys = child_values(0);
          const auto& queries = child_values(1);
          if (node->predicate != Predicate::True && node->predicate != Predicate::False) {
            require_defined(*node, *node->children[0], keys, "key");
            require_defined(*node, *node->children[1], queries, "query");
          }
          mat.assign(n, std::vector<uint8_t>(n, 0));
          for (size_t q = 0; q < n; ++q)
            for (size_t k = 0; k < n; ++k) mat[q][k] = apply_predicate(node->predicate, keys[k], queries[q]);
          break;
        }
        case Kind::SelectAnd: case Kind::SelectOr: {
          const auto& a = child_matrix(0);
          const auto& b = child_matrix(1);
          mat = a;
          for (size_t q = 0; q < n; ++q)
            for (size_t k = 0; k < n; ++k)
              mat[q][k] = node->kind == Kind::SelectAnd ? (a[q][k] && b[q][k]) : (a[q][k] || b[q][k]);
          break;
        }
        case Kind::SelectNot: {
          mat = child_matrix(0);
          for (auto& row : mat)
            for (auto& x : row) x = !x;
          break;
        }
        case Kind::Aggregate: {
          const auto& sel = child_matrix(0);
          const auto& vals = child_values(1);
          Convention conv = node->convention == Convention::Default ? convention : node->convention;
          std::vector<const Value*> selected;
          for (size_t q = 0; q < n; ++q) {
            selected.clear();
            for (size_t k = 0; k < n; ++k)
              if (sel[q][k]) selected.push_back(&vals[k]);
            out.push_back(combine(*node, selected, conv, q));
          }
          break;
        }
        case Kind::SelectorWidth: {
          const auto& sel = child_matrix(0);
          for (size_t q = 0; q < n; ++q) {
            int64_t w = 0;
            for (size_t k = 0; k < n; ++k) w += sel[q][k];
            out.emplace_back(w);
          }
          break;
        }
      }
    } catch (const Error& e) {
      if (e.message().rfind("in ", 0) == 0) throw;  // already names its node
      node_error(*node, e.message());
    } catch (const std::exception& e) {
      // A user function (a Python lambda, a C++ std::function) failed.
      node_error(*node, std::string("function failed: ") + e.what());
    }
    if (node->is_selector()) ev.selectors.emplace(node, std::move(mat));
    else ev.values.emplace(node, std::move(out));
  }
  ev.output = ev.values.at(output.node().get());
  return ev;
}

std::vector<Value> run(const SOp& output, const std::vector<Value>& input, Convention convention) {
  return evaluate(output, input, convention).output;
}

std::vector<Value> run(const Program& program, const std::vector<Value>& input) {
  return evaluate(program.output, input, program.convention).output;
}

}  // namespace lrnn::rasp
