// Dataset::load_share: an MPI rank parses only its block of an examples file (and of its
// queries file), docs/distributed.md.
#include <optional>

#include "api/dataset_impl.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/model.hpp"
#include "syntax/statements.hpp"
#include "train/distributed.hpp"

namespace lrnn {

namespace {

// Statements [first, last) of `index`, parsed; the parser must find one per statement.
template <class Parse>
auto parse_block(const syntax::StatementIndex& index, size_t first, size_t last, Parse parse) {
  decltype(parse(index.file)) out;
  if (first == last) return out;
  out = parse(syntax::statements_source(index, first, last));
  if (out.size() != last - first)
    throw Error(ErrorKind::Runtime, index.file->name + ": statements " + std::to_string(first) + ".." +
                                        std::to_string(last) + " parsed as " + std::to_string(out.size()) +
                                        " (the statement index and the parser disagree)");
  return out;
}

// Rank w's share when each example's block can be read alone (example i pairs with query line
// i, or holds its own queries); nullopt when the whole files are needed: named query lines,
// one example for every query line (one sample, partitioned by its constants afterwards) and
// unequal counts (an error the pairing reports). The files' text and statement index live
// in this scope only, so that whoever reads the whole files does not hold them meanwhile
// (a 200k-node graph's 74 MB of text, a quarter of a rank's memory while it parsed).
std::optional<Dataset> load_blocks(const std::string& examples_path, const std::string& queries_path) {
  const train::dist::World& w = train::dist::world();
  const syntax::StatementIndex examples = syntax::index_statements(syntax::read_source_file(examples_path));
  std::optional<syntax::StatementIndex> queries;
  if (!queries_path.empty()) queries = syntax::index_statements(syntax::read_source_file(queries_path));
  const size_t n = examples.size();
  const bool by_index = n > 1 && (!queries || (queries->size() == n && !queries->any_named()));
  if (!by_index) return std::nullopt;
  // Blocks of about equal text (bytes per example): the work of an example grows with it.
  std::vector<uint64_t> bytes(n);
  for (size_t i = 0; i < n; ++i)
    bytes[i] = (i + 1 < n ? examples.starts[i + 1].offset : examples.file->text.size()) - examples.starts[i].offset;
  const train::dist::ShardPlan plan = train::dist::shard_with_margin(bytes, w.rank, w.size);
  const train::dist::ShardRange held = plan.held;
  std::vector<ExampleAst> mine = parse_block(examples, held.first, held.last, syntax::parse_examples_file);
  std::vector<QueryLineAst> my_queries;
  if (queries) my_queries = parse_block(*queries, held.first, held.last, syntax::parse_queries_file);
  const size_t parsed = mine.size();
  return Dataset::share_from_ast(std::move(mine), my_queries, held.first, n, parsed, plan.owned.first, plan.owned.last);
}

}  // namespace

Dataset Dataset::share_from_ast(std::vector<ExampleAst> examples, const std::vector<QueryLineAst>& queries,
                                size_t first, size_t total, size_t parsed, size_t owned_first, size_t owned_last) {
  std::vector<train::Sample> samples = train::pair_samples(std::move(examples), queries);
  if (first + samples.size() > total || owned_first < first || owned_last > first + samples.size() ||
      owned_first > owned_last)
    throw Error(ErrorKind::Semantic, "a share of samples " + std::to_string(first) + ".." +
                                         std::to_string(first + samples.size()) + " of a dataset of " +
                                         std::to_string(total) + " owning samples " + std::to_string(owned_first) +
                                         ".." + std::to_string(owned_last));
  return Impl::make_share(train::SampleStore(std::move(samples)), parsed, first, total, owned_first, owned_last);
}

Dataset Dataset::load_share(const std::string& examples_path, const std::string& queries_path) {
  if (train::dist::world().size > 1)
    if (std::optional<Dataset> share = load_blocks(examples_path, queries_path)) return std::move(*share);
  return load(examples_path, queries_path);
}

}  // namespace lrnn
