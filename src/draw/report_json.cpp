// The JSON and text reports of training (include/lrnn/report.hpp): metrics, outputs and the
// progress line of `lrnn train` and `lrnn eval`.
#include "lrnn/report.hpp"

#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

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

namespace {

// Writes outputs_json(ev).dump() an output at a time without building each output's JSON
// object (a std::map with string keys, an allocation per node): for 200k scalar outputs
// that object and its dump took ~225 ms, this writer ~45 ms (bench/report_json.cpp).
// The punctuation and the keys are written here, in the order nlohmann dumps an object's
// keys (a std::map: sorted). Every number and string still goes through nlohmann's own
// serializer, the one dump() constructs (nlohmann::detail, so tests/unit/
// draw_report_json_test.cpp compares the bytes with the DOM's), on a value reused from
// output to output (no allocation once its string has grown). So doubles keep nlohmann's
// text: the shortest that reads back, integral ones with ".0" (std::to_chars would write
// 1 and 1e-04 for nlohmann's 1.0 and 0.0001), and strings its escaping (control
// characters as \u00XX, UTF-8 passed through, invalid UTF-8 its type_error 316).
class OutputsWriter {
 public:
  explicit OutputsWriter(std::ostream& os) : os_(os), serializer_(nlohmann::detail::output_adapter<char>(buffer_), ' ') {
    buffer_.reserve(kFlushAt + 4096);
  }

  void write(const Evaluation& ev) {
    buffer_ += '[';
    for (size_t i = 0; i < ev.outputs.size(); ++i) {
      if (i) buffer_ += ',';
      // An output that cannot be written (invalid UTF-8) leaves what the DOM's dump left:
      // the outputs before it and the comma.
      const size_t written = buffer_.size();
      try {
        output(ev, ev.outputs[i]);
      } catch (...) {
        buffer_.resize(written);
        flush();
        throw;
      }
      if (buffer_.size() >= kFlushAt) flush();
    }
    buffer_ += ']';
    flush();
  }

 private:
  static constexpr size_t kFlushAt = 1 << 16;

  // output_json's keys in sorted order.
  void output(const Evaluation& ev, const Output& o) {
    buffer_ += '{';
    if (!o.derived) buffer_ += "\"derived\":false,";
    buffer_ += "\"example\":";
    example_.get_ref<json::number_unsigned_t&>() = o.example;
    dump(example_);
    buffer_ += ",\"output\":";
    value(o.value);
    buffer_ += ",\"prediction\":";
    value(o.prediction);
    buffer_ += ",\"query\":";
    text(o.query);
    if (ev.has_splits) {
      buffer_ += ",\"split\":";
      text(to_string(o.split));
    }
    buffer_ += ",\"target\":";
    value(o.target);
    buffer_ += '}';
  }

  // As value() above: null, a number or an array.
  void value(const std::vector<double>& v) {
    if (v.empty()) {
      buffer_ += "null";
    } else if (v.size() == 1) {
      number(v[0]);
    } else {
      buffer_ += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) buffer_ += ',';
        number(v[i]);
      }
      buffer_ += ']';
    }
  }

  // As number() above: NaN and infinities are null.
  void number(double x) {
    if (!std::isfinite(x)) {
      buffer_ += "null";
      return;
    }
    number_.get_ref<json::number_float_t&>() = x;
    dump(number_);
  }

  void text(const std::string& s) {
    string_.get_ref<json::string_t&>() = s;
    dump(string_);
  }

  // dump()'s own arguments: no indentation, UTF-8 not escaped to ASCII.
  void dump(const json& j) { serializer_.dump(j, false, false, 0); }

  void flush() {
    os_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }

  std::ostream& os_;
  std::string buffer_;  // the serializer appends to it: declared before serializer_
  nlohmann::detail::serializer<json> serializer_;
  json example_ = json::number_unsigned_t{0};
  json number_ = json::number_float_t{0.0};
  json string_ = json::string_t{};
};

}  // namespace

void write_outputs_json(std::ostream& os, const Evaluation& ev) { OutputsWriter(os).write(ev); }

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
