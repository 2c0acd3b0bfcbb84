// `lrnn train TEMPLATE --examples E [--queries Q] ...`: ground, neuralize, train, report,
// save. Progress goes to stderr (a bar on a terminal, a line every few epochs otherwise);
// the summary (or, with --json, one JSON object) goes to stdout.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.hpp"
#include "cli/dataset_spec.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/syntax.hpp"
#include "syntax/atomic_file.hpp"
#include "train/cross_validation.hpp"
#include "train/engine.hpp"
#include "train/report.hpp"

namespace {

using namespace lrnn;

struct TrainOptions {
  std::string template_path, examples_path, queries_path, dataset;
  std::string test_examples_path, test_queries_path;
  double test_fraction = 0;
  int epochs = 100;
  std::string optimizer = "adam";
  double lr = -1;
  double weight_decay = -1;
  std::string loss = "mse";
  size_t batch_size = 0;
  uint64_t seed = 1;
  std::string initializer = "glorot";
  std::string schedule = "constant";
  int patience = 0;
  int step_size = 1;
  double gamma = 0.5;
  int report_every = 0;
  std::string save_path, load_path;
  bool json = false;
  int folds = 0;  // > 0: stratified k-fold cross-validation instead of one training run
};

std::vector<train::Sample> load_samples(const std::string& examples, const std::string& queries) {
  std::vector<ExampleAst> ex = load_examples(examples);
  std::vector<QueryLineAst> q;
  if (!queries.empty()) q = load_queries(queries);
  return train::pair_samples(std::move(ex), q);
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

void run_train(const TrainOptions& o, const CLI::App& cmd) {
  const auto t0 = std::chrono::steady_clock::now();
  // A save target that cannot be written fails now, not after the training it would lose.
  if (!o.save_path.empty()) check_can_write_atomically(o.save_path);
  train::TrainConfig config;
  std::unique_ptr<train::Engine> engine;
  if (!o.load_path.empty()) {
    // The saved model carries its template: a TEMPLATE given too would be ignored.
    if (!o.template_path.empty())
      throw Error(ErrorKind::Semantic, "give either a TEMPLATE or --load MODEL, not both: the model '" + o.load_path +
                                           "' carries its own template, so '" + o.template_path + "' would be ignored");
    engine = train::Engine::load(o.load_path, config);
  } else {
    if (o.template_path.empty()) throw Error(ErrorKind::Semantic, "lrnn train needs a TEMPLATE (or --load MODEL)");
    config.initializer = train::Initializer::parse(o.initializer);
    config.seed = o.seed;
    engine = std::make_unique<train::Engine>(load_template(o.template_path), config.initializer, config.seed);
  }
  // Options given on the command line override a loaded model's settings.
  auto given = [&](const char* name) { return cmd.count(name) > 0; };
  if (o.load_path.empty() || given("--optimizer")) config.optimizer = train::OptimizerConfig::defaults(train::OptimizerConfig::parse(o.optimizer));
  if (given("--lr")) config.optimizer.lr = o.lr;
  else if (o.load_path.empty()) config.optimizer.lr = 0.01;
  if (o.weight_decay >= 0) config.optimizer.weight_decay = o.weight_decay;
  if (o.load_path.empty() || given("--loss")) config.loss = train::parse_loss(o.loss);
  if (o.load_path.empty() || given("--batch-size")) config.batch_size = o.batch_size;
  if (o.load_path.empty() || given("--seed")) config.seed = o.seed;
  if (o.load_path.empty() || given("--schedule")) config.schedule.kind = train::Schedule::parse(o.schedule);
  if (o.load_path.empty() || given("--patience")) config.patience = o.patience;
  config.epochs = o.epochs;
  config.schedule.total_epochs = engine->epochs_trained() + o.epochs;
  // Step size and decay factor of the step/exponential schedules: given, or a loaded
  // model's, or the defaults (a quarter of the epochs; 0.5).
  if (given("--step-size")) config.schedule.step_size = o.step_size;
  else if (o.load_path.empty()) config.schedule.step_size = std::max(1, o.epochs / 4);
  if (given("--gamma")) config.schedule.gamma = o.gamma;

  cli::LoadedData data = cli::load_data(o.dataset, o.examples_path, o.queries_path);
  std::vector<train::Sample> train_samples = train::pair_samples(std::move(data.examples), data.queries);
  std::vector<train::Sample> test_samples;
  if (!o.test_examples_path.empty()) {
    test_samples = load_samples(o.test_examples_path, o.test_queries_path);
  } else if (o.test_fraction > 0) {
    std::vector<train::Sample> all = std::move(train_samples);
    train_samples.clear();
    train::split_samples(all, o.test_fraction, config.seed, train_samples, test_samples);
  }
  train::PreparedSet train_set = engine->prepare(std::move(train_samples));
  std::unique_ptr<train::PreparedSet> test_set;
  if (!test_samples.empty()) test_set = std::make_unique<train::PreparedSet>(engine->prepare(std::move(test_samples)));
  engine->plan_for(train_set);
  const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const bool tty = ::isatty(STDERR_FILENO);
  const int every = o.report_every > 0 ? o.report_every : std::max(1, o.epochs / 10);
  auto on_epoch = [&](const train::EpochReport& r) {
    if (tty) {
      const int width = 30;
      const int run_epoch = static_cast<int>(r.epoch) - (config.schedule.total_epochs - o.epochs);
      const int filled = o.epochs > 0 ? width * run_epoch / o.epochs : width;
      std::string bar(filled, '#');
      bar.resize(width, '.');
      std::fprintf(stderr, "\r[%s] %s", bar.c_str(), train::epoch_line(r, config.schedule.total_epochs).c_str());
      if (run_epoch == o.epochs) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    } else if (r.epoch % every == 0 || r.epoch == config.schedule.total_epochs) {
      std::fprintf(stderr, "%s\n", train::epoch_line(r, config.schedule.total_epochs).c_str());
    }
    if (stop_signal) {
      std::fprintf(stderr, "%s%s: stopping after epoch %d of %d%s\n", tty ? "\n" : "",
                   stop_signal == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)", r.epoch,
                   config.schedule.total_epochs, o.save_path.empty() ? "" : "; saving the model");
      return false;
    }
    return true;
  };
  StopOnSignal stop_on_signal;
  train::TrainResult result = engine->train(train_set, test_set.get(), config, on_epoch);
  if (tty && result.epochs < o.epochs) std::fprintf(stderr, "\n");

  train::Evaluation ev = engine->evaluate(train_set, config.loss);
  nlohmann::json j;
  j["epochs"] = result.epochs;
  j["epochs_total"] = engine->epochs_trained();
  j["stopped_early"] = result.stopped_early;
  const nlohmann::json m = train::metrics_json(ev.metrics);
  for (auto it = m.begin(); it != m.end(); ++it) j[it.key()] = it.value();
  if (test_set) {
    train::Evaluation tev = engine->evaluate(*test_set, config.loss);
    j["test"] = train::metrics_json(tev.metrics);
    j["test"]["outputs"] = train::outputs_json(*test_set, tev);
  }
  j["timing"] = {{"build_s", build_s},
                 {"ground_s", train_set.seconds},
                 {"train_s", result.train_seconds},
                 {"epoch_s", result.epochs ? result.train_seconds / result.epochs : 0.0}};
  j["samples"] = train_set.size();
  j["parameters"] = engine->parameters().size();
  j["outputs"] = train::outputs_json(train_set, ev);
  if (!std::isfinite(ev.metrics.loss) && ev.metrics.count > 0)
    throw Error(ErrorKind::Runtime, "training diverged: the training loss is " + std::to_string(ev.metrics.loss) +
                                        " after " + std::to_string(engine->epochs_trained()) +
                                        " epochs (try a smaller --lr); the model was not saved");
  if (!o.save_path.empty()) engine->save(o.save_path, config);
  if (stop_signal) j["interrupted"] = stop_signal == SIGINT ? "SIGINT" : "SIGTERM";
  if (o.json) {
    std::cout << j.dump() << "\n";
    finish_interrupted();
    return;
  }
  std::printf("trained %d epochs on %zu samples (%zu parameters)\n", result.epochs, train_set.size(),
              engine->parameters().size());
  std::printf("train: loss %.6f  accuracy %.4f\n", ev.metrics.loss, ev.metrics.accuracy);
  if (test_set)
    std::printf("test:  loss %.6f  accuracy %.4f\n", j["test"]["loss"].is_number() ? j["test"]["loss"].get<double>() : NAN,
                j["test"]["accuracy"].is_number() ? j["test"]["accuracy"].get<double>() : NAN);
  std::printf("time: build %.3f s, train %.3f s (%.5f s per epoch)\n", build_s, result.train_seconds,
              result.epochs ? result.train_seconds / result.epochs : 0.0);
  if (!o.save_path.empty()) std::printf("saved %s\n", o.save_path.c_str());
  finish_interrupted();
}

// `--folds K`: k fresh models on the stratified folds (train/cross_validation.hpp); per-fold
// test accuracy and mean ± std on stdout (or in --json). Options that name one model or one
// test set have no meaning here and are refused.
void run_cross_validation(const TrainOptions& o, const CLI::App& cmd) {
  for (const char* single : {"--load", "--save", "--test-examples", "--test-queries", "--test-fraction"})
    if (cmd.count(single))
      throw Error(ErrorKind::Semantic, std::string("--folds trains k fresh models on their own test folds: ") + single +
                                           " cannot be combined with it");
  if (o.template_path.empty()) throw Error(ErrorKind::Semantic, "lrnn train --folds needs a TEMPLATE");
  train::TrainConfig config;
  config.initializer = train::Initializer::parse(o.initializer);
  config.seed = o.seed;
  config.optimizer = train::OptimizerConfig::defaults(train::OptimizerConfig::parse(o.optimizer));
  config.optimizer.lr = cmd.count("--lr") ? o.lr : 0.01;
  if (o.weight_decay >= 0) config.optimizer.weight_decay = o.weight_decay;
  config.loss = train::parse_loss(o.loss);
  config.batch_size = o.batch_size;
  config.schedule.kind = train::Schedule::parse(o.schedule);
  config.schedule.step_size = cmd.count("--step-size") ? o.step_size : std::max(1, o.epochs / 4);
  config.schedule.gamma = o.gamma;
  config.patience = o.patience;
  config.epochs = o.epochs;
  const TemplateAst tmpl = load_template(o.template_path);
  cli::LoadedData data = cli::load_data(o.dataset, o.examples_path, o.queries_path);
  const std::vector<train::Sample> samples = train::pair_samples(std::move(data.examples), data.queries);

  const int every = o.report_every > 0 ? o.report_every : std::max(1, o.epochs / 10);
  auto on_epoch = [&](int fold, const train::EpochReport& r) {
    if (r.epoch % every == 0 || r.epoch == o.epochs)
      std::fprintf(stderr, "fold %d/%d  %s\n", fold + 1, o.folds, train::epoch_line(r, o.epochs).c_str());
    return stop_signal == 0;
  };
  StopOnSignal stop_on_signal;
  const train::CrossValidation cv = train::cross_validate(tmpl, config, samples, o.folds, o.seed, on_epoch);
  if (stop_signal)
    std::fprintf(stderr, "%s: stopped during fold %zu of %d; the completed folds are reported\n",
                 stop_signal == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)", cv.folds.size() + 1, o.folds);
  nlohmann::json j;
  j["folds"] = nlohmann::json::array();
  for (const train::FoldReport& f : cv.folds)
    j["folds"].push_back({{"fold", f.fold},  // 0-based in JSON, as fold_of_sample
                          {"train_samples", f.train_samples},
                          {"test_samples", f.test_samples},
                          {"epochs", f.epochs},
                          {"train", train::metrics_json(f.train)},
                          {"test", train::metrics_json(f.test)},
                          {"train_s", f.train_seconds}});
  j["k"] = cv.k;
  j["seed"] = cv.seed;
  j["samples"] = samples.size();
  j["completed"] = cv.folds.size();
  j["mean_accuracy"] = cv.mean_accuracy;
  j["std_accuracy"] = cv.std_accuracy;
  j["epoch_s"] = cv.epoch_seconds;
  j["fold_of_sample"] = cv.fold_of_sample;  // 0-based test fold per sample, so peers can reuse the folds
  if (stop_signal) j["interrupted"] = stop_signal == SIGINT ? "SIGINT" : "SIGTERM";
  if (o.json) {
    std::cout << j.dump() << "\n";
  } else {
    std::printf("%d-fold cross-validation of %zu samples (seed %llu, %d epochs per fold)\n", cv.k, samples.size(),
                static_cast<unsigned long long>(cv.seed), o.epochs);
    for (const train::FoldReport& f : cv.folds)
      std::printf("fold %2d: train %zu, test %zu  train accuracy %.4f  test loss %.6f  test accuracy %.4f\n", f.fold + 1,
                  f.train_samples, f.test_samples, f.train.accuracy, f.test.loss, f.test.accuracy);
    std::printf("test accuracy: %.4f ± %.4f (mean ± std over %zu folds)\n", cv.mean_accuracy, cv.std_accuracy,
                cv.folds.size());
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
  data->add_option("--dataset", o->dataset, "A dataset instead of --examples: tu:DIR (TU graph format)");
  data->require_option(1);
  cmd->add_option("--queries,-q", o->queries_path, "Queries file (omit for labelled examples)");
  cmd->add_option("--epochs", o->epochs, "Epochs to train (default 100)")->check(cli::finite_number(0, 1e9, false, true));
  cmd->add_option("--optimizer", o->optimizer, "adam | sgd | adamw (default adam)");
  cmd->add_option("--lr", o->lr, "Learning rate (default 0.01)")->check(cli::finite_number(0));
  cmd->add_option("--weight-decay", o->weight_decay, "Weight decay (AdamW default 0.01)")->check(cli::finite_number(0));
  cmd->add_option("--loss", o->loss, "mse | crossentropy (default mse)");
  cmd->add_option("--batch-size", o->batch_size, "Samples per step (default 0: all)")->check(cli::finite_number(0, 1e12, false, true));
  cmd->add_option("--seed", o->seed, "Seed of initialisation, shuffling and splits (default 1)");
  cmd->add_option("--initializer", o->initializer, "glorot | he | uniform(s) | normal(s) | constant(v)");
  cmd->add_option("--schedule", o->schedule, "constant | step | exponential | cosine");
  cmd->add_option("--step-size", o->step_size, "step schedule: multiply the rate by --gamma every N epochs (default: epochs/4)")
      ->check(cli::finite_number(1, 1e9, false, true));
  cmd->add_option("--gamma", o->gamma, "step/exponential schedules: the decay factor (default 0.5)")
      ->check(cli::finite_number(0, 1, true));
  cmd->add_option("--test-examples", o->test_examples_path, "Test examples file");
  cmd->add_option("--test-queries", o->test_queries_path, "Test queries file");
  cmd->add_option("--test-fraction", o->test_fraction, "Hold out this fraction of the samples (seeded)")->check(cli::finite_number(0, 1));
  cmd->add_option("--patience", o->patience, "Early stopping: epochs without improvement (0: off)")->check(cli::finite_number(0, 1e9, false, true));
  cmd->add_option("--report-every", o->report_every, "Progress line every N epochs when not on a terminal")->check(cli::finite_number(0, 1e9, false, true));
  cmd->add_option("--save", o->save_path, "Write the trained model (JSON) here");
  cmd->add_option("--load", o->load_path, "Continue training a saved model");
  cmd->add_flag("--json", o->json, "Print one JSON object with metrics, timing and outputs");
  cmd->add_option("--folds", o->folds, "Stratified K-fold cross-validation: K fresh models, per-fold and mean ± std test accuracy (folds seeded by --seed)")
      ->check(cli::finite_number(2, 1e9, false, true));
  cmd->footer(
      "Examples:\n"
      "  lrnn train examples/templates/xor.lrnn --examples ../shared/datasets/neuralogic/simple/xor/naive/trainExamples.txt \\\n"
      "      --epochs 300 --lr 0.1 --save xor.json\n"
      "  lrnn train examples/templates/mutagenesis.lrnn -e ../shared/datasets/neuralogic/molecules/mutagenesis/examples.txt \\\n"
      "      -q ../shared/datasets/neuralogic/molecules/mutagenesis/queries.txt --test-fraction 0.2 --lr 0.003 --batch-size 1 --json");
  cmd->callback([o, cmd] { cmd->count("--folds") ? run_cross_validation(*o, *cmd) : run_train(*o, *cmd); });
});

}  // namespace
