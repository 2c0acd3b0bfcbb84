// Engine::train_links: link prediction and knowledge-base completion on one example
// (train/link_prediction.hpp, docs/big_graphs.md "Link prediction").
//
// Each epoch: one forward pass of the encoder over the whole example (every atom a score
// reads, for every constant it may be read for); then the epoch's links, each training
// link followed by its freshly drawn negatives, in chunks through the decoder plan (a plan
// of identical one-link networks whose argument atoms are facts: their values are copied in
// from the encoder's rows, their gradients added back into them); then one backward pass
// of the encoder and one optimizer step. Validation and test links are scored from the
// same pass (before the step), as a query split's are.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_set>

#include "exec/batch_norm.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/syntax.hpp"
#include "train/clock.hpp"
#include "train/early_stopping.hpp"
#include "train/engine.hpp"
#include "train/link_multilinear.hpp"
#include "train/link_prediction.hpp"
#include "train/sample_store.hpp"

namespace lrnn::train {

namespace {

constexpr exec::PlanOptions kEncoderPlan{.fact_gradients = false, .in_place_atoms = true};
// The decoder's argument atoms are data facts whose gradients are read back.
constexpr exec::PlanOptions kDecoderPlan{.fact_gradients = true, .in_place_atoms = true};

// A link argument's constant: a placeholder in the decoder's one-link network.
std::string slot_constant(int position) { return "lrnn_link_argument_" + std::to_string(position); }

Literal with_constant(const EncoderAtom& a, const std::string& constant) {
  Literal l = a.literal;
  if (a.variable_arg >= 0) l.args[a.variable_arg] = Term::constant(constant);
  return l;
}

// The constants each link argument takes: entities (first and last argument) or the
// constants written at that argument (a triple's relation).
std::vector<std::vector<uint32_t>> argument_domains(const LinkTable& t) {
  std::vector<std::vector<uint32_t>> d(t.arity);
  for (int i = 0; i < t.arity; ++i) {
    if (i == 0 || i == t.arity - 1) {
      d[i] = t.entities;
      continue;
    }
    std::vector<uint8_t> seen(t.constants.size(), 0);
    for (size_t l = 0; l < t.size(); ++l)
      if (!seen[t.arg(l, i)]) {
        seen[t.arg(l, i)] = 1;
        d[i].push_back(t.arg(l, i));
      }
  }
  return d;
}

}  // namespace

// Everything a link-prediction run holds: the encoder's network and plan, where each
// argument atom's row lies in it, the decoder's plan and where each copy's argument facts
// lie in its data.
struct Engine::LinkSession {
  LinkTable table;
  LinkDecoder decoder;
  std::vector<std::vector<uint32_t>> domains;
  PreparedSet encoder_set;
  exec::Plan encoder;
  // Per decoder input (decoder.inputs, position >= 0): the encoder value offset of each
  // constant's row (kNoValue: not in the argument's domain) and the rows' shape.
  std::vector<std::vector<uint32_t>> row_offset;
  std::vector<neural::Shape> row_shape;
  neural::SampleNetwork one_link;
  std::vector<uint32_t> slot_atom;  // per decoder input: its argument fact's atom in one_link (or kNoValue)
  size_t chunk = 0;                 // links per decoder pass at most (a multiple of 1 + negatives)
  // Decoder plans by their number of links (copies of one_link): a pass over fewer links
  // than a chunk (validation, test, one triple's corruptions) runs a plan of its size.
  struct DecoderPlan {
    exec::Plan plan;
    size_t copies = 0;
    // Per copy, per decoder input: the data offset of that copy's argument fact (kNoValue:
    // the decoder does not read it).
    std::vector<uint32_t> slot_offset;
    std::vector<uint32_t> score_offset;  // per copy
    mutable std::vector<float> data32;   // the plan's data in float, made on a float pass's first use
  };
  std::map<size_t, std::unique_ptr<DecoderPlan>> decoders;
  const neural::TemplateModel* model = nullptr;
  const DecoderPlan& decoder_for(size_t links);
  std::vector<uint32_t> train_links, validation_links, test_links;
  std::vector<uint32_t> validation_negatives, test_negatives;  // fixed, flat args
  std::unordered_set<std::string> true_links;                  // for filtered ranking
  // The decoder's scores as sums of products of the rows, where they are (computed from
  // the encoder's rows in place, no decoder plan): link_multilinear.hpp.
  std::optional<MultilinearDecoder> multilinear;
  double seconds = 0;

