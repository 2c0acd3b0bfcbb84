// Helpers for the tests of the weight compiler's passes (src/rasp/passes/passes.hpp): the
// input a pass starts from, built by the passes before it on a small program.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "lrnn/rasp.hpp"
#include "rasp/passes/passes.hpp"

namespace rasp_passes_test {

using namespace lrnn::rasp;

inline std::vector<Value> abc() { return chars("abc"); }

// The input compile() builds (the vocabulary as given: the tests give no duplicates).
inline passes::CompileInput input_of(const SOp& output, std::vector<Value> vocab, int max_len,
                                     CompileOptions options = {}) {
  passes::CompileInput in;
  in.output = output;
  in.vocab = std::move(vocab);
  in.max_len = max_len;
  in.options = options;
  if (in.options.convention == Convention::Default) in.options.convention = Convention::Sum;
  in.order = topological_order(output.node());
  return in;
}

inline passes::Readings readings_of(const passes::CompileInput& in) {
  auto [encoded, lookups] = passes::observe_and_split(in);
  return passes::choose_readings(std::move(encoded), std::move(lookups));
}

// The node of an s-op in a pass's structs.
inline const Node* node(const SOp& s) { return s.node().get(); }

// The named s-op among the needed ones (the tests name what they look at).
template <typename Stage>
const Node* needed_named(const Stage& s, const std::string& name) {
  for (const Node* n : s.needed)
    if (n->description() == name) return n;
  return nullptr;
}

// tracr's reverse, with handles on its parts: length, the mirrored index, the flip.
struct Reverse {
  SOp length, opp, reverse;
};
inline Reverse make_reverse_parts() {
  Reverse r;
  r.length = select(tokens(), tokens(), Predicate::True).width().name("length");
  r.opp = ((r.length - indices()).name("opp_idx") - 1).name("opp_idx-1");
  r.reverse = select(indices(), r.opp, Predicate::Eq).value(tokens(), Value{}).name("reverse");
  return r;
}
inline SOp make_reverse() { return make_reverse_parts().reverse; }

}  // namespace rasp_passes_test
