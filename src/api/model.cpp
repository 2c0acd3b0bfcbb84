// The public API (include/lrnn/model.hpp) over the training engine.
#include "lrnn/model.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <iterator>
#include <map>
#include <mutex>

#include "exec/plan.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/memory.hpp"
#include "lrnn/syntax.hpp"
#include "api/dataset_impl.hpp"
#include "api/fact_rows.hpp"
#include "syntax/statements.hpp"
#include "train/config.hpp"
#include "train/cross_validation.hpp"
#include "train/distributed.hpp"
#include "train/engine.hpp"
#include "train/link_prediction.hpp"
#include "train/partition.hpp"
#include "train/example_facts.hpp"
#include "train/sample_split.hpp"

namespace lrnn {

namespace {
std::atomic<uint64_t> next_dataset_id{1};
std::atomic<uint64_t> next_model_id{1};

// A weight set by hand must be finite: save() refuses NaN and infinity (JSON has neither),
// and a model holding one computes NaN silently.
void refuse_non_finite(const std::vector<double>& values, const std::string& what) {
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      throw Error(ErrorKind::Semantic, what + " value " + std::to_string(i) + " is " + std::to_string(values[i]) +
                                           ": weights must be finite");
}
}

Dataset Dataset::Impl::make(std::vector<train::Sample> samples, size_t parsed, size_t first, size_t total) {
  const size_t held = samples.size();
  return make_share(train::SampleStore(std::move(samples)), parsed, first, total, first, first + held);
}

Dataset Dataset::Impl::make(train::SampleStore samples, size_t parsed) {
  const size_t held = samples.size();
  return make_share(std::move(samples), parsed, 0, 0, 0, held);
}

Dataset Dataset::Impl::make_share(train::SampleStore samples, size_t parsed, size_t first, size_t total,
                                  size_t owned_first, size_t owned_last) {
  auto impl = std::make_shared<Impl>();
  impl->samples = std::move(samples);
  impl->parsed_examples = parsed;
  impl->shard_first = first;
  impl->total = total;
  impl->owned_first = owned_first;
  impl->owned_last = owned_last;
  impl->id = next_dataset_id++;
  return Dataset(std::move(impl));
}

Dataset Dataset::Impl::make_part_source(train::Sample head, std::shared_ptr<const train::PartSource> source) {
  auto impl = std::make_shared<Impl>();
  impl->released_queries = {static_cast<uint32_t>(source->num_queries())};
  impl->samples = train::SampleStore(std::vector<train::Sample>{std::move(head)});
  impl->parsed_examples = 1;
  impl->part_source = std::move(source);
  impl->id = next_dataset_id++;
  return Dataset(std::move(impl));
}

void Dataset::Impl::refuse_part_source(const std::string& what) const {
  if (part_source)
    throw Error(ErrorKind::Semantic, what + " of a rank's share of one graph (graph_from_arrays_share, "
                                     "load_npz_graph_share: each rank builds only its part of the facts, when a "
                                     "model trains or evaluates it over the ranks): load the whole graph instead");
}

// ---- Template ---------------------------------------------------------------------------
Template Template::from_file(const std::string& path) { return from_ast(load_template(path)); }
Template Template::from_string(const std::string& text, const std::string& name) {
  return from_ast(parse_template(text, name));
}
Template Template::from_ast(TemplateAst ast) {
  Template t;
  t.ast_ = std::make_shared<const TemplateAst>(std::move(ast));
  return t;
}
std::string Template::to_text() const { return print_template(*ast_); }

// ---- Dataset ----------------------------------------------------------------------------
Dataset::Dataset() : Dataset(std::make_shared<Impl>()) {}
Dataset::Dataset(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Dataset Dataset::from_ast(std::vector<ExampleAst> examples, const std::vector<QueryLineAst>& queries) {
  const size_t parsed = examples.size();
  return Impl::make(train::pair_samples(std::move(examples), queries), parsed);
}
Dataset Dataset::from_ast(std::vector<ExampleAst> examples, const std::vector<QueryLineAst>& queries,
                          const std::vector<QuerySplit>& line_split) {
  const size_t parsed = examples.size();
  return Impl::make(train::pair_samples(std::move(examples), queries, line_split), parsed);
}
namespace {

// The examples file's facts go into the store as they are parsed (one graph of millions of
// edges is never held as literals); the examples' heads are paired with the query lines
// (each in its part `line_split[l]` of a query split, if given) after.
Dataset load_streaming(const std::string& examples_path, std::vector<QueryLineAst> q,
                       const std::vector<QuerySplit>& line_split) {
  train::SampleStore::Builder facts;
  const std::shared_ptr<const SourceFile> source = syntax::read_source_file(examples_path);
  std::vector<ExampleAst> heads = syntax::parse_examples_streaming(
      source, {[&](Literal&& fact) { facts.add_fact(fact); }, [&] { facts.end_sample({}); }});
  syntax::let_go_of_text(source);  // the facts are stored: grounding them needs no text
  const size_t parsed = heads.size();
  std::vector<uint32_t> example_of;
  std::vector<train::Sample> samples = train::pair_samples(std::move(heads), std::move(q), line_split, &example_of);
  return Dataset::Impl::make(std::move(facts).finish().with_heads(std::move(samples), example_of), parsed);
}

}  // namespace

Dataset Dataset::load(const std::string& examples_path, const std::string& queries_path) {
  std::vector<QueryLineAst> q;
  if (!queries_path.empty()) q = load_queries(queries_path);
  return load_streaming(examples_path, std::move(q), {});
}
Dataset Dataset::load_split(const std::string& examples_path, const std::string& queries_path,
                            const std::string& val_queries_path, const std::string& test_queries_path) {
  std::vector<QueryLineAst> q;
  std::vector<QuerySplit> line_split;
  for (const auto& [path, part] : {std::pair{&queries_path, QuerySplit::Train},
                                   std::pair{&val_queries_path, QuerySplit::Validation},
                                   std::pair{&test_queries_path, QuerySplit::Test}}) {
    if (path->empty()) continue;
    std::vector<QueryLineAst> lines = load_queries(*path);
    line_split.insert(line_split.end(), lines.size(), part);
    q.insert(q.end(), std::make_move_iterator(lines.begin()), std::make_move_iterator(lines.end()));
  }
  return load_streaming(examples_path, std::move(q), line_split);
}
Dataset Dataset::from_text(const std::string& examples, const std::string& queries) {
  std::vector<QueryLineAst> q;
  if (!queries.empty()) q = parse_queries(queries, "<queries>");
  return from_ast(parse_examples(examples, "<examples>"), q);
}
size_t Dataset::size() const { return impl_->is_share() ? impl_->total : impl_->samples.size(); }
size_t Dataset::held() const { return impl_->samples.size(); }
size_t Dataset::parsed_examples() const { return impl_->parsed_examples; }

namespace {
// A rank's share of the samples (Dataset::load_share) or of one graph (Impl::part_source):
// `what` would read what the rank does not hold.
void refuse_share(const Dataset::Impl& d, const char* what) {
  d.refuse_part_source(what);
  if (d.is_share())
    throw Error(ErrorKind::Semantic, std::string(what) + " of a rank's share of a dataset (Dataset::load_share holds "
                                     "samples " + std::to_string(d.shard_first) + ".." +
                                     std::to_string(d.shard_first + d.samples.size()) + " of " +
                                     std::to_string(d.total) + "): load the whole dataset with Dataset::load");
}

// The loss the settings train with, its label smoothing included, so that evaluation and
// inspection report the quantity training minimises.
train::LossKind loss_of(const Settings& s) {
  train::LossKind kind = train::parse_loss(s.loss);
  kind.label_smoothing = s.label_smoothing;
  return kind;
}
}  // namespace

static void refuse_released(const Dataset::Impl& d, const std::string& what) {
  if (d.facts_released)
    throw Error(ErrorKind::Semantic, what + " of a dataset whose examples' facts were released "
                                     "(Dataset::without_facts): only a model that prepared the dataset before "
                                     "may use it; use the dataset as loaded");
}

namespace {

// Every span of a sample's head: the example's, and those of its queries (and of their
// terms and values).
template <class Visit>
void for_each_span(train::Sample& s, Visit&& visit) {
  visit(s.example.span);
  for (std::vector<Literal>* literals : {&s.example.queries, &s.queries})
    for (Literal& l : *literals) {
      visit(l.span);
      if (l.weight) visit(l.weight->span);
      for (Term& t : l.args) visit(t.span);
    }
}

// Spans into big source files (a graph's examples file: tens of MB, held by every span of
// it) are pointed at a copy that keeps only what their error messages show: the lines they
// start on, up to a window past their column (diagnostics.cpp shows 120 bytes around it),
// every other line empty, so lines and columns stay where they were.
void keep_only_what_spans_show(std::vector<train::Sample>& samples) {
  constexpr size_t kBig = size_t{1} << 20, kShown = 256;
  std::map<const SourceFile*, std::map<uint32_t, size_t>> shown;  // file -> line -> bytes kept
  for (train::Sample& s : samples)
    for_each_span(s, [&](Span& span) {
      if (!span.file || span.file->text.size() < kBig || span.line == 0) return;
      size_t& keep = shown[span.file.get()][span.line];
      keep = std::max(keep, size_t(span.col) + kShown);
    });
  std::map<const SourceFile*, std::shared_ptr<const SourceFile>> trimmed;
  for (const auto& [file, lines] : shown) {
    auto copy = std::make_shared<SourceFile>();
    copy->name = file->name;
    const std::string& text = file->text;
    size_t begin = 0;
    uint32_t line = 1;
    for (const auto& [wanted, keep] : lines) {
      for (; line < wanted && begin < text.size(); ++line) {
        const size_t end = text.find('\n', begin);
        begin = end == std::string::npos ? text.size() : end + 1;
        copy->text += '\n';
      }
      const size_t end = std::min(text.find('\n', begin), text.size());
      copy->text.append(text, begin, std::min(keep, end - begin));
    }
    trimmed[file] = std::move(copy);
  }
  for (train::Sample& s : samples)
    for_each_span(s, [&](Span& span) {
      if (auto it = trimmed.find(span.file.get()); span.file && it != trimmed.end()) span.file = it->second;
    });
}

}  // namespace

Dataset Dataset::without_facts() const {
  if (impl_->learnable_facts)
    throw Error(ErrorKind::Semantic, "the facts of a dataset with learnable facts are parameters of the data: "
                                     "they cannot be released (Dataset::without_facts)");
  auto impl = std::make_shared<Impl>();
  // The heads without their queries (only their count, importance and split stay): not a
  // copy of a graph's query per node made to be dropped, next to the store still held.
  const std::vector<train::Sample>& held = impl_->samples.without_facts();  // their ExampleAst::facts are empty
  std::vector<train::Sample> heads(held.size());
  impl->released_queries.reserve(held.size());
  for (size_t i = 0; i < held.size(); ++i) {
    heads[i].example = held[i].example;
    heads[i].importance = held[i].importance;
    heads[i].split = held[i].split;
    impl->released_queries.push_back(impl_->queries_counted() ? impl_->released_queries[i]
                                                              : static_cast<uint32_t>(held[i].queries.size()));
  }
  // Nothing left reads the facts' text: the heads keep what their own spans show.
  keep_only_what_spans_show(heads);
  impl->samples = train::SampleStore(std::move(heads));
  impl->id = impl_->id;  // a model's grounding of the dataset stays its grounding of this one
  impl->shard_first = impl_->shard_first;
  impl->total = impl_->total;
  impl->owned_first = impl_->owned_first;
  impl->owned_last = impl_->owned_last;
  impl->parsed_examples = impl_->parsed_examples;
  impl->facts_released = true;
  return Dataset(std::move(impl));
}

Dataset Dataset::with_learnable_facts() const {
  refuse_share(*impl_, "learnable facts");
  refuse_released(*impl_, "learnable facts");
  auto impl = std::make_shared<Impl>();
  impl->samples = impl_->samples;
  impl->id = next_dataset_id++;
  impl->learnable_facts = true;
  return Dataset(std::move(impl));
}
bool Dataset::learnable_facts() const { return impl_->learnable_facts; }

Dataset Dataset::subset(const std::vector<size_t>& indices) const {
  refuse_share(*impl_, "a subset");
  refuse_released(*impl_, "a subset");
  for (size_t i : indices)
    if (i >= impl_->samples.size())
      throw Error(ErrorKind::Semantic, "sample " + std::to_string(i) + " of a dataset of " + std::to_string(size()));
  return Impl::make(impl_->samples.subset(indices), impl_->parsed_examples);
}

std::pair<Dataset, Dataset> Dataset::split(double test_fraction, uint64_t seed) const {
  refuse_share(*impl_, "a split");
  refuse_released(*impl_, "a split");
  std::vector<size_t> tr, te;
  train::split_indices(impl_->samples.size(), test_fraction, seed, tr, te);
  // Both parts were parsed as one: each counts the examples parsed to build it.
  return {Impl::make(impl_->samples.subset(tr), impl_->parsed_examples),
          Impl::make(impl_->samples.subset(te), impl_->parsed_examples)};
}

size_t Dataset::num_queries() const {
  size_t n = 0;
  if (impl_->queries_counted())
    for (uint32_t count : impl_->released_queries) n += count;
  else
    for (const train::Sample& s : impl_->samples.without_facts()) n += s.queries.size();
  return n;
}

Dataset Dataset::with_query_splits(const std::vector<QuerySplit>& split) const& {
  return Dataset(*this).with_query_splits(split);
}

Dataset Dataset::with_query_splits(const std::vector<QuerySplit>& split) && {
  if (impl_->part_source) {  // a rank's share of one graph: the split of the queries it counts
    if (split.size() != num_queries())
      throw Error(ErrorKind::Semantic, "a query split gives " + std::to_string(split.size()) + " parts for " +
                                           std::to_string(num_queries()) +
                                           " queries: give one per query, in dataset order");
    train::Sample head = impl_->samples.without_facts().at(0);
    // All training is the same as no split (train::assign_query_splits).
    const bool all_train = std::all_of(split.begin(), split.end(), [](QuerySplit p) { return p == QuerySplit::Train; });
    head.split = all_train ? std::vector<QuerySplit>{} : split;
    Dataset out = Impl::make_part_source(std::move(head), impl_->part_source);
    *this = Dataset();  // left empty, as a moved-from dataset
    return out;
  }
  refuse_share(*impl_, "a query split");
  refuse_released(*impl_, "a query split");
  auto impl = std::make_shared<Impl>();
  // Taken only from a dataset no other handle shares; else copied (the others keep theirs).
  // The Impl is const to share it; one no one else holds was made by make_shared, not const.
  impl->samples = impl_.use_count() == 1
                      ? std::move(const_cast<Impl&>(*impl_).samples).with_query_splits(split)
                      : impl_->samples.with_query_splits(split);
  impl->parsed_examples = impl_->parsed_examples;
  impl->learnable_facts = impl_->learnable_facts;
  impl->id = next_dataset_id++;
  *this = Dataset();  // left empty, as a moved-from dataset
  return Dataset(std::move(impl));
}

Dataset Dataset::with_query_split(double train, double val, double test, uint64_t seed) const& {
  return Dataset(*this).with_query_split(train, val, test, seed);
}

Dataset Dataset::with_query_split(double train, double val, double test, uint64_t seed) && {
  const size_t n = num_queries();
  return std::move(*this).with_query_splits(train::random_query_split(n, train, val, test, seed));
}

std::vector<QuerySplit> Dataset::query_splits() const {
  if (!impl_->queries_counted()) return impl_->samples.query_splits();
  std::vector<QuerySplit> out;
  const std::vector<train::Sample>& heads = impl_->samples.without_facts();
  for (size_t i = 0; i < heads.size(); ++i)
    for (uint32_t q = 0; q < impl_->released_queries[i]; ++q) out.push_back(heads[i].split_of(q));
  return out;
}

bool Dataset::has_query_split() const {
  for (const train::Sample& s : impl_->samples.without_facts())
    if (!s.split.empty()) return true;
  return false;
}

// ---- Model ------------------------------------------------------------------------------
struct Model::Impl {
  // Serialises the model's calls (include/lrnn/model.hpp, "Threads"): recursive, so a
  // training callback may call the model it trains, and Model::lock() may hold it across
  // several calls.
  mutable std::recursive_mutex mutex;
  std::unique_lock<std::recursive_mutex> lock() const { return std::unique_lock<std::recursive_mutex>(mutex); }

  Settings settings;
  std::unique_ptr<train::Engine> engine;
  uint64_t id = next_model_id++;  // keys a learnable dataset's groundings

  int schedule_start = 0;  // epochs trained when the current schedule began (its epoch 0)

  train::TrainConfig config() const { return train::make_train_config(settings, schedule_start); }

  // Grounded datasets, kept while the model lives (a few at a time). Shared, so a set in
  // use survives the eviction another prepare() may cause.
  mutable std::map<uint64_t, std::shared_ptr<const train::PreparedSet>> prepared;

  // Link prediction (train/link_prediction.hpp): one example, its queries the true links.
  TrainReport train_links(const Dataset& data, const Dataset* test, const std::function<bool(const EpochInfo&)>& on_epoch) {
    if (test)
      throw Error(ErrorKind::Semantic, "link prediction splits the links of its one example (a query split): "
                                       "give no separate test set");
    if (train::dist::world().active && train::dist::world().size > 1)
      throw Error(ErrorKind::Semantic, "link prediction is not distributed over MPI ranks yet");
    if (data.impl().is_share()) throw Error(ErrorKind::Semantic, "link prediction needs the whole dataset, not a share");
    data.impl().refuse_part_source("link prediction");
    refuse_released(data.impl(), "link prediction");
    const train::LinkConfig link = train::link_config(settings);
    schedule_start = engine->epochs_trained();
    TrainReport report;
    report.build_seconds = report.ground_seconds = take_result(
        engine->train_links(data.impl().samples, config(), link, settings.max_ground_rules, on_epoch), report);
    return report;
  }

  // The engine's result into the public report; returns the link setup's seconds.
  static double take_result(train::TrainResult&& result, TrainReport& report) {
    report.epochs = result.epochs;
    report.stopped_early = result.stopped_early;
    report.best_epoch = result.best_epoch;
    report.best = result.best;
    report.train_seconds = result.train_seconds;
    report.history = std::move(result.history);
    report.last_epoch_outputs = std::move(result.last_epoch_outputs);
    return result.setup_seconds;
  }

  // The settings' limits, read at every call that grounds or trains (settings() may have
  // changed them since): the process's memory budget (lrnn/memory.hpp) and max_atoms.
  void apply_limits() const {
    if (settings.max_memory) set_memory_limit(settings.max_memory);
    engine->set_max_atoms(settings.max_atoms);
  }

  std::shared_ptr<const train::PreparedSet> prepare(const Dataset& d) const {
    apply_limits();
    if (d.impl().learnable_facts) return prepare_learnable(d);
    auto it = prepared.find(d.impl().id);
    if (it != prepared.end()) return it->second;
    refuse_released(d.impl(), "grounding");
    if (prepared.size() >= 16) prepared.clear();
    if (d.impl().is_share() && !train::dist::world().active)
      throw Error(ErrorKind::Semantic, "a rank's share of a dataset (Dataset::load_share) outside an MPI job");
    // One sample (a big graph, a knowledge base) over several ranks is partitioned by its
    // constants (train/partition.hpp); several samples are split by sample. One rank takes
    // one sample as its part too when its queries come in mini-batches (which a split by
    // sample has no use for).
    const auto& w = train::dist::world();
    if (w.active && (w.size > 1 || settings.query_batch_size > 0) && !d.impl().is_share() && d.size() == 1) {
      if (settings.query_batch_size > 0) train::dist::refuse_sampled_fanout(settings.fanout);
      auto part = std::make_shared<const train::PreparedSet>(train::dist::prepare_partitioned(
          *engine, d.impl().samples, settings.max_ground_rules, d.impl().part_source.get()));
      prepared.emplace(d.impl().id, part);
      return part;
    }
    d.impl().refuse_part_source("grounding outside a partition over MPI ranks");  // (a share is made only with ranks)
    auto set = train::dist::world().active ? prepare_shard(d)
                                           : std::make_shared<const train::PreparedSet>(
                                                 engine->prepare(d.impl().samples, settings.max_ground_rules));
    prepared.emplace(d.impl().id, set);
    return set;
  }

  std::shared_ptr<const train::PreparedSet> prepare_learnable(const Dataset& d) const {
    if (train::dist::world().active && train::dist::world().size > 1)
      throw Error(ErrorKind::Semantic, "learnable example facts cannot be sharded over MPI ranks");
    std::lock_guard<std::mutex> lock(d.impl().learnable_mutex);
    auto& sets = d.impl().learnable_sets;
    auto it = sets.find(id);
    if (it != sets.end()) return it->second;
    auto set = std::make_shared<const train::PreparedSet>(
        engine->prepare(d.impl().samples, settings.max_ground_rules, /*learnable_facts=*/true));
    sets.emplace(id, set);
    return set;
  }

  // In an MPI job each rank grounds only its share of the samples (train/distributed.hpp):
  // its block, of about equal work (by the examples' facts for a dataset in memory), and
  // margins into its neighbours' blocks; a share (Dataset::load_share) holds just those. A
  // failure there (bad data in this rank's shard) ends the whole job, naming the rank.
  std::shared_ptr<const train::PreparedSet> prepare_shard(const Dataset& d) const {
    const auto& w = train::dist::world();
    const Dataset::Impl& data = d.impl();
    train::dist::ShardPlan plan;
    if (data.is_share()) {
      plan.held = {data.shard_first, data.shard_first + data.samples.size()};
      plan.owned = {data.owned_first, data.owned_last};
    } else {
      std::vector<uint64_t> facts(data.samples.size());
      for (size_t i = 0; i < facts.size(); ++i) facts[i] = data.samples.fact_count(i);
      plan = train::dist::shard_with_margin(facts, w.rank, w.size);
    }
    const size_t offset = data.is_share() ? data.shard_first : 0;
    train::PreparedSet set;
    try {
      set = engine->prepare(data.samples.slice(plan.held.first - offset, plan.held.last - offset),
                            settings.max_ground_rules);
    } catch (const std::exception& e) {
      train::dist::abort_job("samples " + std::to_string(plan.held.first) + ".." + std::to_string(plan.held.last) +
                             " of its shard: " + e.what());
    }
    set.shard_first = plan.held.first;
    set.global_size = d.size();
    set.margins = true;
    set.owned_first = plan.owned.first - plan.held.first;
    set.owned_last = plan.owned.last - plan.held.first;
    std::vector<uint32_t> counts(set.size(), 0), costs;
    for (const train::OutputInfo& o : set.outputs) counts[o.sample] += o.training_target().empty() ? 0 : 1;
    for (size_t i = set.owned_first; i < set.owned_last; ++i)
      costs.push_back(static_cast<uint32_t>(set.networks[i].num_atoms() + set.networks[i].inputs.size()));
    set.global_target_counts = train::dist::allgather({counts.begin() + set.owned_first,
                                                       counts.begin() + set.owned_last});
    set.layout = train::dist::gather_layout(plan, d.size(), costs);
    return std::make_shared<const train::PreparedSet>(std::move(set));
  }
};

Model::Model(const Template& tmpl, const Settings& settings) : impl_(std::make_unique<Impl>()) {
  impl_->settings = settings;
  // Before the engine allocates the template's weights, which the budget counts.
  if (settings.max_memory) set_memory_limit(settings.max_memory);
  impl_->engine = std::make_unique<train::Engine>(tmpl.ast(), train::Initializer::parse(settings.initializer),
                                                  settings.seed);
}
Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

Model Model::load(const std::string& path) {
  train::TrainConfig c;
  std::unique_ptr<train::Engine> engine = train::Engine::load(path, c);
  Model m(Template::from_ast(engine->ast()));
  m.impl_->engine = std::move(engine);
  m.impl_->settings = train::settings_of(c);
  m.impl_->schedule_start = m.impl_->engine->epochs_trained();
  return m;
}

// In an MPI job rank 0 alone writes (every rank holds the same model); the others wait
// until the file is complete.
void Model::save(const std::string& path) const {
  const auto lock = impl_->lock();
  const auto& w = train::dist::world();
  if (w.size == 1) return impl_->engine->save(path, impl_->config());
  if (w.rank == 0) {
    try {
      impl_->engine->save(path, impl_->config());
    } catch (const std::exception& e) {
      train::dist::abort_job(std::string("saving the model: ") + e.what());
    }
  }
  train::dist::barrier();
}

Settings& Model::settings() { return impl_->settings; }
const Settings& Model::settings() const { return impl_->settings; }

TrainReport Model::train(const Dataset& data, const Dataset* test,
                         const std::function<bool(const EpochInfo&)>& on_epoch) {
  const auto lock = impl_->lock();
  impl_->apply_limits();
  if (impl_->settings.link_prediction) return impl_->train_links(data, test, on_epoch);
  const auto t0 = std::chrono::steady_clock::now();
  const auto train_set = impl_->prepare(data);
  const auto test_set = test ? impl_->prepare(*test) : nullptr;
  impl_->engine->plan_ahead(*train_set);
  TrainReport report;
  report.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  report.ground_seconds = train_set->seconds;
  impl_->schedule_start = impl_->engine->epochs_trained();
  train::TrainResult result;
  if (train::dist::world().active && train::dist::world().size > 1) {
    // A failure on one rank (an exception between collectives) would leave the others
    // waiting in the next one: it ends the job instead.
    try {
      result = impl_->engine->train(*train_set, test_set.get(), impl_->config(), on_epoch);
    } catch (const std::exception& e) {
      train::dist::abort_job(std::string("training: ") + e.what());
    }
  } else {
    result = impl_->engine->train(*train_set, test_set.get(), impl_->config(), on_epoch);
  }
  // The training's own setup (mini-batches' index of the graph) counts as building.
  report.build_seconds += Impl::take_result(std::move(result), report);
  return report;
}

void Model::prepare(const Dataset& data) const {
  const auto lock = impl_->lock();
  impl_->prepare(data);
}

std::optional<PartitionShare> Model::partition_share(const Dataset& data) const {
  const auto lock = impl_->lock();
  auto it = impl_->prepared.find(data.impl().id);
  if (it == impl_->prepared.end() || !it->second->partitioned) return std::nullopt;
  return it->second->partition;
}

UnderivableQueries Model::underivable_queries(const Dataset& data, size_t listed) const {
  const auto lock = impl_->lock();
  const std::shared_ptr<const train::PreparedSet> set = impl_->prepare(data);
  UnderivableQueries out;
  out.total = set->outputs.size();
  for (const train::OutputInfo& o : set->outputs) {
    if (o.derived) continue;
    if (out.count++ < listed) out.listed.push_back(o.text + " (example " + std::to_string(o.sample + 1) + ")");
  }
  return out;
}

Evaluation Model::evaluate(const Dataset& data) const {
  const auto lock = impl_->lock();
  return impl_->engine->evaluate(*impl_->prepare(data), loss_of(impl_->settings), impl_->settings.dtype);
}

std::vector<std::vector<double>> Model::forward(const Dataset& data) const {
  const auto lock = impl_->lock();
  Evaluation ev = evaluate(data);
  std::vector<std::vector<double>> values;
  values.reserve(ev.outputs.size());
  for (Output& o : ev.outputs) values.push_back(std::move(o.value));
  return values;
}

std::vector<Parameter> Model::parameters() const {
  const auto lock = impl_->lock();
  const neural::Parameters& params = impl_->engine->parameters();
  std::vector<Parameter> out;
  for (uint32_t p = 0; p < params.count(); ++p) out.push_back(train::parameter_of(params, p, params.values.data()));
  return out;
}

Parameter Model::parameter(const std::string& name) const {
  const auto lock = impl_->lock();
  const neural::Parameters& params = impl_->engine->parameters();
  const uint32_t p = params.find(name);
  if (p == neural::kNoParam) throw Error(ErrorKind::Semantic, "the model has no parameter named '" + name + "'");
  return train::parameter_of(params, p, params.values.data());
}

void Model::set_parameter(const std::string& name, const std::vector<double>& values) {
  const auto lock = impl_->lock();
  neural::Parameters& params = impl_->engine->parameters();
  const uint32_t p = params.find(name);
  if (p == neural::kNoParam) throw Error(ErrorKind::Semantic, "the model has no parameter named '" + name + "'");
  const neural::ParamInfo& info = params.info(p);
  if (values.size() != static_cast<size_t>(info.shape.size()))
    throw Error(ErrorKind::Shape, "parameter '" + name + "' is " + exec::to_string(info.shape) + " (" +
                                      std::to_string(info.shape.size()) + " values), got " +
                                      std::to_string(values.size()) + " values");
  refuse_non_finite(values, "parameter '" + name + "'");
  std::copy(values.begin(), values.end(), params.data(p));
}

void Model::load_parameters(const std::vector<Parameter>& ps) {
  const auto lock = impl_->lock();
  for (const Parameter& p : ps) {
    const Parameter current = parameter(p.name);
    if (current.rows != p.rows || current.cols != p.cols)
      throw Error(ErrorKind::Shape, "parameter '" + p.name + "' has shape " + std::to_string(current.rows) + "x" +
                                        std::to_string(current.cols) + ", got " + std::to_string(p.rows) + "x" +
                                        std::to_string(p.cols));
    set_parameter(p.name, p.values);
  }
}

namespace {

// A ground network is grounded again from the sample's text, which holds the written
// values, not the trained ones: refused rather than shown wrong.
void refuse_learnable(const Dataset& data) {
  if (data.learnable_facts())
    throw Error(ErrorKind::Semantic,
                "the ground network of a dataset with learnable facts is not available (it would show the facts' "
                "written values, not their trained ones); build the dataset without learnable_facts to inspect it");
}

}  // namespace

GroundNetwork Model::network(const Dataset& data, size_t index, bool with_gradients) const {
  const auto lock = impl_->lock();
  refuse_learnable(data);
  refuse_share(data.impl(), "the network of a sample");
  refuse_released(data.impl(), "the network of a sample");
  if (index >= data.size())
    throw Error(ErrorKind::Semantic, "sample " + std::to_string(index) + " of a dataset of " +
                                         std::to_string(data.size()));
  impl_->apply_limits();
  return impl_->engine->inspect(data.impl().samples.at(index), loss_of(impl_->settings), with_gradients,
                               impl_->settings.max_ground_rules);
}

GroundNetwork Model::network(const Dataset& data, size_t index,
                             const std::vector<std::vector<double>>& output_gradients) const {
  const auto lock = impl_->lock();
  refuse_learnable(data);
  refuse_share(data.impl(), "the network of a sample");
  refuse_released(data.impl(), "the network of a sample");
  if (index >= data.size())
    throw Error(ErrorKind::Semantic, "sample " + std::to_string(index) + " of a dataset of " +
                                         std::to_string(data.size()));
  impl_->apply_limits();
  return impl_->engine->inspect(data.impl().samples.at(index), loss_of(impl_->settings), true,
                               impl_->settings.max_ground_rules, &output_gradients);
}

std::vector<Output> Model::ground_queries(const Dataset& data) const {
  const auto lock = impl_->lock();
  const auto set = impl_->prepare(data);
  std::vector<Output> out;
  out.reserve(set->outputs.size());
  for (const train::OutputInfo& o : set->outputs)
    out.push_back({o.sample, o.text, o.target, {}, {}, 1, 1, o.importance, o.listed_target, o.split, o.derived});
  if (set->sharded()) return train::dist::gather_outputs(out, *set);  // rank 0: all, in order
  return out;
}

std::vector<ExampleParameter> Model::example_parameters(const Dataset& data) const {
  const auto lock = impl_->lock();
  std::vector<ExampleParameter> out;
  if (!data.learnable_facts()) return out;
  const auto set = impl_->prepare(data);
  const train::ExampleFacts& facts = *set->example_facts;
  for (uint32_t p = 0; p < facts.params.count(); ++p)
    for (const std::string& literal : facts.literals[p])
      out.push_back({literal, facts.first_index + p, train::parameter_of(facts.params, p, facts.params.values.data())});
  return out;
}

void Model::set_example_parameter(const Dataset& data, const std::string& literal, const std::vector<double>& values) {
  const auto lock = impl_->lock();
  if (!data.learnable_facts())
    throw Error(ErrorKind::Semantic, "the dataset has no learnable facts (it was not built with learnable_facts)");
  const auto set = impl_->prepare(data);
  train::ExampleFacts& facts = *set->example_facts;
  for (uint32_t p = 0; p < facts.params.count(); ++p) {
    const auto& literals = facts.literals[p];
    if (std::find(literals.begin(), literals.end(), literal) == literals.end()) continue;
    const neural::Shape shape = facts.params.info(p).shape;
    if (values.size() != static_cast<size_t>(shape.size()))
      throw Error(ErrorKind::Shape, "learnable fact " + literal + " is " + exec::to_string(shape) + " (" +
                                        std::to_string(shape.size()) + " values), got " +
                                        std::to_string(values.size()) + " values");
    refuse_non_finite(values, "learnable fact " + literal);
    std::copy(values.begin(), values.end(), facts.params.data(p));
    return;
  }
  throw Error(ErrorKind::Semantic, "the dataset has no learnable fact " + literal);
}

FactRows Model::fact_rows(const Dataset& data) const {
  const auto lock = impl_->lock();
  refuse_share(data.impl(), "fact rows");
  return build_fact_rows(*this, *impl_->engine, data, impl_->settings.max_ground_rules);
}

size_t Model::num_parameter_values() const {
  const auto lock = impl_->lock();
  return impl_->engine->parameters().size();
}

Template Model::get_template() const {
  const auto lock = impl_->lock();
  return Template::from_ast(impl_->engine->ast());
}

int Model::epochs_trained() const {
  const auto lock = impl_->lock();
  return impl_->engine->epochs_trained();
}

std::unique_lock<std::recursive_mutex> Model::lock() const { return impl_->lock(); }

// ---- cross-validation -------------------------------------------------------------------
CrossValidationReport cross_validate(const Template& tmpl, const Settings& settings, const Dataset& data, int k,
                                     uint64_t fold_seed, const std::function<bool(int, const EpochInfo&)>& on_epoch,
                                     bool test_curve) {
  refuse_share(data.impl(), "cross-validation");
  if (data.has_query_split())
    throw Error(ErrorKind::Semantic, "cross-validation deals whole samples into folds: the dataset's query split "
                                     "(its validation and test queries) would be trained on; give one or the other");
  return train::cross_validate(tmpl.ast(), settings, data.impl().samples, k, fold_seed, on_epoch, test_curve);
}

}  // namespace lrnn
