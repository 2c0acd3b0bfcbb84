// Pictures for lrnn.draw (include/lrnn/draw.hpp): the template's DOT, one sample's
// grounding, network or attention through the public Model/Dataset API, and Graphviz rendering.
// A Python model is passed as its engine's template text, parameters and loss, so the
// picture is computed by the same Model::network as `lrnn draw`.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "lrnn/atomic_file.hpp"
#include "lrnn/draw.hpp"

namespace lrnn::python {

namespace {

struct SampleSource {
  std::string examples_text, queries_text, examples_file, queries_file;
  Dataset dataset() const {
    if (!examples_file.empty()) return Dataset::load(examples_file, queries_file);
    return Dataset::from_text(examples_text, queries_text);
  }
};

// DOT text (what: ground, network), or SVG (what: attention, heat maps need no layout).
std::string sample_picture(const std::string& template_text,
                       const std::vector<std::pair<std::string, std::vector<double>>>& parameters,
                       const std::string& loss, const SampleSource& source, size_t index, const std::string& what,
                       const DrawOptions& options) {
  Settings settings;
  settings.loss = loss;
  Model model(Template::from_string(template_text, "<template>"), settings);
  for (const auto& [name, values] : parameters) model.set_parameter(name, values);
  const Dataset data = source.dataset();
  if (what == "ground") return ground_dot(model, data, index, options);
  if (what == "network") return network_dot(model, data, index, options);
  if (what == "attention") return attention_svg(model, data, index, options);
  throw Error(ErrorKind::Semantic, "what='" + what + "': expected 'ground', 'network' or 'attention'");
}

}  // namespace

void bind_draw(nb::module_& m) {
  m.def("template_dot", [](const std::string& text) { return template_dot(Template::from_string(text, "<template>")); });
  m.def(
      "sample_dot",
      [](const std::string& template_text, const std::vector<std::pair<std::string, std::vector<double>>>& parameters,
         const std::string& loss, const std::string& examples_text, const std::string& queries_text,
         const std::string& examples_file, const std::string& queries_file, size_t index, const std::string& what,
         bool values, bool gradients, int value_detail, size_t max_nodes, size_t max_per_group) {
        DrawOptions options;
        options.max_per_group = max_per_group;
        options.values = values;
        options.gradients = gradients;
        options.value_detail = value_detail;
        options.max_nodes = max_nodes;
        const SampleSource source{examples_text, queries_text, examples_file, queries_file};
        nb::gil_scoped_release release;
        return sample_picture(template_text, parameters, loss, source, index, what, options);
      },
      nb::arg("template_text"), nb::arg("parameters"), nb::arg("loss"), nb::arg("examples_text"),
      nb::arg("queries_text"), nb::arg("examples_file"), nb::arg("queries_file"), nb::arg("index"), nb::arg("what"),
      nb::arg("values"), nb::arg("gradients"), nb::arg("value_detail"), nb::arg("max_nodes"),
      nb::arg("max_per_group") = DrawOptions{}.max_per_group);
  m.def(
      "render_dot",
      [](const std::string& dot, const std::string& format, const std::string& dot_program) {
        std::string picture;
        {
          nb::gil_scoped_release release;
          picture = render_dot(dot, format, dot_program);
        }
        return nb::bytes(picture.data(), picture.size());
      },
      nb::arg("dot"), nb::arg("format"), nb::arg("dot_program") = "");
  m.def("find_graphviz", &find_graphviz, nb::arg("dot_program") = "");
  // Pictures that are text already (attention heat maps, RASP drawings), saved the way every
  // lrnn file is: atomically, refusing special files, keeping an existing file's mode.
  m.def(
      "write_text_atomically",
      [](const std::string& path, const std::string& text) {
        nb::gil_scoped_release release;
        write_file_atomically(path, text);
      },
      nb::arg("path"), nb::arg("text"));
  m.def("picture_format", &picture_format);
  m.def(
      "save_picture",
      [](const std::string& dot, const std::string& path, const std::string& dot_program) {
        nb::gil_scoped_release release;
        save_picture(dot, path, dot_program);
      },
      nb::arg("dot"), nb::arg("path"), nb::arg("dot_program") = "");
}

}  // namespace lrnn::python
