// `lrnn rasp run|analyze|lower|draw FILE ...`: RASP programs in the original `.rasp`
// syntax (mean aggregation): run them, count their layers and heads, lower them to an
// lrnn template, and draw their selectors and values as SVG.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.hpp"
#include "lrnn/atomic_file.hpp"
#include "lrnn/rasp.hpp"
#include "lrnn/syntax.hpp"

namespace {

using namespace lrnn::rasp;

struct RaspOptions {
  std::string file;
  std::string input;
  std::string output_name;  // which named s-op is the program (default: the last one)
  bool json = false;
  bool all = false;
  bool sum = false;  // RASPy's sum aggregation instead of the paper's mean
  std::string vocab;
  int max_len = 0;
  std::string out_path;
  std::string example_out;
  std::string template_out, queries_out;
  bool causal = false;
  bool verify = false;
  double readout = 0;  // compile --template: add a readout with this logit scale
  bool fixed_weights = false, random_init = false;
  std::string pairs_out;  // compile: the program's own pairs for the readout
};

Program load(const RaspOptions& o) {
  Program p = load_rasp_file(o.file);
  if (!o.output_name.empty()) p = p.with_output(o.output_name);
  if (o.sum) p.convention = Convention::Sum;
  return p;
}

nlohmann::json to_json(const Value& v) {
  return std::visit(
      [](const auto& x) -> nlohmann::json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) return nullptr;
        else return x;
      },
      v);
}

std::string show(const std::vector<Value>& vals) {
  std::string s = "[";
  for (size_t i = 0; i < vals.size(); ++i) s += (i ? ", " : "") + to_string(vals[i]);
  return s + "]";
}

void write_file(const std::string& path, const std::string& text) { lrnn::write_file_atomically(path, text); }

void run_cmd(const RaspOptions& o) {
  Program p = load(o);
  std::vector<Value> input = parse_input(o.input);
  if (input.empty()) throw lrnn::Error(lrnn::ErrorKind::Parse, "--input is empty: RASP programs run on non-empty sequences");
  Evaluation ev = evaluate(p.output, input, p.convention);
  if (o.json) {
    nlohmann::json out = nlohmann::json::object();
    out["name"] = p.output.node()->display_name();
    out["output"] = nlohmann::json::array();
    for (const auto& v : ev.output) out["output"].push_back(to_json(v));
    if (o.all) {
      nlohmann::json named = nlohmann::json::object();
      for (const auto& [name, sop] : p.named) {
        auto it = ev.values.find(sop.node().get());
        if (it == ev.values.end()) continue;
        nlohmann::json vals = nlohmann::json::array();
        for (const auto& v : it->second) vals.push_back(to_json(v));
        named[name] = vals;
      }
      out["named"] = named;
    }
    std::cout << out.dump() << "\n";
    return;
  }
  if (o.all) {
    for (const auto& [name, sop] : p.named) {
      auto it = ev.values.find(sop.node().get());
      if (it != ev.values.end()) std::cout << name << " = " << show(it->second) << "\n";
    }
    return;
  }
  std::cout << show(ev.output) << "\n";
}

void analyze_cmd(const RaspOptions& o) {
  Program p = load(o);
  Analysis a = analyze(p.output);
  if (o.json) {
    nlohmann::json out = nlohmann::json::object();
    out["name"] = p.output.node()->display_name();
    out["layers"] = a.layers;
    out["heads_per_layer"] = a.heads_per_layer;
    out["max_heads"] = a.max_heads;
    nlohmann::json heads = nlohmann::json::array();
    for (const auto& h : a.heads) heads.push_back({{"layer", h.layer}, {"selector", h.selector}, {"outputs", h.outputs}});
    out["heads"] = heads;
    std::cout << out.dump() << "\n";
    return;
  }
  std::cout << "program: " << p.output.node()->display_name() << "\n";
  std::cout << "layers: " << a.layers << "\n";
  std::cout << "heads per layer:";
  for (int h : a.heads_per_layer) std::cout << " " << h;
  std::cout << "\nmax heads: " << a.max_heads << "\n";
  for (const auto& h : a.heads) {
    std::cout << "  layer " << h.layer << ": " << h.selector << " ->";
    for (const auto& name : h.outputs) std::cout << " " << name;
    std::cout << "\n";
  }
}

