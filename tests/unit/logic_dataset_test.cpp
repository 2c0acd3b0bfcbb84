// Pairing examples with queries, and grounding the mutagenesis molecules with the
// 3-layer message-passing template of bench/templates (counts checked against an
// independent count of each molecule's facts).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <set>

#include "logic/grounder.hpp"
#include "logic/program.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/logic.hpp"
#include "lrnn/syntax.hpp"
#include "shared_datasets.hpp"

namespace {

using namespace lrnn;
using namespace lrnn::logic;

TEST(LogicPairing, FollowsTheFourRulesOfTheLanguage) {
  auto ex = parse_examples("a(1).\na(2).\na(3).\n");
  auto three = parse_queries("1.0 q.\n0.0 q.\n1.0 r.\n");
  auto p = pair_queries(ex, three);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[2].example, 2u);
  ASSERT_EQ(p[2].queries.size(), 1u);
  EXPECT_EQ(p[2].queries[0].predicate, "r");
  // One example serves every query line.
  auto single = pair_queries(parse_examples("a(1).\n"), three);
  ASSERT_EQ(single.size(), 3u);
  for (const auto& s : single) EXPECT_EQ(s.example, 0u);
  // Named lines pair by id, whatever the order.
  auto named_ex = parse_examples("m1 :- a(1).\nm2 :- a(2).\n");
  auto named = pair_queries(named_ex, parse_queries("m2 :- 1.0 q, 0.0 r.\nm1 :- 0.0 q.\n"));
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].example, 1u);
  EXPECT_EQ(named[0].queries.size(), 2u);
  EXPECT_EQ(named[1].example, 0u);
  // Labelled examples carry their own query.
  auto labelled = pair_queries(parse_examples("<1> xor :- <0> a, <1> b.\n<0> xor :- <1> a, <1> b.\n"), {});
  ASSERT_EQ(labelled.size(), 2u);
  ASSERT_EQ(labelled[1].queries.size(), 1u);
  EXPECT_EQ(labelled[1].queries[0].predicate, "xor");
  // Mismatches are errors pointing at a query line.
  EXPECT_THROW(pair_queries(ex, parse_queries("1.0 q.\n0.0 q.\n")), Error);
  EXPECT_THROW(pair_queries(named_ex, parse_queries("m3 :- 1.0 q.\n")), Error);
}

const std::string kMutagenesis = std::string(LRNN_DATASETS_DIR) + "/neuralogic/molecules/mutagenesis";
const std::string kTemplate = std::string(LRNN_SOURCE_DIR) + "/bench/templates/mutagenesis_mp3.lrnn";

// Independent count from the facts: atoms with an element, bonds, bond-type facts.
struct MoleculeCounts {
  size_t atoms = 0, bonds = 0, bond_types = 0, facts = 0;
};
MoleculeCounts count_molecule(const ExampleAst& e) {
  std::set<std::string> facts, atoms, bonds, types;
  const std::set<std::string> elements{"c", "o", "h", "n", "cl", "f", "br", "i"};
  for (const Literal& f : e.facts) {
    std::string args;
    for (const Term& t : f.args) args += t.text + ",";
    facts.insert(f.predicate + "(" + args);
    if (elements.count(f.predicate)) atoms.insert(args);
    if (f.predicate == "bond") bonds.insert(args);
    if (f.predicate.rfind("b_", 0) == 0) types.insert(f.predicate + args);
  }
  return {atoms.size(), bonds.size(), types.size(), facts.size()};
}

