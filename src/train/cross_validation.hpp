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
#include "lrnn/training.hpp"
#include "train/engine.hpp"
#include "train/sample_store.hpp"

namespace lrnn::train {

// The class of every sample for stratification: samples whose query targets (all of
// them, in order) are equal share a class; classes are numbered in the sorted order of
// their targets. Throws lrnn::Error naming the first sample without a target.
std::vector<int> sample_classes(const std::vector<Sample>& samples);

// Called after every epoch of every fold (fold 0-based); returning false stops the whole run.
using FoldEpochCallback = std::function<bool(int fold, const EpochInfo&)>;

// Splits `samples` with stratified_folds(sample_classes(samples), k, fold_seed) and, per
// fold, trains a fresh Engine (initialised with the settings' initializer and seed) on the
// other folds with `settings` (early stopping, if any, watches the training loss: the test fold is never seen
// before the fold's final evaluation). Refuses k < 2 and k above the sample count of the
// smallest class (a fold would miss that class), naming the class.
// `test_curve`: also evaluate each fold's test set after every epoch (the epoch reports
// passed to on_epoch then carry it as `test`) and report the mean test accuracy per epoch
// and its best epoch (CrossValidationReport). Training is the same with or without it.
// Refused with early stopping (a stopped fold has no model for the later epochs).
CrossValidationReport cross_validate(const TemplateAst& ast, const Settings& settings, const SampleStore& samples,
                                     int k, uint64_t fold_seed, const FoldEpochCallback& on_epoch = {},
                                     bool test_curve = false);

}  // namespace lrnn::train
