// Early stopping with patience (docs/cli.md --patience), shared by the training loops
// (Engine::train, Engine::train_links): the values of the best epoch so far are kept, and
// restored once `patience` epochs in a row bring no improvement of the watched loss.
#pragma once

#include <limits>
#include <vector>

namespace lrnn::train {

class EarlyStopping {
 public:
  explicit EarlyStopping(int patience) : patience_(patience) {}
  bool active() const { return patience_ > 0; }

  // After an epoch whose watched loss was computed with `params` (and `fact_values`, the
  // learnable facts' values, if any): false once the patience is used up.
  bool keep_going(double watched, const std::vector<double>& params, const std::vector<double>* fact_values) {
    if (watched < best_) {
      best_ = watched;
      since_best_ = 0;
      best_params_ = params;
      if (fact_values) best_fact_values_ = *fact_values;
      return true;
    }
    return ++since_best_ < patience_;
  }

  // Puts the best epoch's values back (nothing when no epoch was kept).
  void restore(std::vector<double>& params, std::vector<double>* fact_values) const {
    if (!best_params_.empty()) params = best_params_;
    if (fact_values && !best_fact_values_.empty()) *fact_values = best_fact_values_;
  }

 private:
  int patience_;
  double best_ = std::numeric_limits<double>::infinity();
  int since_best_ = 0;
  std::vector<double> best_params_, best_fact_values_;
};

}  // namespace lrnn::train
