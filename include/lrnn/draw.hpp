// Pictures of templates and of the ground networks of samples, as Graphviz DOT text.
// DOT always works; SVG and PNG are laid out by Graphviz's `dot` program (Debian package
// `graphviz`), and are refused with an error saying so when it is not installed.
//
//   lrnn::Template t = lrnn::Template::from_file("xor.lrnn");
//   std::string dot = lrnn::template_dot(t);
//   lrnn::save_picture(dot, "xor.svg");  // runs `dot -Tsvg`
#pragma once

#include <cstddef>
#include <string>

#include "lrnn/model.hpp"

namespace lrnn {

struct DrawOptions {
  bool values = false;       // print each neuron's value
  bool gradients = false;    // and its gradient of the sample's loss (runs a backward pass)
  int value_detail = 0;      // 0, 1 or 2: 3, 6 or 12 significant digits (PyNeuraLogic's levels)
  size_t max_nodes = 200;    // beyond this many nodes, the rest is summarised as "... N more"
                             // (network: whole layers are cut, the facts first)
  size_t max_per_group = 4;  // network: neurons drawn per layer and predicate or rule, the rest counted
};

// Predicates as nodes (derived, example-fact and template-fact predicates look different),
// one edge per rule body literal into the head's predicate, labelled with the rule, the
// literal's weight shape and the rule's activation, aggregation and combination.
std::string template_dot(const Template& tmpl);

// The grounding of sample `index`: ground atoms as nodes (facts, derived atoms, queries),
// an edge from each input atom of a ground rule to its head, labelled with the rule.
std::string ground_dot(const Model& model, const Dataset& data, size_t index, const DrawOptions& options = {});

// The neural network of sample `index`, by layer: fact neurons, then per depth the rule
// neurons (one per ground rule), aggregation neurons (one per rule and head) and atom
// neurons, with values and gradients when asked. Within a layer neurons are grouped by
// predicate or rule, at most max_per_group drawn per group and the rest counted in one
// "... N more" node; a layer wraps into rows of at most 12 nodes; beyond max_nodes whole
// layers are cut, the facts first, each into one node counting its neurons; Graphviz scales
// a layout larger than 41.6 inches either way down to that (4,000 px at 96 dpi). Rules are
// numbered from 0 in file order (r0 is the template's first rule), as `lrnn ground --stats`.
std::string network_dot(const Model& model, const Dataset& data, size_t index, const DrawOptions& options = {});

// The attention weights of sample `index` as heat maps (SVG): one map per rule normalised by
// softmax over variables of its head (the zoo's `w(I, J) :- ... [aggregation=softmax(J)]`),
// queries (the head's other arguments) as rows, keys as columns, a cell per weight the
// engine computed; pairs never grounded (masked) are grey. At most 64 rows and columns are
// drawn (the rest is counted). Throws lrnn::Error when the template has no such rule.
std::string attention_svg(const Model& model, const Dataset& data, size_t index, const DrawOptions& options = {});

// "dot", "svg" or "png" from a file name's extension; throws lrnn::Error naming the file
// for any other.
std::string picture_format(const std::string& path);

// The path of Graphviz's `dot` program: `dot_program` when given (must be executable),
// else the first `dot` on PATH; empty when there is none.
std::string find_graphviz(const std::string& dot_program = "");

// Lays out DOT text with Graphviz: format "svg" or "png" (the bytes of the file), "dot"
// returns the text itself. Throws lrnn::Error (Runtime) when `dot` is absent (saying to
// install graphviz or to write .dot) or fails (with its message).
std::string render_dot(const std::string& dot, const std::string& format, const std::string& dot_program = "");

// Renders to the format of `path`'s extension and saves it atomically.
void save_picture(const std::string& dot, const std::string& path, const std::string& dot_program = "");

}  // namespace lrnn