// --vocab a,b,c (strings) or a JSON list.
std::vector<Value> parse_vocab(const RaspOptions& o) {
  if (o.max_len < 1) throw lrnn::Error(lrnn::ErrorKind::Parse, "--max-len must be at least 1");
  std::vector<Value> vocab;
  if (!o.vocab.empty() && o.vocab.front() == '[') {
    vocab = parse_input(o.vocab);
  } else {
    size_t start = 0;
    while (start <= o.vocab.size()) {
      size_t comma = o.vocab.find(',', start);
      if (comma == std::string::npos) comma = o.vocab.size();
      std::string tok = o.vocab.substr(start, comma - start);
      if (!tok.empty()) vocab.emplace_back(tok);
      start = comma + 1;
    }
  }
  if (vocab.empty()) throw lrnn::Error(lrnn::ErrorKind::Parse, "--vocab is empty (write --vocab a,b,c or a JSON list)");
  return vocab;
}

void lower_cmd(const RaspOptions& o) {
  Program p = load(o);
  std::vector<Value> vocab = parse_vocab(o);
  LoweredTemplate t = to_template(p.output, vocab, o.max_len, p.convention);
  std::string header = "% lowered from " + o.file + " (" + p.output.node()->display_name() + "), vocabulary size " +
                       std::to_string(vocab.size()) + ", max length " + std::to_string(o.max_len) + "\n% output: " +
                       t.output_predicate + (t.output_numeric ? " (a number per position)" : " (out(I, V): the value at I)") +
                       (t.exact ? ", exact in logic" : ", needs the neural forward pass") + "\n";
  std::string text = header + t.text;
  if (o.out_path.empty()) std::cout << text;
  else write_file(o.out_path, text);
  if (!o.example_out.empty()) {
    std::vector<Value> input = parse_input(o.input);
    write_file(o.example_out, lrnn::print_example(example_facts(input)) + "\n");
  }
  if (!o.out_path.empty())
    std::cerr << "wrote " << o.out_path << ": " << t.ast.rules.size() << " rules, output " << t.output_predicate << "\n";
}

nlohmann::json matrix_json(int rows, int cols, const std::vector<double>& w) {
  return {{"shape", {rows, cols}}, {"data", w}};
}

// The compiled model as JSON: the residual stream layout, the sizes and every weight matrix
// (row major), as CompiledModel and lrnn.rasp's state_dict() name them.
nlohmann::json model_json(const CompiledModel& m, const std::string& name) {
  nlohmann::json out = nlohmann::json::object();
  out["program"] = name;
  out["vocab"] = nlohmann::json::array();
  for (const auto& v : m.vocab) out["vocab"].push_back(to_json(v));
  out["max_len"] = m.max_len;
  out["causal"] = m.causal;
  out["d_model"] = m.d_model;
  out["layers"] = m.layers.size();
  out["analyzed_layers"] = m.analyzed_layers;
  out["heads_per_layer"] = m.heads_per_layer();
  out["mlp_width"] = m.mlp_width();
  out["dim_labels"] = m.dim_labels;
  out["output_space"] = m.output_space;
  nlohmann::json spaces = nlohmann::json::array();
  for (const auto& s : m.spaces) {
    nlohmann::json vals = nlohmann::json::array();
    for (const auto& v : s.values) vals.push_back(to_json(v));
    spaces.push_back({{"name", s.name},
                      {"encoding", s.offset < 0 ? "constant" : s.numerical ? "numerical" : "categorical"},
                      {"offset", s.offset},
                      {"width", s.width},
                      {"values", vals}});
  }
  out["residual"] = spaces;
  nlohmann::json w = nlohmann::json::object();
  const int d = m.d_model;
  w["embed.tokens"] = matrix_json(static_cast<int>(m.vocab.size()), d, m.token_embedding);
  w["embed.positions"] = matrix_json(m.max_len, d, m.position_embedding);
  w["embed.bos"] = matrix_json(1, d, m.bos_embedding);
  for (size_t l = 0; l < m.layers.size(); ++l) {
    const auto& layer = m.layers[l];
    std::string p = "layers." + std::to_string(l) + ".";
    for (size_t h = 0; h < layer.heads.size(); ++h) {
      w[p + "heads." + std::to_string(h) + ".qk"] = matrix_json(d, d, layer.heads[h].qk);
      w[p + "heads." + std::to_string(h) + ".ov"] = matrix_json(d, d, layer.heads[h].ov);
    }
    w[p + "mlp.w1"] = matrix_json(layer.mlp.hidden, d, layer.mlp.w1);
    w[p + "mlp.b1"] = matrix_json(1, layer.mlp.hidden, layer.mlp.b1);
    w[p + "mlp.w2"] = matrix_json(d, layer.mlp.hidden, layer.mlp.w2);
  }
  out["weights"] = w;
  return out;
}

