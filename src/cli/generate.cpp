// `lrnn generate MODEL --input "3 4 5" [--input ...] --max-len N [--bos 1 --eos 2]`: greedy
// decoding with a saved sequence-to-sequence model (a template of zoo::seq2seq trained by
// `lrnn train --save`, docs/seq2seq.md). From the decoder input [bos], the most likely next
// token (the first on a tie) is appended until eos or N tokens; each line of output holds
// the tokens after bos, without eos. The model runs through zoo::SequenceModel, which keeps
// one grounded plan per (source length, prefix length), so a prefix length seen before is
// not grounded again.
#include <cstdio>
#include <memory>
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
  zoo::SequenceModel runner(model.get_template().ast(), o.source, o.prefix + "_out");
  for (const Parameter& p : model.parameters())
    if (!p.name.empty() && p.name[0] == '$') runner.set_parameter(p.name.substr(1), p.values);
  for (const std::string& text : o.inputs) {
    const std::vector<int> src = tokens_of(text, vocab);
    const std::vector<double> src_x = one_hot(src, vocab);
    std::vector<int> prefix = {o.bos}, out;
    for (int step = 0; step < o.max_len; ++step) {
      const std::vector<double> tgt_x = one_hot(prefix, vocab);
      const int m = static_cast<int>(prefix.size());
      const std::vector<double> logits =
          runner.forward({{o.source, src_x.data(), static_cast<int>(src.size()), vocab},
                          {o.target, tgt_x.data(), m, vocab}},
                         m);
      const double* last = logits.data() + size_t(m - 1) * vocab;
      int best = 0;
      for (int v = 1; v < vocab; ++v)
        if (last[v] > last[best]) best = v;
      if (best == o.eos) break;
      out.push_back(best);
      prefix.push_back(best);
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
  cmd->add_option("--prefix", o->prefix, "The template's prefix (default s2s: weights $s2s_emb, output s2s_out)");
  cmd->add_option("--source", o->source, "The source predicate (default src)");
  cmd->add_option("--target", o->target, "The decoder input predicate (default tgt)");
  cmd->callback([o] { run_generate(*o); });
});

}  // namespace
