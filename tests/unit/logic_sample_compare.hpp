// Two groundings of one example that must be the same GroundSample: every array equal
// (atom numbering, ground rules and their order, bindings, query atoms, stats).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "logic/grounding.hpp"

namespace lrnn::testutil {

inline void expect_same_sample(const logic::GroundSample& a, const logic::GroundSample& b) {
  EXPECT_EQ(a.atom_pred, b.atom_pred);
  EXPECT_EQ(a.atom_args_begin, b.atom_args_begin);
  EXPECT_EQ(a.atom_args, b.atom_args);
  EXPECT_EQ(a.atom_example_fact, b.atom_example_fact);
  EXPECT_EQ(a.atom_template_fact, b.atom_template_fact);
  EXPECT_EQ(a.computed_values, b.computed_values);
  EXPECT_EQ(a.query_atoms, b.query_atoms);
  EXPECT_EQ(a.pair_blocks.size(), b.pair_blocks.size());
  EXPECT_EQ(a.stats.facts, b.stats.facts);
  EXPECT_EQ(a.stats.derived, b.stats.derived);
  EXPECT_EQ(a.stats.ground_rules, b.stats.ground_rules);
  EXPECT_EQ(a.rules.size(), b.rules.size());
  for (size_t k = 0; k < std::min(a.rules.size(), b.rules.size()); ++k) {
    SCOPED_TRACE("rule set " + std::to_string(k));
    EXPECT_EQ(a.rules[k].rule, b.rules[k].rule);
    EXPECT_EQ(a.rules[k].n_inputs, b.rules[k].n_inputs);
    EXPECT_EQ(a.rules[k].n_vars, b.rules[k].n_vars);
    EXPECT_EQ(a.rules[k].head, b.rules[k].head);
    EXPECT_EQ(a.rules[k].inputs, b.rules[k].inputs);
    EXPECT_EQ(a.rules[k].bindings, b.rules[k].bindings);
    EXPECT_EQ(a.rules[k].level, b.rules[k].level);
  }
}

}  // namespace lrnn::testutil
