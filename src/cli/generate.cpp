// `lrnn generate MODEL --input "3 4 5" [--input ...] --max-len N [--bos 1 --eos 2] [--beam K]`:
// decoding with a saved sequence-to-sequence model (a template of zoo::seq2seq trained by
// `lrnn train --save`, docs/seq2seq.md). Greedy: from the decoder input [bos], the most likely
// next token (the first on a tie) is appended until eos or N tokens; --beam K: the beam search
// of lrnn.nn.zoo.seq2seq.beam_search, step for step. Each line of output holds the tokens after
// bos, without eos. The model runs through zoo::SequenceModel, which keeps one grounded plan
// per (source length, prefix length), so a prefix length seen before is not grounded again.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "lrnn/model.hpp"
#include "lrnn/zoo.hpp"

namespace {

using namespace lrnn;

struct GenerateOptions {
  std::string model_path;
  std::vector<std::string> inputs;
  int max_len = 0;
  int bos = 1, eos = 2;
  int beam = 1;
  std::string prefix = "s2s", source = "src", target = "tgt";
};

// "3 4 5" (or "3,4,5") as tokens in [0, vocab); anything else names the input at fault.
std::vector<int> tokens_of(const std::string& text, int vocab) {
  std::string spaced = text;
  for (char& c : spaced)
    if (c == ',') c = ' ';
  std::istringstream in(spaced);
  std::vector<int> out;
  std::string word;
  while (in >> word) {
    size_t used = 0;
    int t = -1;
    try {
      t = std::stoi(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || t < 0 || t >= vocab)
      throw Error(ErrorKind::Semantic, "--input '" + text + "': '" + word + "' is not a token in [0, " +
                                           std::to_string(vocab) + ")");
    out.push_back(t);
  }
  if (out.empty()) throw Error(ErrorKind::Semantic, "--input '" + text + "' holds no tokens");
  return out;
}

std::vector<double> one_hot(const std::vector<int>& tokens, int vocab) {
  std::vector<double> x(tokens.size() * size_t(vocab), 0.0);
  for (size_t i = 0; i < tokens.size(); ++i) x[i * vocab + tokens[i]] = 1.0;
  return x;
}

// The logits of the token after `prefix` (decoder input) given the source.
std::vector<double> next_logits(zoo::SequenceModel& runner, const GenerateOptions& o, const std::vector<int>& src,
                                const std::vector<double>& src_x, const std::vector<int>& prefix, int vocab) {
  const std::vector<double> tgt_x = one_hot(prefix, vocab);
  const int m = static_cast<int>(prefix.size());
  const std::vector<double> logits = runner.forward(
      {{o.source, src_x.data(), static_cast<int>(src.size()), vocab}, {o.target, tgt_x.data(), m, vocab}}, m);
  return std::vector<double>(logits.end() - vocab, logits.end());
}

// lrnn.nn.zoo.seq2seq.beam_search (python/lrnn/nn/zoo/seq2seq.py), written again step for step:
// summed log-probabilities, the `beam` best extensions of each live hypothesis in order of
// probability (ties: the lower token), a stable sort of the candidates, eos hypotheses set
// aside, the exact early stop, no length penalty.
std::vector<int> beam_search(const std::function<std::vector<double>(const std::vector<int>&)>& next, int bos,
                             int eos, int max_len, int beam) {
  using Hyp = std::pair<double, std::vector<int>>;
  std::vector<Hyp> live = {{0.0, {bos}}}, done;
  for (int step = 0; step < max_len; ++step) {
    std::vector<Hyp> candidates;
    for (const Hyp& h : live) {
      const std::vector<double> z = next(h.second);
      const double top = *std::max_element(z.begin(), z.end());
      double sum = 0;
      for (double v : z) sum += std::exp(v - top);
      const double lse = top + std::log(sum);
      std::vector<int> order(z.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return z[a] > z[b]; });
      for (int k = 0; k < std::min<int>(beam, static_cast<int>(order.size())); ++k) {
        Hyp c = h;
        c.first += z[order[k]] - lse;
        c.second.push_back(order[k]);
        candidates.push_back(std::move(c));
      }
    }
    std::stable_sort(candidates.begin(), candidates.end(), [](const Hyp& a, const Hyp& b) { return a.first > b.first; });
    live.clear();
    for (size_t k = 0; k < std::min<size_t>(beam, candidates.size()); ++k)
      (candidates[k].second.back() == eos ? done : live).push_back(std::move(candidates[k]));
    if (live.empty()) break;
    double best_done = -INFINITY;
    for (const Hyp& d : done) best_done = std::max(best_done, d.first);
    if (!done.empty() && best_done >= live.front().first) break;
  }
  const std::vector<Hyp>& pool = done.empty() ? live : done;
  const Hyp* best = &pool.front();  // the first of the highest, as Python's max
  for (const Hyp& h : pool)
    if (h.first > best->first) best = &h;
  std::vector<int> out(best->second.begin() + 1, best->second.end());
  if (!out.empty() && out.back() == eos) out.pop_back();
  return out;
}

void run_generate(const GenerateOptions& o) {
  const Model model = Model::load(o.model_path);
  // The vocabulary is the embedding table's rows ($<prefix>_emb={V,d}).
  const std::string table = "$" + o.prefix + "_emb";
  int vocab = 0;
  for (const Parameter& p : model.parameters())
    if (p.name == table) vocab = p.rows;
  if (vocab == 0)
    throw Error(ErrorKind::Semantic, o.model_path + " has no weight " + table +
                                         ": not a sequence-to-sequence model of prefix '" + o.prefix +
                                         "' (see --prefix)");
  for (const auto& [name, t] : {std::pair{"--bos", o.bos}, std::pair{"--eos", o.eos}})
    if (t < 0 || t >= vocab)
      throw Error(ErrorKind::Semantic, std::string(name) + " " + std::to_string(t) + " is not a token of the model's " +
                                           std::to_string(vocab) + "-token vocabulary");
  // Positions past the template's encodings (<prefix>_pos facts) derive no atoms, so a longer
  // sequence would decode from a model missing those positions: refused instead.
  const Template tmpl = model.get_template();
  int positions = 0;
  for (const Literal& f : tmpl.ast().facts)
    if (f.predicate == o.prefix + "_pos") ++positions;
  if (o.max_len > positions)
    throw Error(ErrorKind::Semantic, "--max-len " + std::to_string(o.max_len) + " needs " +
                                         std::to_string(o.max_len) + " decoder positions; the model encodes " +
                                         std::to_string(positions) + " (its max_len)");
  zoo::SequenceModel runner(tmpl.ast(), o.source, o.prefix + "_out");
  for (const Parameter& p : model.parameters())
    if (!p.name.empty() && p.name[0] == '$') runner.set_parameter(p.name.substr(1), p.values);
  for (const std::string& text : o.inputs) {
    const std::vector<int> src = tokens_of(text, vocab);
    if (static_cast<int>(src.size()) > positions)
      throw Error(ErrorKind::Semantic, "--input '" + text + "' has " + std::to_string(src.size()) +
                                           " tokens; the model encodes " + std::to_string(positions) +
                                           " positions (its max_len)");
    const std::vector<double> src_x = one_hot(src, vocab);
    auto next = [&](const std::vector<int>& prefix) { return next_logits(runner, o, src, src_x, prefix, vocab); };
    std::vector<int> out;
    if (o.beam > 1) {
      out = beam_search(next, o.bos, o.eos, o.max_len, o.beam);
    } else {
      std::vector<int> prefix = {o.bos};
      for (int step = 0; step < o.max_len; ++step) {
        const std::vector<double> last = next(prefix);
        const int best = static_cast<int>(std::max_element(last.begin(), last.end()) - last.begin());  // first on a tie
        if (best == o.eos) break;
        out.push_back(best);
        prefix.push_back(best);
      }
    }
    std::string line;
    for (size_t i = 0; i < out.size(); ++i) line += (i ? " " : "") + std::to_string(out[i]);
    std::printf("%s\n", line.c_str());
  }
}

lrnn::cli::RegisterCommand reg(43, [](CLI::App& app) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Greedy decoding with a saved sequence-to-sequence model");
  cmd->add_option("model", o->model_path, "Model file written by lrnn train --save (a zoo seq2seq template)")
      ->required();
  cmd->add_option("--input,-i", o->inputs, "A source sequence of token ids, \"3 4 5\" (repeat for more)")
      ->required();
  cmd->add_option("--max-len", o->max_len, "Tokens to generate at most")->required()
      ->check(cli::finite_number(1, 1e6, false, true));
  cmd->add_option("--bos", o->bos, "The token starting every decoder input (default 1)")
      ->check(cli::finite_number(0, 1e9, false, true));
  cmd->add_option("--eos", o->eos, "The token ending a sequence (default 2)")
      ->check(cli::finite_number(0, 1e9, false, true));
  cmd->add_option("--beam", o->beam, "Beam width (default 1: greedy)")->check(cli::finite_number(1, 1e4, false, true));
  cmd->add_option("--prefix", o->prefix, "The template's prefix (default s2s: weights $s2s_emb, output s2s_out)");
  cmd->add_option("--source", o->source, "The source predicate (default src)");
  cmd->add_option("--target", o->target, "The decoder input predicate (default tgt)");
  cmd->callback([o] { run_generate(*o); });
});

}  // namespace