void compile_cmd(const RaspOptions& o) {
  // Options that need each other: usage errors (exit 2) before any work.
  if (!o.pairs_out.empty() && o.readout <= 0)
    lrnn::cli::usage_error("--pairs-out writes queries of the readout: give --readout");
  if ((!o.example_out.empty() || !o.queries_out.empty()) && o.input.empty())
    lrnn::cli::usage_error("--example-out/--queries-out write the facts of --input: give --input");
  Program p = load(o);
  CompileOptions options;
  options.convention = p.convention;
  options.causal = o.causal;
  CompiledModel m = compile(p.output, parse_vocab(o), o.max_len, options);
  std::cout << m.table();
  if (o.verify) {
    VerifyReport r = m.verify();
    std::cout << "verify: " << r.checked << " of " << r.total << " inputs" << (r.sampled ? " (sampled)" : "") << ", "
              << r.mismatches << " mismatches" << (r.first_mismatch.empty() ? "" : " (" + r.first_mismatch + ")")
              << "\n";
    if (r.mismatches != 0) throw lrnn::Error(lrnn::ErrorKind::Runtime, "the compiled weights disagree with the interpreter");
  }
  if (!o.out_path.empty()) {
    write_file(o.out_path, model_json(m, p.output.node()->display_name()).dump() + "\n");
    std::cout << "wrote " << o.out_path << "\n";
  }
  if (!o.template_out.empty()) {
    CompiledTemplateOptions t;
    t.fixed = o.fixed_weights;
    t.random = o.random_init;
    t.readout_scale = o.readout;
    write_file(o.template_out, m.template_text(t));
    std::cout << "wrote " << o.template_out << "\n";
  }
  if (!o.pairs_out.empty()) {
    const CompiledModel::ReadoutData pairs = m.readout_data();
    write_file(o.pairs_out + "_examples.txt", pairs.examples);
    write_file(o.pairs_out + "_queries.txt", pairs.queries);
    std::cout << "wrote " << pairs.count << " pairs to " << o.pairs_out << "_examples.txt and _queries.txt\n";
  }
  if (!o.example_out.empty() || !o.queries_out.empty()) {
    const std::vector<Value> input = parse_input(o.input);
    if (!o.example_out.empty()) write_file(o.example_out, "input :- " + m.example_text(input) + ".\n");
    if (!o.queries_out.empty()) write_file(o.queries_out, "input :- " + m.query_text(input) + ".\n");
  }
}

void draw_cmd(const RaspOptions& o) {
  Program p = load(o);
  std::vector<Value> input = parse_input(o.input);
  if (input.empty()) throw lrnn::Error(lrnn::ErrorKind::Parse, "--input is empty");
  std::string svg = draw_svg(p.output, input, p.convention);
  if (o.out_path.empty()) {
    std::cout << svg;
    return;
  }
  write_file(o.out_path, svg);
  std::cerr << "wrote " << o.out_path << "\n";  // as `lrnn draw` (standard output stays for the SVG)
}