TEST(LogicMutagenesis, GroundRuleCountsMatchAnIndependentCount) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  Program program(load_template(kTemplate));
  auto examples = load_examples(kMutagenesis + "/examples.txt");
  auto queries = load_queries(kMutagenesis + "/queries.txt");
  auto pairs = pair_queries(examples, queries);
  ASSERT_EQ(pairs.size(), 188u);
  size_t total = 0;
  for (const auto& pr : pairs) {
    GroundSample s = ground(program, examples[pr.example], pr.queries);
    MoleculeCounts c = count_molecule(examples[pr.example]);
    // Embeddings (one per atom, one per typed bond), three layers of (message per bond +
    // self per atom), and the readout over atoms.
    EXPECT_EQ(s.stats.ground_rules, c.atoms + c.bond_types + 3 * (c.bonds + c.atoms) + c.atoms)
        << "molecule " << pr.example + 1;
    EXPECT_EQ(s.stats.facts, c.facts);
    ASSERT_EQ(s.query_atoms.size(), 1u);
    EXPECT_EQ(s.query_atoms[0].size(), 1u);
    total += s.stats.ground_rules;
  }
  EXPECT_EQ(total, 61166u);
}

TEST(LogicMutagenesis, GroundManyOnTwoThreadsMatchesOneByOne) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  Program program(load_template(kTemplate));
  auto examples = load_examples(kMutagenesis + "/examples.txt");
  std::vector<const ExampleAst*> ptrs;
  std::vector<std::vector<Literal>> queries;
  for (size_t i = 0; i < 40; ++i) ptrs.push_back(&examples[i]), queries.push_back({parse_literal("predict")});
  auto many = ground_many(program, ptrs, queries, {}, 2);
  ASSERT_EQ(many.size(), 40u);
  for (size_t i = 0; i < 40; ++i) {
    GroundSample one = ground(program, examples[i], queries[i]);
    EXPECT_EQ(many[i].stats.ground_rules, one.stats.ground_rules);
    EXPECT_EQ(many[i].atom_pred, one.atom_pred);
    ASSERT_EQ(many[i].rules.size(), one.rules.size());
    for (size_t r = 0; r < one.rules.size(); ++r) EXPECT_EQ(many[i].rules[r].inputs, one.rules[r].inputs);
  }
  GroundingOptions tiny;
  tiny.max_ground_rules = 10;
  EXPECT_THROW(ground_many(program, ptrs, queries, tiny, 2), Error);
}

TEST(LogicMutagenesis, FirstTwoMoleculesCountedByHand) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  Program program(load_template(kTemplate));
  auto examples = load_examples(kMutagenesis + "/examples.txt");
  auto predict = parse_literal("predict");
  // Molecule 1 (d59...): 34 atoms, 76 directed bonds, 38 typed bond ids.
  // 34 + 38 + 3 * (76 + 34) + 34 = 436 ground rules; derived atoms: 34 atom_embed +
  // 38 bond_embed + 3 * 34 layer atoms + predict = 175.
  GroundSample m1 = ground(program, examples[0], {predict});
  EXPECT_EQ(m1.stats.ground_rules, 436u);
  EXPECT_EQ(m1.stats.derived, 175u);
  EXPECT_EQ(m1.stats.facts, 148u);
  // Molecule 2: 22 atoms, 48 bonds, 24 typed ids: 22 + 24 + 3 * 70 + 22 = 278.
  GroundSample m2 = ground(program, examples[1], {predict});
  EXPECT_EQ(m2.stats.ground_rules, 278u);
  EXPECT_EQ(m2.stats.derived, 113u);
}

TEST(LogicMutagenesis, GroundCommandPrintsTotals) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  std::string cmd = std::string(LRNN_CLI_PATH) + " ground " + kTemplate + " --examples " + kMutagenesis +
                    "/examples.txt --queries " + kMutagenesis + "/queries.txt --stats 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  EXPECT_EQ(WEXITSTATUS(pclose(pipe)), 0);
  EXPECT_NE(out.find("example 1: facts 148, derived 175, ground rules 436 ["), std::string::npos);
  EXPECT_NE(out.find("total: 188 examples, facts 20622, derived 25003, ground rules 61166,"), std::string::npos)
      << out.substr(out.size() > 2000 ? out.size() - 2000 : 0);
}

}  // namespace
