// The TU reader (src/data/tu.cpp): facts and targets of small files written here, every
// malformed-file error with its file:line, and counts on the shared MUTAG / NCI1 files.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "lrnn/datasets.hpp"
#include "lrnn/syntax.hpp"
#include "shared_datasets.hpp"

namespace fs = std::filesystem;

namespace {

// A temporary TU folder named DS holding the given files (suffix -> content).
fs::path write_tu(const std::string& test, const std::map<std::string, std::string>& files) {
  fs::path dir = fs::temp_directory_path() / ("lrnn_tu_" + test) / "DS";
  fs::remove_all(dir.parent_path());
  fs::create_directories(dir);
  for (const auto& [suffix, text] : files) std::ofstream(dir / ("DS" + suffix)) << text;
  return dir;
}

// Two graphs: a 2-node graph with one undirected edge and a 1-node graph.
std::map<std::string, std::string> small_files() {
  return {{"_A.txt", "1, 2\n2, 1\n"},
          {"_graph_indicator.txt", "1\n1\n2\n"},
          {"_graph_labels.txt", "-1\n1\n"},
          {"_node_labels.txt", "0\n2\n1\n"},
          {"_edge_labels.txt", "1\n0\n"}};
}

std::string error_of(const fs::path& dir) {
  try {
    lrnn::read_tu(dir.string());
  } catch (const lrnn::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(DataTu, SmallGraphsBecomeExamplesWithOneHotFactsAndTargets) {
  lrnn::TuData d = lrnn::read_tu(write_tu("small", small_files()).string());
  ASSERT_EQ(d.examples.size(), 2u);
  EXPECT_EQ(lrnn::print_example(d.examples[0]),
            "g1 :- node(0), [1, 0, 0] x(0), node(1), [0, 0, 1] x(1), edge(0, 1), [0, 1] edge_x(0, 1), "
            "edge(1, 0), [1, 0] edge_x(1, 0).");
  EXPECT_EQ(lrnn::print_example(d.examples[1]), "g2 :- node(0), [0, 1, 0] x(0).");
  EXPECT_EQ(lrnn::print_query_line(d.queries[0]), "g1 :- 0 predict.");
  EXPECT_EQ(lrnn::print_query_line(d.queries[1]), "g2 :- 1 predict.");
  EXPECT_EQ(d.class_labels, (std::vector<long>{-1, 1}));
  EXPECT_EQ(d.node_label_width, 3);
  EXPECT_EQ(d.edge_label_width, 2);
  EXPECT_EQ(lrnn::load_tu(write_tu("small_ds", small_files()).string()).size(), 2u);
}

TEST(DataTu, MultiClassTargetsAreOneHotAndAttributesAreVectors) {
  auto files = small_files();
  files["_graph_labels.txt"] = "3\n5\n";
  files["_graph_indicator.txt"] = "1\n1\n2\n";
  files.erase("_edge_labels.txt");
  files["_node_attributes.txt"] = "0.5, 1\n-2, 3e-1\n7, 8\n";
  lrnn::TuData two = lrnn::read_tu(write_tu("attr", files).string());
  EXPECT_EQ(lrnn::print_example(two.examples[1]), "g2 :- node(0), [0, 1, 0] x(0), [7, 8] attr(0).");
  files["_graph_labels.txt"] = "3\n5\n";
  files["_graph_indicator.txt"] = "1\n2\n3\n";
  files["_graph_labels.txt"] = "3\n5\n4\n";
  files["_A.txt"] = "1, 1\n";
  lrnn::TuData three = lrnn::read_tu(write_tu("multi", files).string());
  EXPECT_EQ(lrnn::print_query_line(three.queries[1]), "g2 :- [0, 0, 1] predict.");
  EXPECT_EQ(lrnn::print_query_line(three.queries[2]), "g3 :- [0, 1, 0] predict.");
}

TEST(DataTu, MalformedFilesNameFileAndLine) {
  struct Case {
    std::string suffix, text, expected;
  };
  std::vector<Case> cases = {
      {"_A.txt", "1, 2\n2\n", "DS_A.txt:2:1: error: expected 2 column(s), found 1"},
      {"_A.txt", "1, 2\n2, x\n", "DS_A.txt:2:1: error: expected comma-separated numbers"},
      {"_A.txt", "1, 2\n2, 4\n", "DS_A.txt:2:1: error: node id 4 out of range 1..3"},
      {"_A.txt", "1, 3\n", "DS_A.txt:1:1: error: edge joins graphs 1 and 2"},
      {"_A.txt", "1, 2.5\n", "DS_A.txt:1:1: error: expected an integer"},
      // Beyond long's range (converting these to long would be undefined; fuzz_tu found it).
      {"_A.txt", "1, 1e30\n", "DS_A.txt:1:1: error: expected an integer"},
      {"_graph_indicator.txt", "1\n1\n1e300\n", "DS_graph_indicator.txt:3:1: error: expected an integer"},
      {"_node_labels.txt", "0\n-1e19\n2\n", "DS_node_labels.txt:2:1: error: expected an integer"},
      {"_graph_indicator.txt", "1\n2\n1\n", "DS_graph_indicator.txt:3:1: error: graph ids must be sorted"},
      {"_graph_indicator.txt", "1\n1\n3\n", "DS_graph_indicator.txt:3:1: error: graph ids must be sorted"},
      {"_graph_labels.txt", "1\n", "DS_graph_labels.txt:1:1: error: expected 2 rows (one per graph), found 1"},
      {"_node_labels.txt", "0\n1\n2\n3\n", "DS_node_labels.txt:4:1: error: expected 3 rows (one per node), found 4"},
      {"_edge_labels.txt", "1\n", "DS_edge_labels.txt:1:1: error: expected 2 rows (one per line of the A file)"},
      // Issue 32: graph 0 was dropped and node ids underflowed; an all-zero indicator was
      // blamed on the graph labels; NaN attributes trained to "diverged, try a smaller --lr".
      {"_graph_indicator.txt", "0\n0\n1\n", "DS_graph_indicator.txt:1:1: error: graph ids must be sorted and "
                                             "contiguous from 1: expected 1, found 0"},
      {"_graph_indicator.txt", "0\n0\n0\n", "DS_graph_indicator.txt:1:1: error: graph ids must be sorted"},
      {"_node_attributes.txt", "1\nnan\n2\n", "DS_node_attributes.txt:2:1: error: expected finite numbers, found nan "
                                              "in column 1"},
      {"_edge_attributes.txt", "1, -inf\n2, 3\n", "DS_edge_attributes.txt:1:1: error: expected finite numbers, found an "
                                                   "infinity in column 2"},
  };
  for (const Case& c : cases) {
    auto files = small_files();
    files[c.suffix] = c.text;
    std::string what = error_of(write_tu("bad", files));
    EXPECT_NE(what.find(c.expected), std::string::npos) << c.suffix << ": " << what;
  }
  auto files = small_files();
  files.erase("_A.txt");
  EXPECT_NE(error_of(write_tu("missing", files)).find("DS_A.txt: cannot read the file"), std::string::npos);
}

// Expected counts computed independently with coreutils on the shared files:
//   wc -l DS_graph_labels.txt / DS_graph_indicator.txt / DS_A.txt;  sort DS_graph_labels.txt | uniq -c;
//   awk min/max of DS_node_labels.txt (MUTAG 0..6, NCI1 1..37); MUTAG edge labels 0..3;
//   awk '$1==1' DS_graph_indicator.txt | wc -l (nodes of graph 1: MUTAG 17, NCI1 21);
//   awk -F', *' '$1<=17' MUTAG_A.txt | wc -l (A lines of MUTAG graph 1: 38).
TEST(DataTu, CountsOnMutagAndNci1) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  lrnn::TuData mutag = lrnn::read_tu("../shared/datasets/tu/MUTAG");
  EXPECT_EQ(mutag.examples.size(), 188u);
  EXPECT_EQ(mutag.nodes, 3371u);
  EXPECT_EQ(mutag.edges, 7442u);
  EXPECT_EQ(std::count(mutag.graph_class.begin(), mutag.graph_class.end(), 0), 63);  // label -1
  EXPECT_EQ(std::count(mutag.graph_class.begin(), mutag.graph_class.end(), 1), 125);
  EXPECT_EQ(mutag.node_label_width, 7);
  EXPECT_EQ(mutag.edge_label_width, 4);
  // graph 1: 17 x node facts + 17 node facts, 38 edge + 38 edge_x facts
  EXPECT_EQ(mutag.examples[0].facts.size(), 2u * 17 + 2u * 38);

  auto start = std::chrono::steady_clock::now();
  lrnn::TuData nci1 = lrnn::read_tu("../shared/datasets/tu/NCI1");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(nci1.examples.size(), 4110u);
  EXPECT_EQ(nci1.nodes, 122747u);
  EXPECT_EQ(nci1.edges, 265506u);
  EXPECT_EQ(std::count(nci1.graph_class.begin(), nci1.graph_class.end(), 0), 2053);
  EXPECT_EQ(std::count(nci1.graph_class.begin(), nci1.graph_class.end(), 1), 2057);
  EXPECT_EQ(nci1.node_label_width, 37);
  EXPECT_EQ(nci1.examples[0].facts.size(), 2u * 21 + [&] {
    size_t n = 0;
    for (const auto& f : nci1.examples[0].facts) n += f.predicate == "edge";
    return n;
  }());
  // The time is printed, not asserted: speed is the benchmarks' to check (bench/), and a
  // loaded machine took 3.2 s here.
  std::printf("NCI1 read in %.3f s\n", seconds);
}

// A part (an MPI rank's share, TuPart) builds exactly the whole read's graphs of its block,
// with the whole files' one-hot widths, even when the A file is not ordered by graph; the
// parts tile the graphs in order.
static void expect_parts_match_whole(const std::string& dir, size_t count) {
  const lrnn::TuData whole = lrnn::read_tu(dir);
  const size_t n = whole.examples.size();
  size_t built = 0;
  for (size_t index = 0; index < count; ++index) {
    const lrnn::TuData part = lrnn::read_tu(dir, "", lrnn::TuPart{index, count});
    const size_t first = part.first_graph, last = first + part.examples.size();
    EXPECT_EQ(first, built);  // the parts tile the graphs in order
    EXPECT_EQ(part.graphs_total, n);
    EXPECT_EQ(part.node_label_width, whole.node_label_width);
    EXPECT_EQ(part.edge_label_width, whole.edge_label_width);
    EXPECT_EQ(part.class_labels, whole.class_labels);
    ASSERT_EQ(part.examples.size(), last - first);
    for (size_t k = 0; k < part.examples.size(); ++k) {
      EXPECT_EQ(lrnn::print_example(part.examples[k]), lrnn::print_example(whole.examples[first + k]));
      EXPECT_EQ(lrnn::print_query_line(part.queries[k]), lrnn::print_query_line(whole.queries[first + k]));
    }
    built += part.examples.size();
  }
  EXPECT_EQ(built, n);
}

TEST(DataTu, PartsBuildTheirBlockOfGraphs) {
  auto files = small_files();
  // Three graphs; the A file lists graph 3's edge between graph 1's, with edge attributes.
  files["_graph_indicator.txt"] = "1\n1\n2\n3\n3\n";
  files["_graph_labels.txt"] = "-1\n1\n1\n";
  files["_node_labels.txt"] = "0\n2\n1\n5\n0\n";
  files["_A.txt"] = "1, 2\n4, 5\n2, 1\n3, 3\n";
  files["_edge_labels.txt"] = "1\n3\n0\n2\n";
  files["_edge_attributes.txt"] = "0.5\n4.5\n1.5\n3.5\n";
  files["_node_attributes.txt"] = "1, 1\n2, 2\n3, 3\n4, 4\n5, 5\n";
  const std::string dir = write_tu("parts", files).string();
  for (size_t count : {1, 2, 3, 4}) expect_parts_match_whole(dir, count);
  // Nodes per graph 2, 1, 2 (costs 3, 2, 3 of 8): parts of 3 are graphs {1}, {2}, {3}.
  const lrnn::TuData last = lrnn::read_tu(dir, "", lrnn::TuPart{2, 3});
  ASSERT_EQ(last.examples.size(), 1u);
  EXPECT_EQ(last.first_graph, 2u);
  EXPECT_EQ(lrnn::print_example(last.examples[0]),
            "g3 :- node(0), [0, 0, 0, 0, 0, 1] x(0), [4, 4] attr(0), node(1), [1, 0, 0, 0, 0, 0] x(1), "
            "[5, 5] attr(1), edge(0, 1), [0, 0, 0, 1] edge_x(0, 1), [4.5] edge_attr(0, 1).");
  // A malformed node attribute of graph 3 is found by the part that holds graph 3 only,
  // naming its file:line; the other parts never parse that line.
  files["_node_attributes.txt"] = "1, 1\n2, 2\n3, 3\n4, x\n5, 5\n";
  const std::string bad = write_tu("parts_bad", files).string();
  EXPECT_NO_THROW(lrnn::read_tu(bad, "", lrnn::TuPart{0, 2}));
  try {
    lrnn::read_tu(bad, "", lrnn::TuPart{1, 2});
    ADD_FAILURE() << "part 1 read a malformed line";
  } catch (const lrnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("DS_node_attributes.txt:4:1: error: expected comma-separated numbers"),
              std::string::npos)
        << e.what();
  }
}

TEST(DataTu, PartsOfMutag) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  for (size_t count : {2, 3}) expect_parts_match_whole("../shared/datasets/tu/MUTAG", count);
  // With margins a part also holds ceil(188 / 2 / 16) = 6 graphs of its neighbour's block.
  const lrnn::TuData whole = lrnn::read_tu("../shared/datasets/tu/MUTAG");
  const lrnn::TuData block = lrnn::read_tu("../shared/datasets/tu/MUTAG", "", lrnn::TuPart{1, 2});
  const lrnn::TuData held = lrnn::read_tu("../shared/datasets/tu/MUTAG", "", lrnn::TuPart{1, 2, true});
  EXPECT_EQ(held.owned_first, block.first_graph);
  EXPECT_EQ(held.owned_last, 188u);
  EXPECT_EQ(held.first_graph, block.first_graph - 6);
  ASSERT_EQ(held.examples.size(), block.examples.size() + 6);
  for (size_t k = 0; k < held.examples.size(); ++k)
    EXPECT_EQ(lrnn::print_example(held.examples[k]), lrnn::print_example(whole.examples[held.first_graph + k]));
}

