// A rank's share of one graph of arrays (src/data/graph_arrays.cpp, graph_from_arrays_share):
// the partition of its dataset, which holds neither the graph's facts nor its queries'
// literals, is the whole graph's, fact for fact and query for query, while the rank builds
// only its part; its query splits are the whole graph's; anything else that would read the
// facts is refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "api/dataset_impl.hpp"
#include "data/array_share.hpp"
#include "lrnn/datasets.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/model.hpp"
#include "train/partition.hpp"

namespace {

using namespace lrnn;

// A width x height grid (each node's 4 neighbours, both directions), 2 features and a class
// per node: radius-2 balls around half of it stay well under the whole graph.
struct Grid {
  size_t width = 12, height = 5;
  std::vector<double> x;
  std::vector<int64_t> edge_index, y;
  Grid() {
    const size_t n = width * height;
    std::vector<int64_t> src, dst;
    const auto link = [&](size_t a, size_t b) {
      src.insert(src.end(), {int64_t(a), int64_t(b)});
      dst.insert(dst.end(), {int64_t(b), int64_t(a)});
    };
    for (size_t r = 0; r < height; ++r)
      for (size_t c = 0; c < width; ++c) {
        if (c + 1 < width) link(r * width + c, r * width + c + 1);
        if (r + 1 < height) link(r * width + c, (r + 1) * width + c);
      }
    edge_index = src;
    edge_index.insert(edge_index.end(), dst.begin(), dst.end());
    for (size_t i = 0; i < n; ++i) {
      x.insert(x.end(), {double(i % 7) / 4, -double(i % 3)});
      y.push_back(int64_t(i % 2));
    }
  }
  GraphArrays arrays() const {
    GraphArrays a;
    a.x = {ArrayView::Type::Float64, x.data(), {width * height, 2}};
    a.edge_index = {ArrayView::Type::Int64, edge_index.data(), {2, edge_index.size() / 2}};
    a.y = ArrayView{ArrayView::Type::Int64, y.data(), {width * height}};
    return a;
  }
};

std::vector<Literal> facts_of(const train::SampleStore& store) { return store.materialize().at(0).example.facts; }

TEST(DataGraphShare, ARanksPartIsTheWholeGraphsPartFactForFact) {
  const Grid grid;
  const Dataset whole = graph_from_arrays(grid.arrays()).dataset;
  const Dataset share = data::array_graph_share(grid.arrays(), {}, "grid", {}).dataset;
  ASSERT_NE(share.impl().part_source, nullptr);
  // The dataset holds neither facts nor query literals: it counts the queries.
  EXPECT_EQ(share.impl().samples.fact_count(0), 0u);
  EXPECT_TRUE(share.impl().samples.without_facts()[0].queries.empty());
  EXPECT_EQ(share.num_queries(), whole.num_queries());
  EXPECT_EQ(share.without_facts().num_queries(), whole.num_queries());
  const train::PartSource& source = *share.impl().part_source;
  EXPECT_EQ(source.fact_predicates(), whole.impl().samples.fact_predicates());
  for (const bool metis : {true, false})
    for (const bool ghosts : {true, false})
      for (int rank = 0; rank < 2; ++rank) {
        SCOPED_TRACE("rank " + std::to_string(rank) + (metis ? " metis" : " hash") + (ghosts ? " ghosts" : " halo"));
        const train::SamplePartition a = train::partition_sample(whole.impl().samples, 2, rank, 2, metis, ghosts);
        const train::SamplePartition b =
            train::partition_sample(share.impl().samples, 2, rank, 2, metis, ghosts, &source);
        EXPECT_EQ(b.query_of, a.query_of);
        EXPECT_EQ(b.owners, a.owners);
        EXPECT_EQ(b.stats.held_facts, a.stats.held_facts);
        EXPECT_EQ(b.stats.cut_facts, a.stats.cut_facts);
        EXPECT_EQ(b.stats.held_constants, a.stats.held_constants);
        // A part of most of the graph (scattered hash owners, all of them seeds with ghosts) is
        // grounded from the whole store itself; else it is a copy of the kept facts.
        if (!a.whole) EXPECT_TRUE(facts_of(b.store) == facts_of(a.store));
        EXPECT_FALSE(b.whole);
        EXPECT_EQ(b.store.fact_count(0), b.stats.held_facts);
        EXPECT_TRUE(b.store.without_facts()[0].queries == (a.whole ? a.head : a.store.without_facts()[0]).queries);
        if (ghosts) EXPECT_TRUE(facts_of(b.probe) == facts_of(a.probe));
        // The whole graph's store was built before the part, the share's part alone.
        const uint64_t probe = ghosts ? b.probe.fact_count(0) : 0;
        EXPECT_EQ(a.stats.built_facts, a.stats.facts + (a.whole ? 0 : a.stats.held_facts) + probe);
        EXPECT_EQ(b.stats.built_facts, b.stats.held_facts + probe);
        if (metis) EXPECT_LT(b.stats.held_facts, b.stats.facts * 3 / 4);
      }
}

TEST(DataGraphShare, WhatWouldReadTheFactsIsRefused) {
  const Grid grid;
  const Dataset share = data::array_graph_share(grid.arrays(), {}, "grid", {}).dataset;
  const auto refused = [](const auto& call) {
    try {
      call();
    } catch (const Error& e) {
      return std::string(e.what()).find("a rank's share of one graph") != std::string::npos;
    }
    return false;
  };
  EXPECT_TRUE(refused([&] { share.subset({0}); }));
  EXPECT_TRUE(refused([&] { share.split(0.5); }));
  EXPECT_TRUE(refused([&] { share.with_learnable_facts(); }));
  Model model(Template::from_string("predict(X) :- {1,2} x(X).\n"));
  EXPECT_TRUE(refused([&] { model.train(share); }));  // outside an MPI job: no partition to build
  // A query split splits the queries the share counts, as the whole graph's, and stays a share.
  const Dataset split = share.with_query_split(0.6, 0.2, 0.2, 1);
  EXPECT_NE(split.impl().part_source, nullptr);
  EXPECT_TRUE(split.has_query_split());
  const Dataset whole = graph_from_arrays(grid.arrays()).dataset;
  EXPECT_EQ(split.query_splits(), whole.with_query_split(0.6, 0.2, 0.2, 1).query_splits());
  EXPECT_EQ(split.without_facts().query_splits(), split.query_splits());
  EXPECT_FALSE(share.with_query_splits(std::vector<QuerySplit>(share.num_queries())).has_query_split());  // all Train
  EXPECT_THROW(share.with_query_splits({QuerySplit::Test}), Error);
}

}  // namespace
