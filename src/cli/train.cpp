// `lrnn train TEMPLATE --examples E [--queries Q] ...`: ground, neuralize, train, report,
// save. Progress goes to stderr (a bar on a terminal, a line every few epochs otherwise);
// the summary (or, with --json, one JSON object) goes to stdout.
#include <sys/resource.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/command.hpp"
#include "cli/dataset_spec.hpp"
#include "cli/warnings.hpp"
#include "lrnn/atomic_file.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/distributed.hpp"
#include "lrnn/model.hpp"
#include "lrnn/report.hpp"
#include "lrnn/syntax.hpp"

namespace {

using namespace lrnn;

// The defaults are lrnn::Settings' own (include/lrnn/training.hpp), shown in --help.
const Settings kDefaults;

struct TrainOptions {
  std::string template_path, examples_path, queries_path, dataset;
  std::string test_examples_path, test_queries_path;
  double test_fraction = 0;
  // A query split of the training data (docs/big_graphs.md "Query splits"): fractions, or
  // per-split query files (--val-queries, and --test-queries without --test-examples).
  std::string query_split, val_queries_path;
  int epochs = kDefaults.epochs;
  std::string optimizer = kDefaults.optimizer;
  double lr = kDefaults.lr;
  double weight_decay = 0;
  std::string loss = kDefaults.loss;
  double label_smoothing = kDefaults.label_smoothing;
  size_t batch_size = kDefaults.batch_size;
  uint64_t seed = kDefaults.seed;
  std::string initializer = kDefaults.initializer;
  std::string schedule = kDefaults.schedule;
  int patience = kDefaults.patience;
  int step_size = 1;
  double gamma = kDefaults.gamma;
  int warmup = kDefaults.warmup;
  int d_model = 0;  // 0: unset (no d_model^-0.5 factor)
  size_t max_ground_rules = kDefaultMaxGroundRules, max_atoms = kDefaultMaxAtoms;
  size_t query_batch_size = kDefaults.query_batch_size;
  std::string fanout;  // per hop, outermost first: "10,10"
  // Link prediction (docs/big_graphs.md "Link prediction"): the queries are true links.
  bool link_prediction = false, ranking = false;
  size_t negatives = kDefaults.negatives;
  std::string corrupt = kDefaults.corrupt;
  double margin = kDefaults.margin;
  std::string dtype = to_string(kDefaults.dtype);
  int report_every = 0;
  int checkpoint_every = 0;  // > 0: also --save the model every N epochs during training
  std::string save_path, load_path, report_path;
  bool json = false;
  int folds = 0;  // > 0: stratified k-fold cross-validation instead of one training run
  bool test_curve = false;  // with --folds: every fold's test accuracy after every epoch
};

std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// `--fanout F` or `--fanout F1,F2,...` (one per hop, outermost first): integers >= 0.
std::vector<size_t> fanout_per_hop(const std::string& text) {
  std::vector<size_t> per_hop;
  if (text.empty()) return per_hop;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    char* end = nullptr;
    const unsigned long long f = std::strtoull(part.c_str(), &end, 10);
    if (part.empty() || part[0] == '-' || end != part.c_str() + part.size() || f > 1000000000000ULL)
      throw Error(ErrorKind::Semantic, "--fanout '" + text + "': expected integers >= 0, one per hop (e.g. 10 or "
                                       "10,10), got '" + part + "'");
    per_hop.push_back(static_cast<size_t>(f));
    if (comma == std::string::npos) return per_hop;
    start = comma + 1;
  }
}

// The command line over `s`: a new model takes every option (given or default); a loaded
// model keeps its saved settings except the options given (and the epochs to run now).
Settings apply_options(const TrainOptions& o, const CLI::App& cmd, Settings s, bool loaded) {
  auto given = [&](const char* name) { return cmd.count(name) > 0; };
  auto take = [&](const char* name) { return !loaded || given(name); };
  s.epochs = o.epochs;
  if (take("--optimizer")) {
    if (loaded && s.optimizer != o.optimizer) s.weight_decay = s.momentum = s.beta1 = s.beta2 = s.eps = std::nullopt;
    s.optimizer = o.optimizer;
  }
  if (take("--lr")) s.lr = o.lr;
  if (given("--weight-decay")) s.weight_decay = o.weight_decay;
  if (take("--loss")) s.loss = o.loss;
  if (take("--label-smoothing")) s.label_smoothing = o.label_smoothing;
  if (take("--batch-size")) s.batch_size = o.batch_size;
  if (take("--seed")) s.seed = o.seed;
  if (given("--initializer") && loaded)
    cli::usage_error("--initializer has no effect with --load: the saved model's weights are already initialised");
  if (take("--initializer")) s.initializer = o.initializer;
  if (take("--schedule")) s.schedule = o.schedule;
  if (take("--patience")) s.patience = o.patience;
  if (given("--step-size")) s.step_size = o.step_size;
  else if (!loaded) s.step_size = std::nullopt;  // a quarter of the epochs
  if (take("--gamma")) s.gamma = o.gamma;
  if (take("--warmup")) s.warmup = o.warmup;
  if (given("--d-model")) s.d_model = o.d_model;
  if (take("--max-ground-rules")) s.max_ground_rules = o.max_ground_rules;
  if (take("--max-atoms")) s.max_atoms = o.max_atoms;
  if (take("--query-batch-size")) s.query_batch_size = o.query_batch_size;
  if (take("--fanout")) s.fanout = fanout_per_hop(o.fanout);
  if (take("--link-prediction")) s.link_prediction = o.link_prediction;
  if (take("--negatives")) s.negatives = o.negatives;
  if (take("--corrupt")) s.corrupt = o.corrupt;
  if (take("--margin")) s.margin = o.margin;
  if (take("--ranking")) s.ranking = o.ranking;
  if (take("--dtype")) s.dtype = parse_dtype(o.dtype);
  return s;
}

