// Stratified k-fold cross-validation (the graph-learning protocol: "How Powerful are
// Graph Neural Networks?", Errica et al.): k fresh models, each trained on k-1 folds and
// tested on the remaining one. One implementation behind `lrnn train --folds`,
// lrnn::cross_validate (include/lrnn/model.hpp) and lrnn.Model.cross_validate.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lrnn/ast.hpp"
#include "train/dataset.hpp"
#include "train/engine.hpp"

namespace lrnn::train {

// The class of every sample for stratification: samples whose query targets (all of
// them, in order) are equal share a class; classes are numbered in the sorted order of
// their targets. Throws lrnn::Error naming the first sample without a target.
std::vector<int> sample_classes(const std::vector<Sample>& samples);

struct FoldReport {
  int fold = 0;  // 0-based
  size_t train_samples = 0, test_samples = 0;
  Metrics train, test;  // after the last epoch
  int epochs = 0;
  bool stopped_early = false;
  double build_seconds = 0;  // grounding + neuralization of both parts
  double train_seconds = 0;
};

struct CrossValidation {
  int k = 0;
  uint64_t seed = 0;                 // of the fold assignment
  std::vector<int> fold_of_sample;   // test fold of every sample
  std::vector<FoldReport> folds;
  // Over the folds' test accuracies: the mean and the population standard deviation
  // (numpy's np.std, as the GNN literature reports "mean ± std").
  double mean_accuracy = 0, std_accuracy = 0;
  double mean_loss = 0;
  double epoch_seconds = 0;  // training time per epoch, averaged over every fold's epochs
  // False when the callback stopped the run: `folds` then holds the folds completed before.
  bool complete() const { return static_cast<int>(folds.size()) == k; }
};

// Called after every epoch of every fold (fold 0-based); returning false stops the whole run.
using FoldEpochCallback = std::function<bool(int fold, const EpochReport&)>;

// Splits `samples` with stratified_folds(sample_classes(samples), k, fold_seed) and, per
// fold, trains a fresh Engine(ast, config.initializer, config.seed) on the other folds with
// `config` (early stopping, if any, watches the training loss: the test fold is never seen
// before the fold's final evaluation). Refuses k < 2 and k above the sample count of the
// smallest class (a fold would miss that class), naming the class.
CrossValidation cross_validate(const TemplateAst& ast, const TrainConfig& config, const std::vector<Sample>& samples,
                               int k, uint64_t fold_seed, const FoldEpochCallback& on_epoch = {});

}  // namespace lrnn::train