  size_t inputs() const { return decoder.inputs.size(); }
};

// One dtype's buffers of a link-prediction run, kept across epochs.
template <class T>
struct Engine::LinkPass {
  exec::BasicWorkspace<T> encoder_ws, decoder_ws;
  std::vector<T> encoder_data;
  exec::ParamMirror mirror;
  std::vector<double> grads, scores, loss_grad, labels;
  std::vector<uint32_t> negatives, args;
  std::vector<uint32_t> offsets;  // per link and decoder input, its encoder row (multilinear decoders)
};

namespace {

std::string link_key(const uint32_t* args, int arity) {
  return std::string(reinterpret_cast<const char*>(args), sizeof(uint32_t) * arity);
}

}  // namespace

void Engine::build_encoder(LinkSession& s, const SampleStore& data, size_t max_ground_rules) const {
  const Sample& head = data.without_facts()[0];
  Sample encoder_head;
  encoder_head.example.id = head.example.id;
  s.row_offset.assign(s.inputs(), {});
  s.row_shape.assign(s.inputs(), neural::Shape{0, 0});
  std::vector<std::pair<uint32_t, uint32_t>> query_of;  // (input, constant) per encoder query
  for (uint32_t i = 0; i < s.inputs(); ++i) {
    const EncoderAtom& a = s.decoder.inputs[i];
    if (a.position < 0) continue;
    for (uint32_t c : s.domains[a.position]) {
      encoder_head.queries.push_back(with_constant(a, s.table.constants[c]));
      query_of.push_back({i, c});
    }
  }
  const std::vector<Sample> heads{std::move(encoder_head)};
  s.encoder_set = prepare_each(
      heads, [&](size_t) { return std::make_unique<SampleStore::Facts>(data.facts(0)); }, max_ground_rules, false);
  s.encoder = exec::build_plan(model_, {&s.encoder_set.networks[0]}, kEncoderPlan);
  for (uint32_t i = 0; i < s.inputs(); ++i) s.row_offset[i].assign(s.table.constants.size(), exec::kNoValue);
  for (size_t q = 0; q < query_of.size(); ++q) {
    const auto [i, c] = query_of[q];
    const exec::OutputRef& out = s.encoder.outputs.at(q);
    const Literal atom = with_constant(s.decoder.inputs[i], s.table.constants[c]);
    if (out.offset == exec::kNoValue)
      throw Error(ErrorKind::Semantic, "link prediction: the scores of " + s.decoder.predicate + "/" +
                                           std::to_string(s.decoder.arity) + " read " + print_literal(atom) +
                                           ", which the template does not derive from the example (every " +
                                           "constant of a link argument needs it)");
    const int size = out.shape.size(), before = s.row_shape[i].size();
    if (before != 0 && before != size)
      throw Error(ErrorKind::Shape, "link prediction: " + print_literal(atom) + " has " + std::to_string(size) +
                                        " values where the other atoms of its predicate have " +
                                        std::to_string(before));
    s.row_shape[i] = out.shape;
    s.row_offset[i][c] = out.offset;
  }
}

void Engine::build_decoder(LinkSession& s) const {
  // One link over placeholder constants; each argument atom a fact whose value marks which
  // decoder input it is (every entry i + 1), so that its place in the network is found
  // whatever order the network lists its facts in.
  Sample one;
  for (uint32_t i = 0; i < s.inputs(); ++i) {
    const EncoderAtom& a = s.decoder.inputs[i];
    if (a.position < 0) continue;
    Literal fact = with_constant(a, slot_constant(a.position));
    const neural::Shape shape = s.row_shape[i];
    ValueSpec v;
    v.kind = shape.scalar() ? ValueSpec::Kind::Scalar : shape.cols == 1 ? ValueSpec::Kind::Vector : ValueSpec::Kind::Matrix;
    v.rows = shape.rows;
    v.cols = shape.cols;
    v.data.assign(size_t(v.rows) * v.cols, double(i + 1));
    fact.weight = v;
    one.example.facts.push_back(std::move(fact));
  }
  Literal query;
  query.predicate = s.decoder.predicate;
  for (int p = 0; p < s.decoder.arity; ++p) query.args.push_back(Term::constant(slot_constant(p)));
  one.queries.push_back(query);
  const std::vector<Sample> samples{one};
  PreparedSet set = prepare_each(
      samples, [&](size_t) { return std::make_unique<logic::ExampleFacts>(samples[0].example); }, 1000000, false);
  s.one_link = std::move(set.networks[0]);
  const neural::SampleNetwork& net = s.one_link;
  const std::vector<uint32_t>& decoder_rules = s.decoder.rules;
  for (size_t k = 0; k < net.num_ground_rules(); ++k)
    if (std::find(decoder_rules.begin(), decoder_rules.end(), net.rule[k]) == decoder_rules.end()) {
      const Rule& r = ast_.rules.at(net.rule[k]);
      throw Error(ErrorKind::Semantic, r.span,
                  "link prediction: this rule derives " + print_literal(r.head) +
                      " from the atoms the scores read; the encoder's atoms must be what the scores read");
    }
  if (net.query_atoms.empty() || net.query_atoms[0].empty())
    throw Error(ErrorKind::Semantic, "link prediction: the rules of " + s.decoder.predicate +
                                         " derive no score from its arguments' atoms alone");
  // The network's argument facts: their local atom per decoder input.
  std::vector<uint32_t> slot_atom(s.inputs(), exec::kNoValue);
  for (uint32_t a = 0; a < net.num_atoms(); ++a) {
    const uint32_t f = net.atom_fact[a];
    if (f == neural::kNone || net.fact_template[f] != neural::kNone) continue;
    const uint32_t i = static_cast<uint32_t>(net.fact_data[net.fact_data_begin[f]]) - 1;
    if (net.atom_depth[a] != 0)
      throw Error(ErrorKind::Semantic, "link prediction: the template derives " +
                                           print_literal(with_constant(s.decoder.inputs[i], "X")) +
                                           " from other atoms the scores read; read one of them only");
    slot_atom[i] = a;
  }
  s.slot_atom = std::move(slot_atom);
  s.model = &model_;
}

const Engine::LinkSession::DecoderPlan& Engine::LinkSession::decoder_for(size_t links) {
  const size_t copies = std::min(links, std::max<size_t>(chunk, 1));
  auto& slot = decoders[copies];
  if (slot) return *slot;
  auto d = std::make_unique<DecoderPlan>();
  d->copies = copies;
  const std::vector<const neural::SampleNetwork*> nets(copies, &one_link);
  d->plan = exec::build_plan(*model, nets, kDecoderPlan);
  d->slot_offset.assign(copies * inputs(), exec::kNoValue);
  d->score_offset.resize(copies);
  for (size_t c = 0; c < copies; ++c) {
    for (uint32_t i = 0; i < inputs(); ++i)
      if (slot_atom[i] != exec::kNoValue) d->slot_offset[c * inputs() + i] = d->plan.atom_offsets[c][slot_atom[i]];
    const exec::OutputRef& out = d->plan.outputs[c];
    if (out.shape.size() != 1)
      throw Error(ErrorKind::Shape, "link prediction: a score of " + decoder.predicate + " has " +
                                        std::to_string(out.shape.rows) + "x" + std::to_string(out.shape.cols) +
                                        " values; a link's score must be one number");
    d->score_offset[c] = out.offset;
  }
  slot = std::move(d);
  return *slot;
}

std::unique_ptr<Engine::LinkSession> Engine::start_links(const SampleStore& data, const LinkConfig& link,
                                                        size_t max_ground_rules, uint64_t seed) const {
  const auto t0 = std::chrono::steady_clock::now();
  if (data.size() != 1)
    throw Error(ErrorKind::Semantic, "link prediction trains on one example (one graph or knowledge base), the data has " +
                                         std::to_string(data.size()) + " samples");
  auto s = std::make_unique<LinkSession>();
  const Sample& head = data.without_facts()[0];
  s->table = link_table(head.queries, head.split);
  const Literal& first = head.queries[s->table.query_of[0]];
  s->decoder = split_link_template(ast_, first.predicate, first.arity());
  s->domains = argument_domains(s->table);
  for (uint32_t l = 0; l < s->table.size(); ++l) {
    const QuerySplit part = s->table.split[l];
    (part == QuerySplit::Train ? s->train_links : part == QuerySplit::Validation ? s->validation_links : s->test_links)
        .push_back(l);
  }
  if (s->train_links.empty()) throw Error(ErrorKind::Semantic, "link prediction: no training links");
  build_encoder(*s, data, max_ground_rules);
  // Validation and test negatives are drawn once (the same every epoch, as PyG's
  // RandomLinkSplit draws them), from their own stream of the seed.
  Rng fixed(seed * 0x9E3779B97F4A7C15ULL + 0x5EED11A5ULL);
  draw_negatives(s->table, s->validation_links, link.negatives, link.corrupt, fixed, s->validation_negatives);
  draw_negatives(s->table, s->test_links, link.negatives, link.corrupt, fixed, s->test_negatives);
  if (link.ranking)
    for (size_t l = 0; l < s->table.size(); ++l) s->true_links.insert(link_key(&s->table.args[l * s->table.arity], s->table.arity));
  const size_t group = 1 + link.negatives;
  build_decoder(*s);
  if (link.decoder != LinkConfig::Decoder::Plan)
    s->multilinear = multilinear_decoder(model_, s->one_link, s->slot_atom, s->row_shape);
  if (link.decoder == LinkConfig::Decoder::Multilinear && !s->multilinear)
    throw Error(ErrorKind::Semantic, "link prediction: the scores of " + s->decoder.predicate +
                                         " are not sums of element-wise products of their arguments' rows");
  if (!s->multilinear) {  // multilinear scores read the encoder's rows: no decoder plan
    // Passes small enough that a pass's values and gradients stay in cache (about 2 MB of
    // doubles), unless a chunk is set.
    const size_t per_link = std::max<size_t>(1, s->decoder_for(1).plan.num_values);
    s->chunk = link.chunk > 0 ? link.chunk : std::max<size_t>(1, (size_t{1} << 18) / per_link);
    s->chunk = std::max(s->chunk, group);
    s->chunk -= s->chunk % group;  // a link and its negatives always share a pass
    s->decoders.clear();
    s->decoder_for(s->train_links.size() * group);  // the training passes' plan, built with the rest
  }
  s->seconds = seconds_since(t0);
  return s;
}

namespace {

// The decoder plan's fact data in the pass's scalar type.
template <class T>
std::span<const T> plan_data(const Engine::LinkSession::DecoderPlan& d) {
  if constexpr (std::is_same_v<T, double>) {
    return d.plan.data;
  } else {
    if (d.data32.empty()) d.data32.assign(d.plan.data.begin(), d.plan.data.end());
    return d.data32;
  }
}

// The scores of links (flat args) through the decoder, a pass per chunk; `take(d, first, n,
// ws)` sees each pass (links first .. first + n - 1 in copies 0 .. n - 1 of plan d).
template <class T, class Take>
void decode_chunks(Engine::LinkSession& s, const exec::BasicWorkspace<T>& encoder_ws, const exec::ParamView<T>& params,
                   exec::BasicWorkspace<T>& ws, const uint32_t* args, size_t links, Take&& take) {
  if (links == 0) return;
  const int k = s.decoder.arity;
  const Engine::LinkSession::DecoderPlan& d = s.decoder_for(links);
  // The plan's facts are the argument atoms alone: prepared once, then each pass writes
  // its links' rows over them (the copies past a last, partial chunk keep the rows of the
  // pass before: computed, never read).
  exec::forward_prepare(d.plan, plan_data<T>(d), params, ws, nullptr);
  for (size_t first = 0; first < links; first += d.copies) {
    const size_t n = std::min(d.copies, links - first);
    for (size_t c = 0; c < n; ++c) {
      const uint32_t* link = args + (first + c) * k;
      for (uint32_t i = 0; i < s.inputs(); ++i) {
        const uint32_t dst = d.slot_offset[c * s.inputs() + i];
        if (dst == exec::kNoValue) continue;
        const uint32_t src = s.row_offset[i][link[s.decoder.inputs[i].position]];
        std::copy_n(encoder_ws.values.data() + src, s.row_shape[i].size(), ws.values.data() + dst);
      }
    }
    exec::forward_steps(d.plan, params, ws, 0, d.plan.steps.size());
    take(d, first, n, ws);
  }
}

// The encoder value offset of each link's row per decoder input (links x inputs; kNoValue
// for an input of no argument). Read in one pass, so that the sweeps over the links read
// offsets in order and can fetch the rows ahead: looked up while sweeping, each link first
// waited for its entry of the (large) offset table, and only then for its rows.
void link_row_offsets(const Engine::LinkSession& s, const uint32_t* args, size_t links, std::vector<uint32_t>& out) {
  const int k = s.decoder.arity;
  const size_t m = s.inputs();
  out.resize(links * m);
  for (uint32_t i = 0; i < m; ++i) {
    const int position = s.decoder.inputs[i].position;
    const uint32_t* table = position < 0 ? nullptr : s.row_offset[i].data();
    for (size_t l = 0; l < links; ++l) out[l * m + i] = table ? table[args[l * k + position]] : exec::kNoValue;
  }
}

// Rows are read in link order at random places of the encoder's values: fetched a few
// links ahead, so that a link's rows arrive while the one before is computed.
constexpr size_t kRowsAhead = 8;

template <class T>
void prefetch_rows(const Engine::LinkSession& s, const T* base, const uint32_t* offsets) {
  for (uint32_t i = 0; i < s.inputs(); ++i) {
    if (offsets[i] == exec::kNoValue) continue;
    const T* row = base + offsets[i];
    for (int e = 0; e < s.row_shape[i].size(); e += 64 / int(sizeof(T))) __builtin_prefetch(row + e);
  }
}

template <class T>
void rows_at(T* base, const uint32_t* offsets, size_t m, T** rows) {
  for (size_t i = 0; i < m; ++i) rows[i] = offsets[i] == exec::kNoValue ? nullptr : base + offsets[i];
}

// The scores of `links` links (flat args) into scores[0 .. links - 1]; `offsets` is scratch.
template <class T>
void score_links(Engine::LinkSession& s, const exec::BasicWorkspace<T>& encoder_ws, const exec::ParamView<T>& params,
                 exec::BasicWorkspace<T>& ws, const uint32_t* args, size_t links, double* scores,
                 std::vector<uint32_t>& offsets) {
  if (!s.multilinear) {
    decode_chunks(s, encoder_ws, params, ws, args, links,
                  [&](const Engine::LinkSession::DecoderPlan& d, size_t first, size_t n, exec::BasicWorkspace<T>&) {
                    for (size_t c = 0; c < n; ++c) scores[first + c] = double(ws.values[d.score_offset[c]]);
                  });
    return;
  }
  link_row_offsets(s, args, links, offsets);
  const size_t m = s.inputs();
  const T* values = encoder_ws.values.data();
  std::vector<const T*> rows(m);
  for (size_t l = 0; l < links; ++l) {
    if (l + kRowsAhead < links) prefetch_rows(s, values, &offsets[(l + kRowsAhead) * m]);
    rows_at(values, &offsets[l * m], m, rows.data());
    scores[l] = multilinear_score(*s.multilinear, rows.data());
  }
}

// Adds grad[l] * d(score of link l)/d(rows) into the encoder's row gradients (multilinear),
// the links' row offsets as score_links left them.
template <class T>
void add_row_grads(const Engine::LinkSession& s, exec::BasicWorkspace<T>& encoder_ws,
                   const std::vector<uint32_t>& offsets, size_t links, const double* grad) {
  const size_t m = s.inputs();
  const T* values = encoder_ws.values.data();
  T* grads = encoder_ws.grads.data();
  std::vector<const T*> rows(m);
  std::vector<T*> to(m);
  for (size_t l = 0; l < links; ++l) {
    if (l + kRowsAhead < links) {
      prefetch_rows(s, values, &offsets[(l + kRowsAhead) * m]);
      prefetch_rows(s, static_cast<const T*>(grads), &offsets[(l + kRowsAhead) * m]);
    }
    if (grad[l] == 0) continue;
    rows_at(values, &offsets[l * m], m, rows.data());
    rows_at(grads, &offsets[l * m], m, to.data());
    multilinear_backward(*s.multilinear, rows.data(), grad[l], to.data());
  }
}

// A link group's loss: a training link then its negatives. Writes dL/ds (before the mean's
// divisor) into grad, returns the summed loss; `right` counts correctly ordered pairs
// (margin) or correctly classified links.
struct GroupLoss {
  double sum = 0;
  size_t right = 0;
};
GroupLoss group_loss(const double* score, size_t group, const LinkConfig& link, LossKind kind, double* grad) {
  GroupLoss g;
  if (link.margin > 0) {
    grad[0] = 0;
    for (size_t j = 1; j < group; ++j) {
      const double violation = link.margin - score[0] + score[j];
      grad[j] = 0;
      if (violation > 0) {
        g.sum += violation;
        grad[0] -= 1;
        grad[j] = 1;
      }
      g.right += score[0] > score[j];
    }
    return g;
  }
  for (size_t j = 0; j < group; ++j) {
    const double y = score[j], target = j == 0 ? 1.0 : 0.0;
    g.sum += loss(kind, std::span<const double>(&y, 1), std::span<const double>(&target, 1), std::span<double>(&grad[j], 1));
    double p = 0;
    predict(kind, std::span<const double>(&y, 1), std::span<double>(&p, 1));
    g.right += (p > 0.5) == (j == 0);
  }
  return g;
}

size_t loss_terms(size_t links, const LinkConfig& link) {
  return link.margin > 0 ? links * link.negatives : links * (1 + link.negatives);
}

// A group's links (the true one, then its negatives) as flat args.
void group_args(const LinkTable& t, const std::vector<uint32_t>& links, const std::vector<uint32_t>& negatives,
                size_t count, std::vector<uint32_t>& out) {
  const int k = t.arity;
  out.resize(links.size() * (1 + count) * k);
  uint32_t* o = out.data();
  for (size_t i = 0; i < links.size(); ++i) {
    o = std::copy_n(t.args.begin() + size_t(links[i]) * k, k, o);
    o = std::copy_n(negatives.begin() + i * count * k, count * k, o);
  }
}

}  // namespace

template <class T>
void Engine::link_epoch(LinkSession& s, const LinkConfig& link, const TrainConfig& config, Rng& rng,
                        LinkPass<T>& pass, EpochInfo& report, std::vector<std::vector<double>>& outputs) {
  const exec::ParamView<T> params = [&] {
    if constexpr (std::is_same_v<T, float>) return pass.mirror.refresh(model_.params);
    else return exec::view_of(model_.params);
  }();
  // The encoder's forward pass.
  if constexpr (std::is_same_v<T, float>) {
    if (pass.encoder_data.empty())
      pass.encoder_data.assign(s.encoder_set.networks[0].fact_data.begin(), s.encoder_set.networks[0].fact_data.end());
    exec::forward_prepare(s.encoder, std::span<const float>(pass.encoder_data), params, pass.encoder_ws, nullptr);
  } else {
    exec::forward_prepare(s.encoder, std::span<const double>(s.encoder_set.networks[0].fact_data), params,
                          pass.encoder_ws, nullptr);
  }
  exec::forward_steps(s.encoder, params, pass.encoder_ws, 0, s.encoder.steps.size());
  pass.encoder_ws.grads.assign(s.encoder.num_values, T(0));

  const size_t group = 1 + link.negatives;
  const LossKind kind = config.loss;
  const int k = s.decoder.arity;
  auto metrics_of = [&](const std::vector<uint32_t>& links, const std::vector<uint32_t>& args, bool train) {
    Metrics m;
    pass.scores.assign(args.size() / k, 0.0);
    pass.loss_grad.assign(pass.scores.size(), 0.0);
    const double divisor = double(loss_terms(links.size(), link));
    size_t right = 0;
    if (s.multilinear) {  // scores, losses, then the rows' gradients, each in one sweep
      score_links(s, pass.encoder_ws, params, pass.decoder_ws, args.data(), pass.scores.size(), pass.scores.data(),
                  pass.offsets);
      for (size_t g = 0; g < pass.scores.size(); g += group) {
        const GroupLoss gl = group_loss(&pass.scores[g], group, link, kind, &pass.loss_grad[g]);
        m.loss += gl.sum;
        right += gl.right;
      }
      if (train) {
        for (double& g : pass.loss_grad) g /= divisor;
        add_row_grads(s, pass.encoder_ws, pass.offsets, pass.scores.size(), pass.loss_grad.data());
      }
    } else {  // chunk by chunk through the decoder plan: each chunk's backward before the next
      decode_chunks(s, pass.encoder_ws, params, pass.decoder_ws, args.data(), pass.scores.size(),
                    [&](const LinkSession::DecoderPlan& d, size_t first, size_t n, exec::BasicWorkspace<T>& ws) {
                      for (size_t c = 0; c < n; ++c) pass.scores[first + c] = double(ws.values[d.score_offset[c]]);
                      for (size_t g = first; g < first + n; g += group) {
                        const GroupLoss gl = group_loss(&pass.scores[g], group, link, kind, &pass.loss_grad[g]);
                        m.loss += gl.sum;
                        right += gl.right;
                      }
                      if (!train) return;
                      std::fill(ws.grads.begin(), ws.grads.end(), T(0));
                      ws.grads.resize(d.plan.num_values, T(0));
                      for (size_t c = 0; c < n; ++c) ws.grads[d.score_offset[c]] = T(pass.loss_grad[first + c] / divisor);
                      exec::backward(d.plan, params, ws, pass.grads, nullptr, nullptr);
                      for (size_t c = 0; c < n; ++c) {
                        const uint32_t* l = args.data() + (first + c) * k;
                        for (uint32_t i = 0; i < s.inputs(); ++i) {
                          const uint32_t from = d.slot_offset[c * s.inputs() + i];
                          if (from == exec::kNoValue) continue;
                          T* to = pass.encoder_ws.grads.data() + s.row_offset[i][l[s.decoder.inputs[i].position]];
                          for (int e = 0; e < s.row_shape[i].size(); ++e) to[e] += ws.grads[from + e];
                        }
                      }
                    });
    }
    m.count = links.size();
    m.loss = links.empty() ? std::numeric_limits<double>::quiet_NaN() : m.loss / divisor;
    const size_t judged = link.margin > 0 ? links.size() * link.negatives : pass.scores.size();
    m.accuracy = judged ? double(right) / double(judged) : std::numeric_limits<double>::quiet_NaN();
    m.auc = std::numeric_limits<double>::quiet_NaN();
    if (!train) {  // a sort of every scored link: not of the training links each epoch
      pass.labels.assign(pass.scores.size(), 0.0);
      for (size_t g = 0; g < pass.scores.size(); g += group) pass.labels[g] = 1.0;
      m.auc = auc(pass.scores, pass.labels);
    }
    for (size_t i = 0; i < links.size(); ++i) outputs[s.table.query_of[links[i]]].assign(1, pass.scores[i * group]);
    return m;
  };

  // Training links with fresh negatives: loss, decoder gradients, encoder row gradients.
  draw_negatives(s.table, s.train_links, link.negatives, link.corrupt, rng, pass.negatives);
  group_args(s.table, s.train_links, pass.negatives, link.negatives, pass.args);
  report.train = metrics_of(s.train_links, pass.args, true);
  // Validation and test links from the same pass, before the step.
  auto held_out = [&](const std::vector<uint32_t>& links, const std::vector<uint32_t>& negatives, bool& has,
                      Metrics& m) {
    if (links.empty()) return;
    group_args(s.table, links, negatives, link.negatives, pass.args);
    has = true;
    m = metrics_of(links, pass.args, false);
    if (link.ranking) m.ranking = rank_links(s, link, links, pass, params);
    m.has_ranking = link.ranking;
  };
  held_out(s.validation_links, s.validation_negatives, report.has_validation, report.validation);
  held_out(s.test_links, s.test_negatives, report.has_test, report.test);
  exec::backward(s.encoder, params, pass.encoder_ws, pass.grads, nullptr, nullptr);
}

template <class T>
Ranking Engine::rank_links(LinkSession& s, const LinkConfig& link, const std::vector<uint32_t>& links,
                           LinkPass<T>& pass, const exec::ParamView<T>& params) const {
  const int k = s.decoder.arity;
  const std::vector<uint32_t>& entities = s.table.entities;
  Ranking r;
  std::vector<double> candidates;
  std::vector<uint32_t> args(entities.size() * k);
  std::vector<double> scores(entities.size());
  for (uint32_t l : links) {
    const uint32_t* truth = &s.table.args[size_t(l) * k];
    for (int side : {k - 1, 0}) {
      if ((side == 0 && link.corrupt == Corrupt::Tail) || (side == k - 1 && link.corrupt == Corrupt::Head)) continue;
      for (size_t e = 0; e < entities.size(); ++e) {
        std::copy_n(truth, k, &args[e * k]);
        args[e * k + side] = entities[e];
      }
      double truth_score = 0;
      score_links(s, pass.encoder_ws, params, pass.decoder_ws, args.data(), entities.size(), scores.data(), pass.offsets);
      candidates.clear();
      for (size_t e = 0; e < entities.size(); ++e) {
        if (entities[e] == truth[side]) {
          truth_score = scores[e];
          continue;
        }
        if (s.true_links.count(link_key(&args[e * k], k))) continue;  // filtered: another true link
        candidates.push_back(scores[e]);
      }
      const double rank = rank_among(truth_score, candidates);
      r.mrr += 1.0 / rank;
      r.hits1 += rank <= 1;
      r.hits3 += rank <= 3;
      r.hits10 += rank <= 10;
      ++r.count;
    }
  }
  if (r.count) {
    r.mrr /= double(r.count);
    r.hits1 /= double(r.count);
    r.hits3 /= double(r.count);
    r.hits10 /= double(r.count);
  }
  return r;
}

TrainResult Engine::train_links(const SampleStore& data, const TrainConfig& config, const LinkConfig& link,
                                size_t max_ground_rules, const std::function<bool(const EpochInfo&)>& on_epoch) {
  if (!model_.batch_norms.empty())
    throw Error(ErrorKind::Semantic, "link prediction with batch-normalised predicates is not supported");
  if (config.query_batch_size > 0 || config.batch_size > 0)
    throw Error(ErrorKind::Semantic, "link prediction trains full batch: every training link each epoch "
                                     "(batch_size and query_batch_size must be 0)");
  std::unique_ptr<LinkSession> session = start_links(data, link, max_ground_rules, config.seed);
  LinkSession& s = *session;
  TrainResult result;
  result.setup_seconds = s.seconds;
  const auto t_train = std::chrono::steady_clock::now();
  prepare_optimizer(config.optimizer);
  Rng rng(config.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(epochs_trained_));
  LinkPass<double> pass64;
  LinkPass<float> pass32;
  std::vector<double> fixed_values;
  result.last_epoch_outputs.assign(data.without_facts()[0].queries.size(), {});
  EarlyStopping stopping(config.patience);
  for (int e = 0; e < config.epochs; ++e) {
    const auto t_epoch = std::chrono::steady_clock::now();
    const double lr = config.schedule.lr(config.optimizer.lr, epochs_trained_);
    const std::vector<double> epoch_start = config.patience > 0 ? model_.params.values : std::vector<double>{};
    EpochInfo report;
    std::vector<double>& grads = config.dtype == Dtype::Float32 ? pass32.grads : pass64.grads;
    grads.assign(model_.params.size(), 0.0);
    if (config.dtype == Dtype::Float32) link_epoch(s, link, config, rng, pass32, report, result.last_epoch_outputs);
    else link_epoch(s, link, config, rng, pass64, report, result.last_epoch_outputs);
    step_learnable(grads, lr, config, fixed_values);
    ++epochs_trained_;
    report.epoch = epochs_trained_;
    report.lr = config.schedule.per_step() ? last_step_lr_ : lr;
    report.seconds = seconds_since(t_epoch);
    result.record(report);
    bool go_on = on_epoch ? on_epoch(report) : true;
    // The metrics are of the epoch's pass: the parameters before its step.
    if (stopping.active() &&
        !stopping.keep_going(report.has_validation ? report.validation.loss : report.train.loss, epoch_start, nullptr)) {
      result.stopped_early = true;
      go_on = false;
    }
    if (!go_on) break;
  }
  if (result.stopped_early) stopping.restore(model_.params.values, nullptr);
  result.train_seconds = seconds_since(t_train);
  return result;
}

}  // namespace lrnn::train
