// Stratified k-fold cross-validation over the training engine (cross_validation.hpp).
#include "train/cross_validation.hpp"

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>
#include <utility>

#include "lrnn/diagnostics.hpp"
#include "train/config.hpp"

namespace lrnn::train {

namespace {

// The targets of a sample's queries, concatenated; empty when some query has none.
std::vector<double> sample_target(const Sample& s) {
  std::vector<double> all;
  for (const Literal& q : s.queries) {
    std::vector<double> t = target_of(q);
    if (t.empty()) return {};
    all.insert(all.end(), t.begin(), t.end());
  }
  return all;
}

std::string target_text(const std::vector<double>& t) {
  std::ostringstream out;
  if (t.size() == 1) {
    out << t[0];
    return out.str();
  }
  out << "[";
  for (size_t i = 0; i < t.size(); ++i) out << (i ? ", " : "") << t[i];
  out << "]";
  return out.str();
}

std::string sample_name(const std::vector<Sample>& samples, size_t s) {
  const std::string& id = samples[s].example.id;
  return "sample " + std::to_string(s + 1) + (id.empty() ? "" : " ('" + id + "')");
}

}  // namespace

std::vector<int> sample_classes(const std::vector<Sample>& samples) {
  std::map<std::vector<double>, int> class_of_target;
  std::vector<std::vector<double>> targets(samples.size());
  for (size_t s = 0; s < samples.size(); ++s) {
    targets[s] = sample_target(samples[s]);
    if (targets[s].empty())
      throw Error(ErrorKind::Semantic, "cross-validation needs a target on every query: " + sample_name(samples, s) +
                                           (samples[s].queries.empty() ? " has no query" : " has a query without a target"));
    class_of_target.emplace(targets[s], 0);
  }
  int next = 0;
  for (auto& [target, cls] : class_of_target) cls = next++;
  std::vector<int> classes(samples.size());
  for (size_t s = 0; s < samples.size(); ++s) classes[s] = class_of_target.at(targets[s]);
  return classes;
}

namespace {

// k must leave every class in every fold: 2 <= k <= the smallest class's sample count.
void check_fold_count(const std::vector<Sample>& samples, const std::vector<int>& classes, int k) {
  if (k < 2) throw Error(ErrorKind::Semantic, "cross-validation needs at least 2 folds, got " + std::to_string(k));
  std::map<int, size_t> count;
  std::map<int, size_t> first;
  for (size_t s = 0; s < classes.size(); ++s) {
    if (!count[classes[s]]++) first[classes[s]] = s;
  }
  for (const auto& [cls, n] : count) {
    if (static_cast<size_t>(k) <= n) continue;
    const std::string which = "the class with target " + target_text(sample_target(samples[first[cls]])) + " has " +
                              std::to_string(n) + " (of " + std::to_string(samples.size()) + " samples)";
    if (n < 2)
      throw Error(ErrorKind::Semantic, "stratified cross-validation needs at least 2 samples of every class, but " + which);
    throw Error(ErrorKind::Semantic, std::to_string(k) + " folds need at least " + std::to_string(k) +
                                         " samples of every class, but " + which + "; use at most " +
                                         std::to_string(n) + " folds");
  }
}

// The fold's training and test sets, each from the store's samples of its part (decoded
// one at a time while grounded).
std::pair<PreparedSet, PreparedSet> prepare_fold(Engine& engine, const SampleStore& samples,
                                                 const std::vector<int>& fold_of_sample, int fold,
                                                 size_t max_ground_rules) {
  std::vector<size_t> train_part, test_part;
  for (size_t s = 0; s < samples.size(); ++s) (fold_of_sample[s] == fold ? test_part : train_part).push_back(s);
  PreparedSet train_set = engine.prepare(samples.subset(train_part), max_ground_rules);
  PreparedSet test_set = engine.prepare(samples.subset(test_part), max_ground_rules);
  return {std::move(train_set), std::move(test_set)};
}

// The mean and population standard deviation (numpy's np.std, as the GNN literature
// reports "mean ± std") of one value per fold.
template <class Value>
std::pair<double, double> mean_and_std(const std::vector<FoldResult>& folds, Value value) {
  const double n = static_cast<double>(folds.size());
  double mean = 0, var = 0;
  for (const FoldResult& r : folds) mean += value(r) / n;
  for (const FoldResult& r : folds) var += (value(r) - mean) * (value(r) - mean) / n;
  return {mean, std::sqrt(var)};
}

// Mean and std of the folds' test accuracies after every epoch, and the epoch with the
// highest mean (the first on a tie).
void summarise_test_curves(CrossValidationReport& cv) {
  if (cv.folds.empty() || cv.folds.front().test_by_epoch.empty()) return;
  const size_t epochs = cv.folds.front().test_by_epoch.size();
  for (size_t e = 0; e < epochs; ++e) {
    const auto [mean, sd] = mean_and_std(cv.folds, [e](const FoldResult& r) { return r.test_by_epoch.at(e).accuracy; });
    cv.mean_accuracy_by_epoch.push_back(mean);
    cv.std_accuracy_by_epoch.push_back(sd);
    if (cv.best_epoch == 0 || mean > cv.best_epoch_mean_accuracy) {
      cv.best_epoch = static_cast<int>(e) + 1;
      cv.best_epoch_mean_accuracy = mean;
      cv.best_epoch_std_accuracy = sd;
    }
  }
}

}  // namespace

CrossValidationReport cross_validate(const TemplateAst& ast, const Settings& settings, const SampleStore& samples,
                                     int k, uint64_t fold_seed, const FoldEpochCallback& on_epoch, bool test_curve) {
  const TrainConfig config = make_train_config(settings, 0);
  if (test_curve && config.patience > 0)
    throw Error(ErrorKind::Semantic,
                "a test curve (--test-curve) needs every fold to train all its epochs: it cannot be combined with "
                "early stopping (patience " + std::to_string(config.patience) + ")");
  const std::vector<int> classes = sample_classes(samples.without_facts());
  check_fold_count(samples.without_facts(), classes, k);
  CrossValidationReport cv;
  cv.k = k;
  cv.seed = fold_seed;
  cv.fold_of_sample = stratified_folds(classes, k, fold_seed);
  size_t epochs_run = 0;
  double train_seconds = 0;
  bool stop = false;
  for (int fold = 0; fold < k && !stop; ++fold) {
    const auto t0 = std::chrono::steady_clock::now();
    Engine engine(ast, config.initializer, config.seed);
    FoldResult r;
    r.fold = fold;
    // Named references, not a structured binding: the epoch callback below captures the test
    // set, and clang (the fuzz build) refuses to capture structured bindings before C++20's P1091.
    std::pair<PreparedSet, PreparedSet> sets =
        prepare_fold(engine, samples, cv.fold_of_sample, fold, settings.max_ground_rules);
    PreparedSet& train_set = sets.first;
    const PreparedSet& test_set = sets.second;
    r.train_samples = train_set.size();
    r.test_samples = test_set.size();
    engine.plan_ahead(train_set);
    r.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double curve_seconds = 0;  // evaluating the curve is not training time
    std::function<bool(const EpochInfo&)> cb;
    if (on_epoch || test_curve)
      cb = [&](const EpochInfo& e) {
        EpochInfo info = e;
        if (test_curve) {  // between two epochs: the weights are the model after epoch e.epoch
          const auto t_eval = std::chrono::steady_clock::now();
          info.has_test = true;
          info.test = engine.evaluate(test_set, config.loss, config.dtype).metrics;
          r.test_by_epoch.push_back(info.test);
          curve_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t_eval).count();
        }
        if (on_epoch && !on_epoch(fold, info)) stop = true;
        return !stop;
      };
    TrainResult result = engine.train(train_set, nullptr, config, cb);
    if (stop) break;  // an interrupted fold is not reported: its model is not the one asked for
    r.epochs = result.epochs;
    r.stopped_early = result.stopped_early;
    r.train_seconds = result.train_seconds - curve_seconds;
    r.train = engine.evaluate(train_set, config.loss, config.dtype).metrics;
    // With a curve its last point is this model on the test fold already (nothing trains after it).
    r.test = r.test_by_epoch.empty() ? engine.evaluate(test_set, config.loss, config.dtype).metrics : r.test_by_epoch.back();
    epochs_run += static_cast<size_t>(result.epochs);
    train_seconds += r.train_seconds;
    cv.folds.push_back(r);
  }
  std::tie(cv.mean_accuracy, cv.std_accuracy) = mean_and_std(cv.folds, [](const FoldResult& r) { return r.test.accuracy; });
  cv.mean_loss = mean_and_std(cv.folds, [](const FoldResult& r) { return r.test.loss; }).first;
  summarise_test_curves(cv);
  cv.epoch_seconds = epochs_run ? train_seconds / static_cast<double>(epochs_run) : 0.0;
  return cv;
}

}  // namespace lrnn::train