// SIGINT / SIGTERM during training: the first one asks training to stop after the epoch in
// progress (the model is then reported and, with --save, saved); a second one ends the
// process at once, as usual.
volatile std::sig_atomic_t stop_signal = 0;

extern "C" void request_stop(int sig) {
  if (stop_signal) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
  stop_signal = sig;
}

struct StopOnSignal {
  StopOnSignal() {
    stop_signal = 0;
    std::signal(SIGINT, request_stop);
    std::signal(SIGTERM, request_stop);
  }
  ~StopOnSignal() {
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
  }
};

// An interrupted run has reported (and saved) what it trained; it still exits as a
// signalled command does (128 + the signal), so scripts see that it did not finish.
void finish_interrupted() {
  if (!stop_signal) return;
  std::fflush(stdout);
  std::exit(128 + stop_signal);
}

// Options that exclude or need each other (--fanout without --query-batch-size, ...) are
// usage errors, found before anything is loaded: the settings' own checks (make_train_config).
void usage_error_on_bad_settings(const Settings& settings) {
  try {
    lrnn::check_settings(settings);
  } catch (const Error& e) {
    cli::usage_error(e.message());
  }
}

Model make_model(const TrainOptions& o, const CLI::App& cmd) {
  if (!o.load_path.empty()) {
    // The saved model carries its template: a TEMPLATE given too would be ignored.
    if (!o.template_path.empty())
      cli::usage_error("give either a TEMPLATE or --load MODEL, not both: the model '" + o.load_path +
                       "' carries its own template, so '" + o.template_path + "' would be ignored");
    Model model = Model::load(o.load_path);
    model.settings() = apply_options(o, cmd, model.settings(), true);
    usage_error_on_bad_settings(model.settings());
    return model;
  }
  if (o.template_path.empty()) cli::usage_error("lrnn train needs a TEMPLATE (or --load MODEL)");
  const Settings settings = apply_options(o, cmd, Settings{}, false);
  usage_error_on_bad_settings(settings);
  return Model(Template::from_file(o.template_path), settings);
}