lrnn::cli::RegisterCommand reg(60, [](CLI::App& app) {
  auto opts = std::make_shared<RaspOptions>();
  CLI::App* rasp = app.add_subcommand("rasp", "RASP programs: run, analyse (layers, heads), lower to templates, compile to weights, draw");
  rasp->require_subcommand(1);
  rasp->footer(
      "RASP files use the original RASP syntax (select, aggregate, selector_width, def, load)\n"
      "with mean aggregation; the program is the last assigned s-op unless --output names one.\n\n"
      "Examples:\n"
      "  lrnn rasp run tests/rasp/reverse.rasp --input hello\n"
      "  [o, l, l, e, h]\n"
      "  lrnn rasp analyze tests/rasp/dyck2.rasp\n"
      "  lrnn rasp lower tests/rasp/reverse.rasp --vocab a,b,c --max-len 5 -o reverse.lrnn\n"
      "  lrnn rasp compile tests/rasp/reverse.rasp --vocab a,b,c --max-len 5 --verify -o reverse.json\n"
      "  lrnn rasp draw tests/rasp/sort.rasp --input '§cab' -o sort.svg");

  auto common = [opts](CLI::App* cmd) {
    cmd->add_option("file", opts->file, "A .rasp program")->required()->check(CLI::ExistingFile);
    cmd->add_option("--output", opts->output_name, "The named s-op to use as the program (default: the last one)");
    cmd->add_flag("--sum", opts->sum, "Aggregate by sum (RASPy) instead of mean (the paper)");
    lrnn::cli::add_max_memory(cmd);
  };

  CLI::App* run = rasp->add_subcommand("run", "Run a program on an input");
  common(run);
  run->add_option("--input,-i", opts->input, "The input: a string (one token per character) or a JSON list")->required();
  run->add_flag("--json", opts->json, "Print {\"name\": ..., \"output\": [...]} as JSON");
  run->add_flag("--all", opts->all, "Print every named s-op of the program");
  run->callback([opts] { run_cmd(*opts); });

  CLI::App* an = rasp->add_subcommand("analyze", "Report the attention layers and heads per layer");
  common(an);
  an->add_flag("--json", opts->json, "Print the analysis as JSON");
  an->callback([opts] { analyze_cmd(*opts); });

  CLI::App* lower = rasp->add_subcommand("lower", "Lower a program to an lrnn template");
  common(lower);
  lower->add_option("--vocab", opts->vocab, "The token vocabulary: a,b,c or a JSON list")->required();
  lower->add_option("--max-len", opts->max_len, "The longest input the template must handle")
      ->required()
      ->check(lrnn::cli::integer_in(1, INT32_MAX));
  lower->add_option("-o,--out", opts->out_path, "Write the template here (default: standard output)");
  lower->add_option("--input,-i", opts->input, "An input whose example facts --example-out writes");
  lower->add_option("--example-out", opts->example_out, "Write the example facts of --input here");
  lower->callback([opts] { lower_cmd(*opts); });

  CLI::App* comp = rasp->add_subcommand("compile", "Compile a program to transformer weights (exact, or refused)");
  common(comp);
  comp->add_option("--vocab", opts->vocab, "The token vocabulary: a,b,c or a JSON list")->required();
  comp->add_option("--max-len", opts->max_len, "The longest input the weights must handle")
      ->required()
      ->check(lrnn::cli::integer_in(1, INT32_MAX));
  comp->add_option("-o,--out", opts->out_path, "Write the model (layout, sizes, weights) here as JSON");
  comp->add_flag("--causal", opts->causal, "Heads see only earlier positions (refused if a selector looks ahead)");
  comp->add_flag("--verify", opts->verify, "Compare the weights with the interpreter on every input up to --max-len");
  comp->add_option("--template", opts->template_out,
                   "Write the transformer as an lrnn template here (attention and MLP rules with these weights)");
  comp->add_option("--readout", opts->readout,
                   "With --template: add rasp_out(P), learnable class logits (this scale times the output's one-hot)")
      ->check(lrnn::cli::finite_number(0));
  CLI::Option* fixed =
      comp->add_flag("--fixed-weights", opts->fixed_weights, "With --template: the compiled weights fixed (only the readout learns)");
  comp->add_flag("--random-init", opts->random_init, "With --template: weights as shapes only (the template from random init)")
      ->excludes(fixed);
  comp->add_option("--pairs-out", opts->pairs_out,
                   "Write every input and the program's output as readout examples/queries: PREFIX_examples.txt, PREFIX_queries.txt");
  comp->add_option("--input,-i", opts->input, "An input (a string or a JSON list) for --example-out/--queries-out");
  comp->add_option("--example-out", opts->example_out, "Write the template's example facts of --input here");
  comp->add_option("--queries-out", opts->queries_out, "Write the template's queries (residual(p) per position) of --input here");
  comp->callback([opts] { compile_cmd(*opts); });

  CLI::App* draw = rasp->add_subcommand("draw", "Draw the selectors and values of a run as SVG");
  common(draw);
  draw->add_option("--input,-i", opts->input, "The input: a string or a JSON list")->required();
  draw->add_option("-o,--out", opts->out_path, "Write the SVG here (default: standard output)");
  draw->callback([opts] { draw_cmd(*opts); });
});

}  // namespace
