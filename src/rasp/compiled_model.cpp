// Running compiled RASP weights (src/rasp/compiler.cpp builds them): the numeric forward
// pass of the transformer, decoding, verification against the interpreter, the layout table.
#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

#include "lrnn/rasp.hpp"

namespace lrnn::rasp {

namespace {

[[noreturn]] void fail(const std::string& message) { throw Error(ErrorKind::Runtime, message); }

std::string show(const std::vector<Value>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + repr(values[i]);
  return s + "]";
}

// y += A x for a rows x cols row-major A.
void add_matvec(const std::vector<double>& a, int rows, int cols, const double* x, double* y) {
  for (int r = 0; r < rows; ++r) {
    const double* row = a.data() + static_cast<size_t>(r) * cols;
    double s = 0;
    for (int c = 0; c < cols; ++c) s += row[c] * x[c];
    y[r] += s;
  }
}

// Every input over the vocabulary of length 1..max_len, by number (shortest first).
size_t count_inputs(size_t vocab, int max_len) {
  size_t total = 0, power = 1;
  for (int n = 1; n <= max_len; ++n) {
    if (power > SIZE_MAX / std::max<size_t>(vocab, 1)) return SIZE_MAX;
    power *= vocab;
    total = total > SIZE_MAX - power ? SIZE_MAX : total + power;
  }
  return total;
}

std::vector<Value> input_number(const std::vector<Value>& vocab, int max_len, size_t k) {
  size_t power = 1;
  for (int n = 1; n <= max_len; ++n) {
    power *= vocab.size();
    if (k < power) {
      std::vector<Value> in(n);
      for (int i = n - 1; i >= 0; --i) {
        in[i] = vocab[k % vocab.size()];
        k /= vocab.size();
      }
      return in;
    }
    k -= power;
  }
  return {};
}

}  // namespace

// Shared with compiler.cpp: enumerating inputs.
size_t compiled_input_count(size_t vocab, int max_len) { return count_inputs(vocab, max_len); }
std::vector<Value> compiled_input(const std::vector<Value>& vocab, int max_len, size_t k) {
  return input_number(vocab, max_len, k);
}

std::vector<double> CompiledModel::forward(const std::vector<Value>& input) const { return run_layers(input, nullptr); }

std::vector<std::vector<double>> CompiledModel::attention(const std::vector<Value>& input) const {
  std::vector<std::vector<double>> patterns;
  run_layers(input, &patterns);
  return patterns;
}

std::vector<size_t> CompiledModel::token_indices(const std::vector<Value>& input) const {
  if (input.size() > static_cast<size_t>(max_len))
    fail("the input has " + std::to_string(input.size()) + " tokens; the model was compiled for at most " +
         std::to_string(max_len));
  std::vector<size_t> out;
  for (size_t i = 0; i < input.size(); ++i) {
    size_t t = vocab.size();
    for (size_t v = 0; v < vocab.size(); ++v)
      if (values_equal(vocab[v], input[i]) && type_name(vocab[v]) == type_name(input[i])) t = v;
    if (t == vocab.size())
      fail("input position " + std::to_string(i) + " holds " + repr(input[i]) +
           ", which is not in the vocabulary the model was compiled for");
    out.push_back(t);
  }
  return out;
}

std::vector<double> CompiledModel::run_layers(const std::vector<Value>& input,
                                              std::vector<std::vector<double>>* patterns) const {
  const std::vector<size_t> tokens = token_indices(input);
  const int n = static_cast<int>(input.size());
  const int d = d_model;
  const int rows = n + 1;
  std::vector<double> x(static_cast<size_t>(rows) * d, 0.0);
  std::copy(bos_embedding.begin(), bos_embedding.end(), x.begin());
  for (int i = 0; i < n; ++i) {
    const size_t t = tokens[i];
    double* row = x.data() + static_cast<size_t>(i + 1) * d;
    for (int c = 0; c < d; ++c)
      row[c] = token_embedding[t * d + c] + position_embedding[static_cast<size_t>(i) * d + c];
  }
  std::vector<double> qx(static_cast<size_t>(rows) * d), vx(static_cast<size_t>(rows) * d), add(x.size());
  std::vector<double> scores(rows);
  for (const CompiledLayer& layer : layers) {
    std::fill(add.begin(), add.end(), 0.0);
    for (const CompiledHead& head : layer.heads) {
      // qx[q] = qk^T x_q, so that score(q, k) = qx[q] . x_k; vx[k] = ov x_k
      std::fill(qx.begin(), qx.end(), 0.0);
      std::fill(vx.begin(), vx.end(), 0.0);
      for (int r = 0; r < rows; ++r) {
        const double* xr = x.data() + static_cast<size_t>(r) * d;
        double* qr = qx.data() + static_cast<size_t>(r) * d;
        for (int i = 0; i < d; ++i) {
          if (xr[i] == 0) continue;
          const double* qk_row = head.qk.data() + static_cast<size_t>(i) * d;
          for (int j = 0; j < d; ++j) qr[j] += xr[i] * qk_row[j];
        }
        add_matvec(head.ov, d, d, xr, vx.data() + static_cast<size_t>(r) * d);
      }
      for (int q = 0; q < rows; ++q) {
        const int visible = causal ? q + 1 : rows;
        double best = -INFINITY;
        for (int k = 0; k < visible; ++k) {
          double s = 0;
          const double* qr = qx.data() + static_cast<size_t>(q) * d;
          const double* xk = x.data() + static_cast<size_t>(k) * d;
          for (int j = 0; j < d; ++j) s += qr[j] * xk[j];
          scores[k] = s;
          best = std::max(best, s);
        }
        double total = 0;
        for (int k = 0; k < visible; ++k) total += (scores[k] = std::exp(scores[k] - best));
        double* out = add.data() + static_cast<size_t>(q) * d;
        if (patterns) {
          if (q == 0) patterns->emplace_back(static_cast<size_t>(rows) * rows, 0.0);
          for (int k = 0; k < visible; ++k) patterns->back()[static_cast<size_t>(q) * rows + k] = scores[k] / total;
        }
        for (int k = 0; k < visible; ++k) {
          const double w = scores[k] / total;
          if (w == 0) continue;
          const double* vk = vx.data() + static_cast<size_t>(k) * d;
          for (int j = 0; j < d; ++j) out[j] += w * vk[j];
        }
      }
    }
    for (size_t i = 0; i < x.size(); ++i) x[i] += add[i];
    const CompiledMlp& mlp = layer.mlp;
    if (mlp.hidden == 0) continue;
    std::vector<double> h(mlp.hidden);
    for (int r = 0; r < rows; ++r) {
      double* xr = x.data() + static_cast<size_t>(r) * d;
      std::copy(mlp.b1.begin(), mlp.b1.end(), h.begin());
      add_matvec(mlp.w1, mlp.hidden, d, xr, h.data());
      for (double& v : h) v = std::max(v, 0.0);
      add_matvec(mlp.w2, d, mlp.hidden, h.data(), xr);
    }
  }
  return x;
}

std::vector<Value> CompiledModel::operator()(const std::vector<Value>& input) const {
  std::vector<double> x = forward(input);
  const ResidualSpace& out = spaces.at(output_space);
  std::vector<Value> result;
  for (size_t i = 0; i < input.size(); ++i) {
    const double* row = x.data() + (i + 1) * d_model;
    if (!out.numerical) {
      if (out.offset < 0) {
        result.push_back(out.values.at(0));
        continue;
      }
      int best = 0;
      for (int v = 1; v < out.width; ++v)
        if (row[out.offset + v] > row[out.offset + best]) best = v;
      result.push_back(out.values[best]);
      continue;
    }
    const double y = out.offset < 0 ? to_double(out.values.at(0)) : row[out.offset];
    // Read as the nearest value the s-op takes when it is that value up to rounding.
    Value read = y;
    for (const Value& v : out.values)
      if (is_number(v) && std::fabs(to_double(v) - y) <= 1e-6 * std::max(1.0, std::fabs(y))) read = v;
    result.push_back(read);
  }
  return result;
}

VerifyReport CompiledModel::verify(size_t max_inputs) const {
  VerifyReport report;
  report.total = count_inputs(vocab.size(), max_len);
  std::vector<size_t> numbers;
  if (report.total <= max_inputs) {
    for (size_t k = 0; k < report.total; ++k) numbers.push_back(k);
  } else {
    report.sampled = true;
    std::mt19937_64 rng(15);
    std::uniform_int_distribution<size_t> pick(0, report.total - 1);
    for (size_t k = 0; k < max_inputs; ++k) numbers.push_back(pick(rng));
  }
  for (size_t k : numbers) {
    std::vector<Value> in = input_number(vocab, max_len, k);
    std::vector<Value> expected = run(program, in, convention);
    std::vector<Value> got = (*this)(in);
    ++report.checked;
    bool same = expected.size() == got.size();
    for (size_t i = 0; same && i < got.size(); ++i)
      same = values_equal(expected[i], got[i]) && (is_none(expected[i]) == is_none(got[i]));
    if (!same) {
      if (report.mismatches++ == 0)
        report.first_mismatch = "input " + show(in) + ": interpreter " + show(expected) + ", weights " + show(got);
    }
  }
  return report;
}

int CompiledModel::heads() const {
  int h = 0;
  for (const auto& l : layers) h += static_cast<int>(l.heads.size());
  return h;
}

std::vector<int> CompiledModel::heads_per_layer() const {
  std::vector<int> out;
  for (const auto& l : layers) out.push_back(static_cast<int>(l.heads.size()));
  return out;
}

int CompiledModel::mlp_width() const {
  int w = 0;
  for (const auto& l : layers) w = std::max(w, l.mlp.hidden);
  return w;
}

std::string CompiledModel::table() const {
  std::ostringstream out;
  out << "residual stream: " << d_model << " dimensions\n";
  out << "  dims      space                          encoding     values\n";
  auto row = [&](const std::string& dims, const std::string& name, const std::string& enc, const std::string& vals) {
    std::string d = dims, nm = name.size() > 30 ? name.substr(0, 29) + "~" : name;
    d.resize(std::max<size_t>(d.size(), 10), ' ');
    nm.resize(std::max<size_t>(nm.size(), 31), ' ');
    std::string e = enc;
    e.resize(std::max<size_t>(e.size(), 13), ' ');
    out << "  " << d << nm << e << vals << "\n";
  };
  row("0", "one", "constant", "1");
  row("1", "bos", "constant", "1 at the BOS position");
  for (const ResidualSpace& s : spaces) {
    std::string dims = s.offset < 0 ? "-" : s.width == 1 ? std::to_string(s.offset)
                                                          : std::to_string(s.offset) + "-" +
                                                                std::to_string(s.offset + s.width - 1);
    std::string vals;
    for (size_t i = 0; i < s.values.size() && i < 12; ++i) vals += (i ? " " : "") + to_string(s.values[i]);
    if (s.values.size() > 12) vals += " ... (" + std::to_string(s.values.size()) + ")";
    row(dims, s.name, s.offset < 0 ? "constant" : s.numerical ? "numerical" : "categorical", vals);
  }
  out << "layers: " << layers.size() << " (analyze: " << analyzed_layers << "), heads:";
  for (int h : heads_per_layer()) out << " " << h;
  out << ", MLP hidden:";
  for (const auto& l : layers) out << " " << l.mlp.hidden;
  out << "\n";
  return out.str();
}

}  // namespace lrnn::rasp