// `--query-split TRAIN,VAL,TEST`: three fractions in [0, 1] summing to at most 1.
std::array<double, 3> split_fractions(const std::string& text) {
  std::array<double, 3> f{};
  size_t start = 0, k = 0;
  for (; k < 3; ++k) {
    const size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    char* end = nullptr;
    f[k] = std::strtod(part.c_str(), &end);
    if (part.empty() || end != part.c_str() + part.size() || !std::isfinite(f[k]))
      throw Error(ErrorKind::Semantic, "--query-split '" + text + "': expected three fractions TRAIN,VAL,TEST "
                                       "(e.g. 0.6,0.2,0.2), got '" + part + "'");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (k != 2)
    throw Error(ErrorKind::Semantic, "--query-split '" + text + "': expected three fractions TRAIN,VAL,TEST "
                                     "(e.g. 0.6,0.2,0.2)");
  return f;
}

// The training data with a query split, from --query-split or per-split query files.
Dataset load_query_split(const TrainOptions& o, uint64_t seed) {
  const bool files = !o.val_queries_path.empty() || !o.test_queries_path.empty();
  if (!o.query_split.empty() && files)
    cli::usage_error("give either --query-split fractions or per-split query files "
                                     "(--val-queries, --test-queries), not both");
  if (o.test_fraction > 0)
    cli::usage_error("a query split holds out queries, --test-fraction whole samples: give one of them");
  if (!o.query_split.empty()) {
    const std::array<double, 3> f = split_fractions(o.query_split);
    return cli::load_dataset(o.dataset, o.examples_path, o.queries_path).with_query_split(f[0], f[1], f[2], seed);
  }
  if (!o.dataset.empty())
    cli::usage_error("per-split query files (--val-queries, --test-queries) split the queries of "
                                     "--examples; a --dataset has its own queries: use --query-split");
  if (o.queries_path.empty())
    cli::usage_error("per-split query files need the training queries too: give --queries FILE");
  return Dataset::load_split(o.examples_path, o.queries_path, o.val_queries_path, o.test_queries_path);
}

// (train, test) from --examples/--dataset and --test-examples or --test-fraction, or the
// training data with a query split (then no separate test set).
// In an MPI job each rank parses only its share of the files, except with --test-fraction:
// the seeded split needs every sample, so each rank parses them all and grounds its block.
std::pair<Dataset, Dataset> load_datasets(const TrainOptions& o, uint64_t seed) {
  if (!o.test_examples_path.empty() && !o.val_queries_path.empty())
    cli::usage_error("--val-queries splits the training examples' queries; --test-examples is a "
                                     "separate test set: give --test-queries without --test-examples for a split");
  if (!o.query_split.empty() || !o.val_queries_path.empty() ||
      (!o.test_queries_path.empty() && o.test_examples_path.empty())) {
    if (!o.test_examples_path.empty())
      cli::usage_error("a query split has its own test queries: give no --test-examples with it");
    return {load_query_split(o, seed), Dataset()};
  }
  if (o.test_fraction > 0) {
    return cli::load_dataset(o.dataset, o.examples_path, o.queries_path).split(o.test_fraction, seed);
  }
  Dataset all = cli::load_data_share(o.dataset, o.examples_path, o.queries_path);
  if (!o.test_examples_path.empty()) return {all, Dataset::load_share(o.test_examples_path, o.test_queries_path)};
  return {all, Dataset()};
}

// One part of a query split in the summary (a part without targeted queries says so).
void print_split_metrics(const char* part, const Metrics& m) {
  if (m.count == 0) {
    std::printf("%-6s no queries\n", (std::string(part) + ":").c_str());
    return;
  }
  std::printf("%-6s loss %.6f  accuracy %.4f", (std::string(part) + ":").c_str(), m.loss, m.accuracy);
  if (std::isfinite(m.auc)) std::printf("  auc %.4f", m.auc);
  std::printf("  (%zu queries)\n", m.count);
}

// Progress on stderr: a bar on a terminal, a line every `every` epochs otherwise.
bool show_progress(const EpochInfo& r, int first_epoch, int epochs, int total, int every, bool tty) {
  if (tty) {
    const int width = 30;
    const int run_epoch = r.epoch - first_epoch;
    const int filled = epochs > 0 ? width * run_epoch / epochs : width;
    std::string bar(filled, '#');
    bar.resize(width, '.');
    std::fprintf(stderr, "\r\033[K[%s] %s", bar.c_str(), epoch_line(r, total).c_str());
    if (run_epoch == epochs) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  } else if (r.epoch % every == 0 || r.epoch == total) {
    std::fprintf(stderr, "%s\n", epoch_line(r, total).c_str());
  }
  return true;
}

// On a terminal, what the build is doing before the first epoch's bar (a 2M-node graph
// reads, grounds and plans for a minute): one line, overwritten by the next phase and
// cleared by the bar. Silent elsewhere (logs and scripts read the epochs' lines only).
class BuildStatus {
 public:
  explicit BuildStatus(bool show) : show_(show) {}
  ~BuildStatus() { clear(); }  // also when an error ends the command: its message starts the line
  BuildStatus(const BuildStatus&) = delete;
  BuildStatus& operator=(const BuildStatus&) = delete;
  void phase(const std::string& what) {
    if (!show_) return;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    std::fprintf(stderr, "\r\033[K[%6.1f s] %s ...", s, what.c_str());
    std::fflush(stderr);
    shown_ = true;
  }
  // The epochs' bar wrote over the line (and ended it).
  void replaced() { shown_ = false; }
  void clear() {
    if (!show_ || !shown_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
  }

 private:
  bool show_, shown_ = false;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

// What each rank of an MPI job held (in rank order): the training examples it parsed, the
// samples it grounded, and its peak memory (MB). Every rank calls this (an allgather).
nlohmann::json rank_shares(const Model& model, const Dataset& data) {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  const std::vector<uint32_t> mine = {static_cast<uint32_t>(data.parsed_examples()),
                                      static_cast<uint32_t>(data.held()),
                                      static_cast<uint32_t>(usage.ru_maxrss / 1024)};  // ru_maxrss: KB
  const std::vector<uint32_t> all = gather_from_every_process(mine);
  nlohmann::json out = {{"examples_parsed", nlohmann::json::array()}, {"samples_held", nlohmann::json::array()},
                        {"max_rss_mb", nlohmann::json::array()}};
  for (size_t r = 0; r + 2 < all.size(); r += 3) {
    out["examples_parsed"].push_back(all[r]);
    out["samples_held"].push_back(all[r + 1]);
    out["max_rss_mb"].push_back(all[r + 2]);
  }
  // One sample partitioned by its constants: what each rank held of it (the same answer on
  // every rank, so every rank takes part in the gather or none does).
  if (const std::optional<PartitionShare> p = model.partition_share(data)) {
    const std::pair<const char*, uint64_t> fields[] = {
        {"constants", p->constants},       {"owned_constants", p->owned_constants},
        {"query_constants", p->query_constants}, {"held_constants", p->held_constants},
        {"facts", p->facts},               {"held_facts", p->held_facts}, {"built_facts", p->built_facts},
        {"cut_facts", p->cut_facts},       {"queries", p->queries},
        {"owned_queries", p->owned_queries}, {"radius", p->radius}, {"metis", p->metis}, {"atoms", p->atoms},
        {"ghost_exchange", p->ghost_exchange}, {"ghosts", p->ghosts}, {"sent_atoms", p->sent_atoms},
        // Plan values this rank computed per training step (timing.work of this rank alone),
        // and the values its passes computed (timing.computed of this rank alone).
        {"plan_values_per_step", step_timing().steps ? step_timing().work_mine / step_timing().steps : 0},
        {"computed_values_per_step", step_timing().steps ? step_timing().computed_mine / step_timing().steps : 0}};
    std::vector<uint32_t> counts;
    for (const auto& [name, value] : fields) counts.push_back(static_cast<uint32_t>(std::min<uint64_t>(value, UINT32_MAX)));
    const std::vector<uint32_t> every = gather_from_every_process(counts);
    nlohmann::json& part = out["partition"];
    for (size_t f = 0; f < std::size(fields); ++f)
      for (size_t r = f; r < every.size(); r += std::size(fields)) part[fields[f].first].push_back(every[r]);
  }
  return out;
}

// The epoch of the lowest validation loss (a query split's model selection), if any.
void add_best(nlohmann::json& j, const TrainReport& result) {
  if (result.best_epoch > 0)
    j["best"] = {{"epoch", result.best_epoch},
                 {"val", metrics_json(result.best.validation)},
                 {"test", metrics_json(result.best.test)}};
}

// j.dump() with j["outputs"] = outputs_json(ev), the same text, the outputs written one at
// a time (write_outputs_json) where the placeholder of the top-level key is.
void write_json_with_outputs(std::ostream& os, nlohmann::json& j, const Evaluation& ev) {
  j["outputs"] = nullptr;
  const std::string text = j.dump();
  const std::string placeholder = "\"outputs\":null";
  // Keys are sorted and "outputs" is the only one so named at the top level; objects
  // before it ("history", ...) name no "outputs".
  const size_t at = text.find(placeholder);
  if (at == std::string::npos) throw Error(ErrorKind::Runtime, "--json: the report lost its outputs key");
  os.write(text.data(), static_cast<std::streamsize>(at));
  os << "\"outputs\":";
  write_outputs_json(os, ev);
  os.write(text.data() + at + placeholder.size(), static_cast<std::streamsize>(text.size() - at - placeholder.size()));
  os << "\n";
}

// The process's CPU seconds so far, in its own code (user) and in the kernel on its behalf
// (system: on a fresh machine mostly zeroing the pages it touches first).
struct CpuSeconds {
  double user = 0, system = 0;
  static CpuSeconds now() {
    struct rusage usage {};
    ::getrusage(RUSAGE_SELF, &usage);
    const auto seconds = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
    return {seconds(usage.ru_utime), seconds(usage.ru_stime)};
  }
  CpuSeconds since(const CpuSeconds& start) const { return {user - start.user, system - start.system}; }
};

// Where building went: `total` is read + grounding and neuralizing the datasets (the
// training set's alone is TrainReport::ground_seconds) + the plans and the training's setup.
// `load_cpu` is the CPU time of the reading and grounding, split as CpuSeconds says: a
// build that grows faster than its graph shows there whether lrnn's own work or the
// kernel's first touch of fresh memory grew (docs/big_graphs.md).
struct BuildSeconds {
  double total = 0;
  double read = 0;  // the template and the data files, parsed
  CpuSeconds load_cpu;
};

// Build and training times, and each epoch's own time (benchmarks take the minimum).
nlohmann::json timing_json(const TrainReport& result, const BuildSeconds& build) {
  nlohmann::json t = {{"build_s", build.total},
                      {"read_s", build.read},
                      {"ground_s", result.ground_seconds},
                      {"plan_s", result.build_seconds},
                      {"load_cpu_s", {{"user", build.load_cpu.user}, {"system", build.load_cpu.system}}},
                      {"train_s", result.train_seconds},
                      {"epoch_s", result.epochs ? result.train_seconds / result.epochs : 0.0},
                      {"epochs_s", nlohmann::json::array()},
                      {"steps_s", nlohmann::json::array()}};
  for (const EpochInfo& r : result.history) {
    t["epochs_s"].push_back(r.seconds);
    t["steps_s"].push_back(r.step_seconds);  // the training steps alone
  }
  return t;
}

// A link-prediction run's summary: the last epoch's metrics (its own pass, as a query
// split reports them), each link's score from it, and the timing.
void report_links(const TrainOptions& o, Model& model, const Dataset& data, const TrainReport& result,
                  const BuildSeconds& build_s) {
  nlohmann::json j;
  j["epochs"] = result.epochs;
  j["epochs_total"] = model.epochs_trained();
  j["stopped_early"] = result.stopped_early;
  if (!result.history.empty()) {
    const EpochInfo& last = result.history.back();
    j["splits"] = {{"train", metrics_json(last.train)}};
    if (last.has_validation) j["splits"]["val"] = metrics_json(last.validation);
    if (last.has_test) j["splits"]["test"] = metrics_json(last.test);
    add_best(j, result);
  }
  j["timing"] = timing_json(result, build_s);
  j["samples"] = data.size();
  j["parameters"] = model.num_parameter_values();
  j["history"] = history_json(result.history);
  j["settings"] = settings_json(model.settings());
  if (!result.history.empty() && !std::isfinite(result.history.back().train.loss))
    throw Error(ErrorKind::Runtime, "training diverged: the training loss is " +
                                        std::to_string(result.history.back().train.loss) + " (try a smaller --lr); "
                                        "the model was not saved");
  if (!o.save_path.empty()) model.save(o.save_path);
  if (o.json) {
    std::cout << j.dump() << "\n";
    finish_interrupted();
    return;
  }
  std::printf("trained %d epochs of link prediction (%zu parameters)\n", result.epochs, model.num_parameter_values());
  if (!result.history.empty()) {
    const EpochInfo& last = result.history.back();
    auto line = [](const char* part, const Metrics& m) {
      std::printf("%-6s loss %.6f  accuracy %.4f", (std::string(part) + ":").c_str(), m.loss, m.accuracy);
      if (std::isfinite(m.auc)) std::printf("  auc %.4f", m.auc);
      if (m.has_ranking)
        std::printf("  mrr %.4f  hits@1 %.4f  hits@3 %.4f  hits@10 %.4f", m.ranking.mrr, m.ranking.hits1,
                    m.ranking.hits3, m.ranking.hits10);
      std::printf("  (%zu links)\n", m.count);
    };
    line("train", last.train);
    if (last.has_validation) line("val", last.validation);
    if (last.has_test) line("test", last.test);
  }
  std::printf("time: build %.3f s, train %.3f s (%.5f s per epoch)\n", build_s.total, result.train_seconds,
              result.epochs ? result.train_seconds / result.epochs : 0.0);
  if (!o.save_path.empty()) std::printf("saved %s\n", o.save_path.c_str());
  finish_interrupted();
}

// Grounds the datasets now and drops their facts before training: nothing after reads them,
// and for one big graph their store is a third of the peak memory (docs/big_graphs.md).
// (Link prediction grounds its encoder in train instead.)
void ground_and_release_facts(const Model& model, Dataset& train_data, Dataset& test_data, BuildStatus& status) {
  status.phase("grounding " + std::to_string(train_data.size()) + " sample(s)");
  model.prepare(train_data);
  status.clear();
  cli::warn_underivable_queries(model, train_data, "training data");
  train_data = train_data.without_facts();
  if (test_data.size() > 0) {
    status.phase("grounding " + std::to_string(test_data.size()) + " test sample(s)");
    model.prepare(test_data);
    status.clear();
    cli::warn_underivable_queries(model, test_data, "test data");
    test_data = test_data.without_facts();
  }
#if defined(__GLIBC__)
  malloc_trim(0);  // the store's arrays, freed in the middle of the heap (as Engine::prepare trims)
#endif
}

// An MPI job's timing beside the single process's: rank 0's steps, their exchanges and
// allreduces, and every rank's share of the work (`ranks`).
void add_mpi_timing(nlohmann::json& j, const ProcessGroup& job, const Model& model, const Dataset& train_data) {
  const StepTiming steps = step_timing();
  j["timing"]["ranks"] = job.size;
  j["timing"]["step_compute_s"] = steps.compute_s;  // rank 0's forward + backward
  j["timing"]["imbalance_wait_s"] = steps.wait_s;   // rank 0 waiting for the slowest rank
  j["timing"]["allreduce_s"] = steps.allreduce_s;   // the gradient allreduce itself
  j["timing"]["steps"] = steps.steps;
  j["timing"]["allreduce_bytes"] = steps.allreduce_bytes;  // rank 0's payload, all steps
  j["timing"]["exchange_s"] = steps.exchange_s;          // rank 0's ghost exchanges (partitioned sample)
  j["timing"]["exchange_bytes"] = steps.exchange_bytes;  // what rank 0 sent in them, all steps
  j["timing"]["exchange_rounds"] = steps.exchange_rounds;  // their alltoallv calls (slices of big ones)
  // Plan values (the value buffers' sizes): of rank 0, of the busiest rank of each step,
  // of all ranks; and the same for the values the passes computed, without the data, the
  // ghosts and the sums of data alone (exec::Plan::computed_values).
  j["timing"]["work"] = {{"rank0", steps.work_mine}, {"max_rank", steps.work_max}, {"total", steps.work_total}};
  j["timing"]["computed"] = {
      {"rank0", steps.computed_mine}, {"max_rank", steps.computed_max}, {"total", steps.computed_total}};
  j["ranks"] = rank_shares(model, train_data);
}

void run_train(const TrainOptions& o, const CLI::App& cmd) {
  const auto t0 = std::chrono::steady_clock::now();
  const CpuSeconds cpu0 = CpuSeconds::now();
  // A save target that cannot be written fails now, not after the training it would lose.
  if (!o.save_path.empty()) check_can_write_atomically(o.save_path);
  if (!o.report_path.empty()) check_can_write_atomically(o.report_path);
  if (o.checkpoint_every > 0 && o.save_path.empty())
    cli::usage_error("--checkpoint-every writes the model to --save: give --save PATH too");
  if (o.test_curve)
    cli::usage_error(
        "--test-curve belongs to cross-validation (--folds K); a single run reports its test set every "
        "epoch already when it has one (--test-fraction, --test-examples)");
  Model model = make_model(o, cmd);
  if (!model.settings().link_prediction)
    for (const char* option : {"--negatives", "--corrupt", "--margin", "--ranking"})
      if (cmd.count(option))
        cli::usage_error(std::string(option) + " belongs to link prediction: give --link-prediction too");
  const bool tty = ::isatty(STDERR_FILENO);
  // In an MPI job (docs/distributed.md) every rank trains; rank 0 alone prints and writes.
  const bool root = is_root_process();
  BuildStatus status(tty && root);
  status.phase("reading " + (o.dataset.empty() ? o.examples_path : o.dataset));
  auto [train_data, test_data] = load_datasets(o, model.settings().seed);
  const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const bool has_test = test_data.size() > 0;
  if (!model.settings().link_prediction) ground_and_release_facts(model, train_data, test_data, status);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const CpuSeconds load_cpu = CpuSeconds::now().since(cpu0);

  const int every = o.report_every > 0 ? o.report_every : std::max(1, o.epochs / 10);
  const int first_epoch = model.epochs_trained();
  const int total = first_epoch + o.epochs;
  auto on_epoch = [&](const EpochInfo& r) {
    if (root) show_progress(r, first_epoch, o.epochs, total, every, tty);
    if (o.checkpoint_every > 0 && r.epoch % o.checkpoint_every == 0) model.save(o.save_path);
    if (stop_signal) {
      if (root)
        std::fprintf(stderr, "%s%s: stopping after epoch %d of %d%s\n", tty ? "\n" : "",
                   stop_signal == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)", r.epoch, total,
                   o.save_path.empty() ? "" : "; saving the model");
      return false;
    }
    return true;
  };
  StopOnSignal stop_on_signal;
  status.phase("planning and epoch " + std::to_string(first_epoch + 1));
  const TrainReport result = model.train(train_data, has_test ? &test_data : nullptr, on_epoch);
  if (result.epochs > 0) status.replaced();
  status.clear();
  if (tty && result.epochs < o.epochs) std::fprintf(stderr, "\n");
  const BuildSeconds build_s{load_s + result.build_seconds, read_s, load_cpu};

  if (model.settings().link_prediction) return report_links(o, model, train_data, result, build_s);
  const Evaluation ev = model.evaluate(train_data);
  nlohmann::json j;
  j["epochs"] = result.epochs;
  j["epochs_total"] = model.epochs_trained();
  j["stopped_early"] = result.stopped_early;
  const nlohmann::json m = metrics_json(ev.metrics);
  for (auto it = m.begin(); it != m.end(); ++it) j[it.key()] = it.value();
  if (has_test) {
    const Evaluation tev = model.evaluate(test_data);
    j["test"] = metrics_json(tev.metrics);
    j["test"]["outputs"] = outputs_json(tev);
  }
  if (ev.has_splits) {
    j["splits"] = {{"train", metrics_json(ev.train)},
                   {"val", metrics_json(ev.validation)},
                   {"test", metrics_json(ev.test)}};
    add_best(j, result);
  }
  j["timing"] = timing_json(result, build_s);
  if (const ProcessGroup job = process_group(); job.mpi) add_mpi_timing(j, job, model, train_data);
  j["samples"] = train_data.size();
  j["parameters"] = model.num_parameter_values();
  // Every output as a JSON object at once is big for one big graph (200k outputs: 0.13
  // GB); --json alone writes them one at a time instead (write_json_with_outputs).
  if (!o.report_path.empty()) j["outputs"] = outputs_json(ev);
  j["history"] = history_json(result.history);
  j["settings"] = settings_json(model.settings());
  if (!std::isfinite(ev.metrics.loss) && ev.metrics.count > 0)
    throw Error(ErrorKind::Runtime, "training diverged: the training loss is " + std::to_string(ev.metrics.loss) +
                                        " after " + std::to_string(model.epochs_trained()) +
                                        " epochs (try a smaller --lr); the model was not saved");
  if (!o.save_path.empty()) model.save(o.save_path);
  if (!root) return;
  if (stop_signal) j["interrupted"] = stop_signal == SIGINT ? "SIGINT" : "SIGTERM";
  if (!o.report_path.empty())
    write_file_atomically(o.report_path, training_report_html(j, o.load_path.empty() ? o.template_path : o.load_path));
  if (o.json) {
    if (j.contains("outputs")) std::cout << j.dump() << "\n";
    else write_json_with_outputs(std::cout, j, ev);
    finish_interrupted();
    return;
  }
  std::printf("trained %d epochs on %zu samples (%zu parameters)\n", result.epochs, train_data.size(),
              model.num_parameter_values());
  if (ev.has_splits) {
    print_split_metrics("train", ev.train);
    print_split_metrics("val", ev.validation);
    print_split_metrics("test", ev.test);
    if (result.best_epoch > 0)
      std::printf("best validation loss at epoch %d: val accuracy %.4f, test accuracy %.4f\n", result.best_epoch,
                  result.best.validation.accuracy, result.best.test.accuracy);
  } else {
    std::printf("train: loss %.6f  accuracy %.4f\n", ev.metrics.loss, ev.metrics.accuracy);
  }
  if (has_test)
    std::printf("test:  loss %.6f  accuracy %.4f\n", j["test"]["loss"].is_number() ? j["test"]["loss"].get<double>() : NAN,
                j["test"]["accuracy"].is_number() ? j["test"]["accuracy"].get<double>() : NAN);
  std::printf("time: build %.3f s, train %.3f s (%.5f s per epoch)\n", build_s.total, result.train_seconds,
              result.epochs ? result.train_seconds / result.epochs : 0.0);
  if (!o.save_path.empty()) std::printf("saved %s\n", o.save_path.c_str());
  if (!o.report_path.empty()) std::printf("report %s\n", o.report_path.c_str());
  finish_interrupted();
}

// `--folds K`: k fresh models on the stratified folds (train/cross_validation.hpp); per-fold
// test accuracy and mean ± std on stdout (or in --json). Options that name one model or one
// test set have no meaning here and are refused.
void run_cross_validation(const TrainOptions& o, const CLI::App& cmd) {
  if (process_group().size > 1)
    throw Error(ErrorKind::Semantic, "--folds is not distributed: run cross-validation without mpirun (or with -np 1)");
  for (const char* single : {"--load", "--save", "--test-examples", "--test-queries", "--test-fraction", "--report",
                             "--query-split", "--val-queries"})
    if (cmd.count(single))
      cli::usage_error(std::string("--folds trains k fresh models on their own test folds: ") + single +
                       " cannot be combined with it");
  if (o.template_path.empty()) cli::usage_error("lrnn train --folds needs a TEMPLATE");
  const Settings settings = apply_options(o, cmd, Settings{}, false);
  const Template tmpl = Template::from_file(o.template_path);
  const Dataset samples = cli::load_dataset(o.dataset, o.examples_path, o.queries_path);

  const int every = o.report_every > 0 ? o.report_every : std::max(1, o.epochs / 10);
  auto on_epoch = [&](int fold, const EpochInfo& r) {
    if (r.epoch % every == 0 || r.epoch == o.epochs)
      std::fprintf(stderr, "fold %d/%d  %s\n", fold + 1, o.folds, epoch_line(r, o.epochs).c_str());
    return stop_signal == 0;
  };
  StopOnSignal stop_on_signal;
  const CrossValidationReport cv = cross_validate(tmpl, settings, samples, o.folds, o.seed, on_epoch, o.test_curve);
  if (stop_signal)
    std::fprintf(stderr, "%s: stopped during fold %zu of %d; the completed folds are reported\n",
                 stop_signal == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)", cv.folds.size() + 1, o.folds);
  nlohmann::json j;
  j["folds"] = nlohmann::json::array();
  for (const FoldResult& f : cv.folds) {
    j["folds"].push_back({{"fold", f.fold},  // 0-based in JSON, as fold_of_sample
                          {"train_samples", f.train_samples},
                          {"test_samples", f.test_samples},
                          {"epochs", f.epochs},
                          {"train", metrics_json(f.train)},
                          {"test", metrics_json(f.test)},
                          {"train_s", f.train_seconds}});
    if (o.test_curve) {
      std::vector<double> accuracy;
      for (const Metrics& m : f.test_by_epoch) accuracy.push_back(m.accuracy);
      j["folds"].back()["test_accuracy_by_epoch"] = accuracy;
    }
  }
  j["k"] = cv.k;
  j["seed"] = cv.seed;
  j["samples"] = samples.size();
  j["completed"] = cv.folds.size();
  j["mean_accuracy"] = cv.mean_accuracy;
  j["std_accuracy"] = cv.std_accuracy;
  j["epoch_s"] = cv.epoch_seconds;
  j["fold_of_sample"] = cv.fold_of_sample;  // 0-based test fold per sample, so peers can reuse the folds
  if (o.test_curve && cv.best_epoch > 0) {
    j["mean_accuracy_by_epoch"] = cv.mean_accuracy_by_epoch;
    j["std_accuracy_by_epoch"] = cv.std_accuracy_by_epoch;
    j["best_epoch"] = cv.best_epoch;
    j["best_epoch_mean_accuracy"] = cv.best_epoch_mean_accuracy;
    j["best_epoch_std_accuracy"] = cv.best_epoch_std_accuracy;
  }
  if (stop_signal) j["interrupted"] = stop_signal == SIGINT ? "SIGINT" : "SIGTERM";
  if (o.json) {
    std::cout << j.dump() << "\n";
  } else {
    std::printf("%d-fold cross-validation of %zu samples (seed %llu, %d epochs per fold)\n", cv.k, samples.size(),
                static_cast<unsigned long long>(cv.seed), o.epochs);
    for (const FoldResult& f : cv.folds)
      std::printf("fold %2d: train %zu, test %zu  train accuracy %.4f  test loss %.6f  test accuracy %.4f\n", f.fold + 1,
                  f.train_samples, f.test_samples, f.train.accuracy, f.test.loss, f.test.accuracy);
    std::printf("test accuracy: %.4f ± %.4f (mean ± std over %zu folds)\n", cv.mean_accuracy, cv.std_accuracy,
                cv.folds.size());
    if (o.test_curve && cv.best_epoch > 0)
      std::printf("best epoch %d: test accuracy %.4f ± %.4f (the epoch with the highest mean over the folds, "
                  "chosen on the test folds as the GIN paper does: optimistic)\n",
                  cv.best_epoch, cv.best_epoch_mean_accuracy, cv.best_epoch_std_accuracy);
    std::printf("time: %.5f s per epoch\n", cv.epoch_seconds);
  }
  finish_interrupted();
}

lrnn::cli::RegisterCommand reg(40, [](CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand("train", "Train a template on examples and queries");
  cmd->add_option("template", o->template_path, "Template file (not needed with --load)");
  CLI::Option_group* data = cmd->add_option_group("data", "Training data: one of");
  data->add_option("--examples,-e", o->examples_path, "Examples file");
  data->add_option("--dataset", o->dataset, "A dataset instead of --examples: tu:DIR (TU graph format) or npz:FILE (one graph as arrays: x, edge_index, y, masks)");
  data->require_option(1);
  cmd->add_option("--queries,-q", o->queries_path, "Queries file (omit for labelled examples)");
  cmd->add_option("--epochs", o->epochs, "Epochs to train (default " + std::to_string(kDefaults.epochs) + ")")->check(cli::finite_number(0, 1e9, false, true));
  cmd->add_option("--optimizer", o->optimizer, "adam | sgd | adamw (default " + kDefaults.optimizer + ")")
      ->check(cli::setting_text("optimizer"));
  cmd->add_option("--lr", o->lr, "Learning rate (default " + number_text(kDefaults.lr) + ")")->check(cli::finite_number(0));
  cmd->add_option("--weight-decay", o->weight_decay, "Weight decay (AdamW default 0.01)")->check(cli::finite_number(0));
  cmd->add_option("--loss", o->loss, "mse | crossentropy (default " + kDefaults.loss + ")")
      ->check(cli::setting_text("loss"));
  cmd->add_option("--label-smoothing", o->label_smoothing,
                  "crossentropy of multi-class outputs: torch's label_smoothing, in [0, 1] (default 0)")
      ->check(cli::finite_number(0, 1));
  cmd->add_option("--batch-size", o->batch_size, "Samples per step (default 0: all)")->check(cli::finite_number(0, 1e12, false, true));
  cmd->add_option("--seed", o->seed, "Seed of initialisation, shuffling and splits (default " + std::to_string(kDefaults.seed) + ")")
      ->check(cli::integer_in(0, UINT64_MAX));
  cmd->add_option("--initializer", o->initializer, "glorot | he | uniform(s) | normal(s) | constant(v)")
      ->check(cli::setting_text("initializer"));
  cmd->add_option("--schedule", o->schedule, "constant | step | exponential | cosine | linear | noam")
      ->check(cli::setting_text("schedule"));
  cmd->add_option("--step-size", o->step_size, "step schedule: multiply the rate by --gamma every N epochs (default: epochs/4)")
      ->check(cli::finite_number(1, 1e9, false, true));
  cmd->add_option("--gamma", o->gamma, "step/exponential schedules: the decay factor (default " + number_text(kDefaults.gamma) + ")")
      ->check(cli::finite_number(0, 1, true));
  cmd->add_option("--warmup", o->warmup,
                  "noam schedule: optimizer steps of warm-up (default " + std::to_string(kDefaults.warmup) + ")")
      ->check(cli::finite_number(1, 1e9, false, true));
  cmd->add_option("--d-model", o->d_model, "noam schedule: the d_model^-0.5 factor's d_model (default: no factor)")
      ->check(cli::finite_number(1, 1e9, false, true));
  cmd->add_option("--test-examples", o->test_examples_path, "Test examples file");
  cmd->add_option("--test-queries", o->test_queries_path,
                  "Test queries file: of --test-examples, or without them the test part of a query split of the "
                  "training examples");
  cmd->add_option("--val-queries", o->val_queries_path,
                  "Validation queries of the training examples (a query split: evaluated every epoch, not trained on)");
  cmd->add_option("--query-split", o->query_split,
                  "TRAIN,VAL,TEST: split the training data's queries by these fractions (seeded by --seed); only "
                  "training queries give gradient, validation and test queries are reported every epoch")
      ->check(CLI::Validator(
          [](std::string& text) {
            try {
              const std::array<double, 3> f = split_fractions(text);
              check_query_split(f[0], f[1], f[2]);
            } catch (const Error& e) {
              return std::string(e.message());
            }
            return std::string();
          },
          "TRAIN,VAL,TEST"));
  cmd->add_option("--test-fraction", o->test_fraction, "Hold out this fraction of the samples (seeded)")->check(cli::finite_number(0, 1, false, false, true));
  cmd->add_option("--query-batch-size", o->query_batch_size,
                  "Training queries per step, each step running only the part of the network they depend on (one "
                  "big graph or knowledge base; default 0: whole samples per step)")
      ->check(cli::finite_number(0, 1e12, false, true));
  cmd->add_option("--fanout", o->fanout,
                  "With --query-batch-size: at most F ground rules per rule and head atom in each step, drawn anew "
                  "every step (GraphSAGE / NeighborLoader sampling); F1,F2,... gives one per hop away from the "
                  "queries, outermost first as NeighborLoader's num_neighbors (default 0: all)")
      ->check(CLI::Validator(
          [](std::string& text) {
            try {
              fanout_per_hop(text);
            } catch (const Error& e) {
              return std::string(e.message());
            }
            return std::string();
          },
          "F[,F...]"));
  cmd->add_flag("--link-prediction", o->link_prediction,
                "The queries are the true links (or triples) of one example: each epoch draws --negatives "
                "corruptions of every training link; validation and test links are scored against fixed ones (AUC)");
  cmd->add_option("--negatives", o->negatives,
                  "With --link-prediction: corrupted links per true link and epoch (default " +
                      std::to_string(kDefaults.negatives) + ")")
      ->check(cli::finite_number(1, 1e6, false, true));
  cmd->add_option("--corrupt", o->corrupt,
                  "With --link-prediction: the argument a negative replaces: tail (the last) | head (the first) | "
                  "both (either, at random) (default " + kDefaults.corrupt + ")")
      ->check(cli::setting_text("corrupt"));
  cmd->add_option("--margin", o->margin,
                  "With --link-prediction: margin ranking loss max(0, M - s(true) + s(negative)) (default 0: --loss "
                  "with targets 1 and 0)")
      ->check(cli::finite_number(0));
  cmd->add_flag("--ranking", o->ranking,
                "With --link-prediction: rank validation and test links against every corruption each epoch "
                "(filtered MRR, Hits@1/3/10)");
  cmd->add_option("--patience", o->patience, "Early stopping: epochs without improvement of the validation loss (with a query split), else of the test loss, else of the training loss (0: off)")->check(cli::finite_number(0, 1e9, false, true));
  cmd->add_option("--dtype", o->dtype,
                  "Scalar type of the forward and backward passes: float32 | float64 (default " + o->dtype +
                      "; parameters and optimizer state stay float64)")
      ->check(cli::dtype_name());
  cmd->add_option("--max-ground-rules", o->max_ground_rules,
                  "Refuse a sample that grounds to more ground rules than this (default " +
                      std::to_string(kDefaultMaxGroundRules) + ")")
      ->check(cli::finite_number(1, 1e15, false, true));
  cmd->add_option("--max-atoms", o->max_atoms,
                  "Refuse a sample whose least model derives more atoms than this (default " +
                      std::to_string(kDefaultMaxAtoms) + ")")
      ->check(cli::integer_in(1, 1'000'000'000'000'000));
  cli::add_max_memory(cmd);
  cmd->add_option("--report-every", o->report_every, "Progress line every N epochs when not on a terminal")->check(cli::finite_number(0, 1e9, false, true));
  cmd->add_option("--save", o->save_path, "Write the trained model (JSON) here");
  cmd->add_option("--load", o->load_path, "Continue training a saved model");
  cmd->add_option("--checkpoint-every", o->checkpoint_every, "Also write --save every N epochs during training (atomically)")
      ->check(cli::finite_number(1, 1e9, false, true));
  cmd->add_flag("--json", o->json, "Print one JSON object with metrics, timing, outputs and the per-epoch history");
  cmd->add_option("--report", o->report_path, "Write a self-contained HTML report (loss and accuracy curves, settings, outputs)");
  cmd->add_option("--folds", o->folds, "Stratified K-fold cross-validation: K fresh models, per-fold and mean ± std test accuracy (folds seeded by --seed)")
      ->check(cli::finite_number(2, 1e9, false, true));
  cmd->add_flag("--test-curve", o->test_curve,
                "With --folds: test every fold after every epoch and report the mean test accuracy per epoch and "
                "the epoch where it is highest (the GIN paper's selection; training is unchanged)");
  cmd->footer(
      "Examples:\n"
      "  lrnn train examples/templates/xor.lrnn --examples ../shared/datasets/neuralogic/simple/xor/naive/trainExamples.txt \\\n"
      "      --epochs 300 --lr 0.1 --save xor.json\n"
      "  lrnn train examples/templates/mutagenesis.lrnn -e ../shared/datasets/neuralogic/molecules/mutagenesis/examples.txt \\\n"
      "      -q ../shared/datasets/neuralogic/molecules/mutagenesis/queries.txt --test-fraction 0.2 --lr 0.003 --batch-size 1 --json");
  cmd->callback([o, cmd] { cmd->count("--folds") ? run_cross_validation(*o, *cmd) : run_train(*o, *cmd); });
});

}  // namespace
