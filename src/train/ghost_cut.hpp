// A partitioned sample cut at its ghost atoms (docs/distributed.md "One sample over many
// ranks"): between grounding and neuralizing a rank's part, the ground rules whose head it
// does not own are dropped, and every derived atom owned elsewhere that a kept rule reads
// becomes a *ghost*, an input fact of the network whose value the owner sends each pass
// (train/ghost_exchange.hpp). Every atom is then computed by one rank only.
//
// Depths: a derived atom's depth in the network becomes its predicate's level (1 + the
// highest level its rules read; facts 0), the same on every rank. A ghost of level L is
// read only by atoms of higher levels, so a pass runs the steps up to depth L, exchanges
// the level-L ghosts, and runs on.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "logic/grounding.hpp"
#include "logic/program.hpp"
#include "lrnn/ast.hpp"
#include "neural/network.hpp"
#include "neural/template_model.hpp"
#include "train/engine.hpp"

namespace lrnn::train {

// The level of each predicate a rule derives ("name/arity"; 1 + the highest level of the
// derived predicates its rules read), or an empty map when the template is recursive or a
// rule reads a predicate of its own level (then no layer order exists to exchange in).
std::map<std::string, uint32_t> predicate_levels(const TemplateAst& tmpl);
// The predicates the queries' predicates read, transitively, themselves included.
std::set<std::string> query_closure(const TemplateAst& tmpl, const std::vector<std::string>& query_predicates);

// The value shape of each derived predicate of `probe`'s network (one sample), as its plan
// infers them ("name/arity").
std::unordered_map<std::string, neural::Shape> ghost_shapes(const neural::TemplateModel& model,
                                                           const neural::SampleNetwork& probe);

// Moves the facts `ghost_facts` of `net` after all its others (their order kept), which keep
// their values; the ghosts hold none (fact_data ends where they begin: each pass's exchange
// writes their values). Returns where the ghosts' values begin (the data before take no
// gradient: exec::PlanOptions::data_gradients_from). No learnable example facts.
uint32_t ghost_facts_last(neural::SampleNetwork& net, const std::vector<uint32_t>& ghost_facts);

class GhostCut final : public GroundRewrite {
 public:
  // `levels`: predicate_levels of the template (not empty); `owners`: each constant's rank by
  // its key (train/partition.hpp constant keys); `shapes`: each derived predicate's value
  // shape ("name/arity"; from one query's plan, ghost_shapes), which its ghosts take.
  GhostCut(const logic::Program& program, std::map<std::string, uint32_t> levels, const TemplateAst& tmpl,
           const std::vector<std::string>& query_predicates, const std::unordered_map<std::string, int>& owners,
           int rank, std::unordered_map<std::string, neural::Shape> shapes);

  void before_neuralize(logic::GroundSample& ground, std::unique_ptr<logic::FactSource>& facts) override;
  void after_neuralize(logic::GroundSample& ground, neural::SampleNetwork& net) override;

  // After neuralizing: the ghosts the network reads (local atom ids; their keys, owners,
  // levels and value entries), and the owned derived atoms other ranks may ask for (by key).
  struct Ghost {
    std::string key;  // the atom as lrnn prints it: h1(n17)
    int owner = 0;
    uint32_t level = 0;
    uint32_t local = 0;
  };
  std::vector<Ghost> ghosts;
  struct Owned {
    uint32_t local = 0;
    uint32_t level = 0;
  };
  std::unordered_map<std::string, Owned> owned;
  // The value offset (in the plan's data) from which the ghosts' values lie: the data facts
  // before it take no gradient (exec::PlanOptions::data_gradients_from).
  uint32_t data_gradients_from = 0;

 private:
  int owner_of_symbol(uint32_t symbol);
  void ghosts_last(neural::SampleNetwork& net, const std::vector<uint32_t>& ghost_facts);
  std::string predicate_key(uint32_t program_predicate) const;  // "name/arity"
  uint32_t level_of(uint32_t program_predicate) const;

  const logic::Program& program_;
  const std::unordered_map<std::string, int>& owners_;
  std::unordered_map<std::string, neural::Shape> shapes_;
  int rank_;
  std::map<std::string, uint32_t> levels_;
  std::set<std::string> closure_;
  int owner_by_name(uint32_t symbol) const;  // the owners' entry of the symbol's text
  static constexpr int kUnasked = -2;       // owner_table_: not looked up yet
  std::vector<int> owner_table_;            // by interned symbol id
  static constexpr int64_t kIntTableSize = int64_t{1} << 26;
  std::vector<int> int_owner_table_;        // by integer, those in [0, kIntTableSize)
  std::unordered_map<uint32_t, int> owner_cache_;  // other tagged integers
  std::vector<uint32_t> ghost_ground_;  // ground ids of the ghosts, before neuralizing
  std::vector<uint32_t> root_ground_;   // owned derived atoms kept as roots
};

}  // namespace lrnn::train
