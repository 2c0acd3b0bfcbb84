// The JSON and text reports of training (include/lrnn/report.hpp): metrics, outputs and the
// progress line of `lrnn train` and `lrnn eval`.
#include "lrnn/report.hpp"

#include <cmath>
#include <cstdio>
#include <ostream>

namespace lrnn {

using nlohmann::json;

namespace {

json number(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

json value(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  if (v.size() == 1) return number(v[0]);
  json a = json::array();
  for (double x : v) a.push_back(number(x));
  return a;
}

}  // namespace

json metrics_json(const Metrics& m) {
  json j = {{"loss", number(m.loss)}, {"accuracy", number(m.accuracy)}, {"count", m.count}};
  if (std::isfinite(m.auc)) j["auc"] = m.auc;
  if (m.has_ranking)
    j["ranking"] = {{"mrr", number(m.ranking.mrr)}, {"hits@1", number(m.ranking.hits1)},
                    {"hits@3", number(m.ranking.hits3)}, {"hits@10", number(m.ranking.hits10)},
                    {"count", m.ranking.count}};
  return j;
}

namespace {

json output_json(const Evaluation& ev, const Output& o) {
  json j = {{"example", o.example},
            {"query", o.query},
            {"target", value(o.target)},
            {"output", value(o.value)},
            {"prediction", value(o.prediction)}};
  if (ev.has_splits) j["split"] = to_string(o.split);
  if (!o.derived) j["derived"] = false;  // docs/semantics.md "Underivable queries"
  return j;
}

}  // namespace

json outputs_json(const Evaluation& ev) {
  json a = json::array();
  for (const Output& o : ev.outputs) a.push_back(output_json(ev, o));
  return a;
}

void write_outputs_json(std::ostream& os, const Evaluation& ev) {
  os << '[';
  for (size_t i = 0; i < ev.outputs.size(); ++i) os << (i ? "," : "") << output_json(ev, ev.outputs[i]).dump();
  os << ']';
}

std::string epoch_line(const EpochInfo& r, int total_epochs) {
  char buf[256];
  int n = std::snprintf(buf, sizeof buf, "epoch %d/%d  loss %.6f  acc %.4f", r.epoch, total_epochs, r.train.loss,
                        r.train.accuracy);
  if (r.has_validation && n > 0 && n < static_cast<int>(sizeof buf))
    n += std::snprintf(buf + n, sizeof buf - n, "  val loss %.6f  acc %.4f", r.validation.loss, r.validation.accuracy);
  if (r.has_test && n > 0 && n < static_cast<int>(sizeof buf))
    std::snprintf(buf + n, sizeof buf - n, "  test loss %.6f  acc %.4f", r.test.loss, r.test.accuracy);
  return buf;
}

}  // namespace lrnn
