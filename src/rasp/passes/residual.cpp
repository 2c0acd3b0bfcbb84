// Reading and writing the residual stream (passes.hpp): which dimension holds a value of a
// feature, and the vector a feature holding a value is.
#include "rasp/passes/passes.hpp"

namespace lrnn::rasp::passes {

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

}  // namespace lrnn::rasp::passes
