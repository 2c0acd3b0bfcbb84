// zoo::seq2seq and zoo::seq2seq_parts: the two parts (encoder into the memory, decoder reading
// it as input facts) compute the whole template's logits, with every part's weight one of the
// whole model's and every torch key mapped once; a bad size is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "lrnn/diagnostics.hpp"
#include "lrnn/zoo.hpp"

namespace {

using namespace lrnn;

std::vector<double> one_hot(const std::vector<int>& tokens, int vocab) {
  std::vector<double> x(tokens.size() * size_t(vocab), 0.0);
  for (size_t i = 0; i < tokens.size(); ++i) x[i * vocab + tokens[i]] = 1.0;
  return x;
}

TEST(ZooSeq2Seq, PartsComputeTheWholeModelsLogits) {
  const int V = 7, d = 8;
  for (bool tie : {true, false}) {
    zoo::Seq2SeqOptions o;
    o.max_len = 6;
    o.tie_output = tie;
    const zoo::Module whole = zoo::seq2seq(V, d, 2, 1, 2, 16, o);
    const zoo::Seq2SeqParts parts = zoo::seq2seq_parts(V, d, 2, 1, 2, 16, o);
    zoo::SequenceModel all(whole, 3), enc(parts.encoder, 1), dec(parts.decoder, 1);
    // Random weights (norms too), copied by name into the parts.
    std::mt19937 rng(5);
    std::normal_distribution<double> g(0.0, 0.5);
    std::set<std::string> seen;
    for (const std::string& name : all.parameter_names()) {
      std::vector<double> w = all.parameter(name);
      for (double& v : w) v += g(rng);
      all.set_parameter(name, w);
    }
    for (zoo::SequenceModel* part : {&enc, &dec})
      for (const std::string& name : part->parameter_names()) {
        part->set_parameter(name, all.parameter(name));  // throws if the whole model lacks it
        seen.insert(name);
      }
    EXPECT_EQ(seen.size(), all.parameter_names().size());
    const std::vector<int> src = {3, 4, 5, 6, 2}, tgt = {1, 6, 5, 4};
    const std::vector<double> sx = one_hot(src, V), tx = one_hot(tgt, V);
    const std::vector<double> logits = all.forward({{"src", sx.data(), 5, V}, {"tgt", tx.data(), 4, V}}, 4);
    const std::vector<double> memory = enc.forward({{"src", sx.data(), 5, V}}, 5);
    ASSERT_EQ(memory.size(), size_t(5 * d));
    const std::vector<double> split =
        dec.forward({{"tgt", tx.data(), 4, V}, {parts.decoder.memory, memory.data(), 5, d}}, 4);
    ASSERT_EQ(split.size(), logits.size());
    double spread = 0;
    for (size_t k = 0; k < logits.size(); ++k) {
      EXPECT_NEAR(split[k], logits[k], 1e-12) << "tie " << tie << " entry " << k;
      spread = std::max(spread, std::abs(logits[k] - logits[0]));
    }
    EXPECT_GT(spread, 0.1);  // the logits are not all alike
    // Every torch key is read once: the parts' mappings together are the whole model's.
    std::multiset<std::string> keys;
    for (const auto& t : whole.torch) keys.insert(t.weight + "<-" + t.torch_name);
    std::multiset<std::string> part_keys;
    for (const zoo::Module* m : {&parts.encoder, &parts.decoder})
      for (const auto& t : m->torch)
        if (t.weight != "s2s_emb" || m == &parts.encoder) part_keys.insert(t.weight + "<-" + t.torch_name);
    if (!tie)  // the untied projection is the decoder's alone
      EXPECT_EQ(keys.count("s2s_out_w<-out.weight"), 1u);
    EXPECT_EQ(part_keys, keys);
  }
}

TEST(ZooSeq2Seq, RefusesBadSizesByName) {
  zoo::Seq2SeqOptions o;
  EXPECT_THROW(zoo::seq2seq(1, 8, 2, 1, 1, 16, o), Error);
  EXPECT_THROW(zoo::seq2seq(7, 9, 2, 1, 1, 16, o), Error);
  EXPECT_THROW(zoo::seq2seq(7, 8, 2, 0, 1, 16, o), Error);
  o.target = o.source;
  try {
    zoo::seq2seq(7, 8, 2, 1, 1, 16, o);
    ADD_FAILURE() << "accepted one predicate for source and target";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("two different names"), std::string::npos) << e.what();
  }
}

}  // namespace
