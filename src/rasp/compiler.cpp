// The RASP weight compiler: a program becomes the weights of a transformer whose forward
// pass (compiled_model.cpp) reproduces the interpreter on every input up to max_len.
//
// How (docs/rasp.md, "Weight compiler"; the passes are listed in passes/passes.hpp, one file
// each, and this file only runs them in order):
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
#include <set>

#include "lrnn/rasp.hpp"
#include "rasp/passes/passes.hpp"

namespace lrnn::rasp {

namespace passes {

std::pair<Encoded, Lookups> observe_and_split(const CompileInput& input) {
  // An element-wise s-op is one MLP over the attention outputs it depends on, unless
  // that MLP would need two numerical inputs non-linearly: then its element-wise
  // children get their own MLPs (an earlier layer) and everything is observed again.
  Materialization materialization;
  while (true) {
    Encoded encoded = choose_encodings(observe(input, materialization));
    Lookups lookups = split_lookups(encoded);
    if (!lookups.resplit) return {std::move(encoded), std::move(lookups)};
    materialization = std::move(lookups.next);
  }
}

CompiledModel run_passes(const CompileInput& input) {
  auto [encoded, lookups] = observe_and_split(input);
  Scheduled scheduled = schedule(choose_readings(std::move(encoded), std::move(lookups)));
  const int analyzed_layers = analyze(input.output).layers;
  CompiledModel model = build_layers(layout(std::move(scheduled)));
  model.program = input.output;
  model.convention = input.options.convention;
  model.vocab = input.vocab;
  model.max_len = input.max_len;
  model.causal = input.options.causal;
  model.analyzed_layers = analyzed_layers;
  return model;
}

}  // namespace passes

CompiledModel compile(const SOp& output, const std::vector<Value>& vocab, int max_len, const CompileOptions& options) {
  if (!output.node()) throw Error(ErrorKind::Semantic, "cannot compile an empty s-op");
  if (max_len < 1) throw Error(ErrorKind::Semantic, "max_len must be at least 1");
  if (vocab.empty()) throw Error(ErrorKind::Semantic, "the vocabulary is empty");
  passes::CompileInput input;
  input.output = output;
  input.max_len = max_len;
  input.options = options;
  if (input.options.convention == Convention::Default) input.options.convention = Convention::Sum;
  std::set<std::string> seen;
  for (const auto& v : vocab) {
    if (is_none(v)) throw Error(ErrorKind::Semantic, "the vocabulary holds None; tokens are defined values");
    if (seen.insert(passes::key_of(v)).second) input.vocab.push_back(v);
  }
  input.order = topological_order(output.node());
  return passes::run_passes(input);
}

}  // namespace lrnn::rasp