// What `lrnn convert tu` writes parses back to the same examples and queries.
TEST(DataTu, PrintedTextParsesBackToTheSameExamples) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  lrnn::TuData d = lrnn::read_tu("../shared/datasets/tu/MUTAG");
  std::string examples, queries;
  for (const auto& e : d.examples) examples += lrnn::print_example(e) + "\n";
  for (const auto& q : d.queries) queries += lrnn::print_query_line(q) + "\n";
  EXPECT_EQ(lrnn::parse_examples(examples), d.examples);
  EXPECT_EQ(lrnn::parse_queries(queries), d.queries);
}

TEST(DataFolds, StratifiedFoldsBalanceEveryClassAndAreDeterministic) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  lrnn::TuData mutag = lrnn::read_tu("../shared/datasets/tu/MUTAG");  // 63 of class 0, 125 of class 1
  std::vector<int> fold = lrnn::stratified_folds(mutag.graph_class, 10, 7);
  EXPECT_EQ(fold, lrnn::stratified_folds(mutag.graph_class, 10, 7));
  EXPECT_NE(fold, lrnn::stratified_folds(mutag.graph_class, 10, 8));
  for (int f = 0; f < 10; ++f) {
    int n0 = 0, n1 = 0;
    for (size_t s = 0; s < fold.size(); ++s) {
      n0 += fold[s] == f && mutag.graph_class[s] == 0;
      n1 += fold[s] == f && mutag.graph_class[s] == 1;
    }
    EXPECT_TRUE(n0 == 6 || n0 == 7) << "fold " << f << " class 0: " << n0;    // 63 / 10
    EXPECT_TRUE(n1 == 12 || n1 == 13) << "fold " << f << " class 1: " << n1;  // 125 / 10
    EXPECT_TRUE(n0 + n1 == 18 || n0 + n1 == 19) << "fold " << f;              // 188 / 10
  }
  EXPECT_THROW(lrnn::stratified_folds({0, 1, 0}, 4), lrnn::Error);
  EXPECT_THROW(lrnn::stratified_folds({0, 1, 0}, 1), lrnn::Error);
}

// Issue 32: `lrnn convert tu .` looked for "./._A.txt": "." and "DS/." name the folder DS.
TEST(DataTu, TheDatasetIsNamedByItsFolderAlsoWhenWrittenAsDot) {
  const fs::path dir = write_tu("dot", small_files());
  EXPECT_EQ(lrnn::read_tu((dir / ".").string()).examples.size(), 2u);
  const fs::path cwd = fs::current_path();
  fs::current_path(dir);
  const size_t examples = lrnn::read_tu(".").examples.size();
  fs::current_path(cwd);
  EXPECT_EQ(examples, 2u);
}
