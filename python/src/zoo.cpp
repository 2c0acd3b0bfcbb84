// The zoo (include/lrnn/zoo.hpp) for lrnn.nn: every registered module by name (one generic
// function, so a new module needs no binding), masks, and SequenceModel (forward/backward on
// NumPy [n, d] arrays with a plan cache). lrnn.nn.zoo is its user.
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <variant>

#include "bindings.hpp"
#include "lrnn/syntax.hpp"
#include "lrnn/zoo.hpp"

namespace lrnn::python {

namespace {

using Array = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

nb::ndarray<nb::numpy, double, nb::ndim<2>> to_numpy(std::vector<double> v, size_t rows, size_t cols) {
  auto* owned = new std::vector<double>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  return nb::ndarray<nb::numpy, double, nb::ndim<2>>(owned->data(), {rows, cols}, owner);
}

std::vector<Literal> facts_of(const std::vector<std::string>& facts) {
  std::vector<Literal> out;
  for (const auto& f : facts) out.push_back(parse_literal(f, "<fact>"));
  return out;
}

// A Python value as a zoo parameter: bool, int (anything with __index__, e.g. numpy.int64),
// str, or a list/tuple of str (a mask's literals). Anything else is refused naming the
// parameter; the registry then checks it against the module's declaration.
zoo::ParamValue param_value(const std::string& module, nb::handle key, nb::handle value) {
  const std::string where = "zoo module '" + module + "': parameter '" + nb::cast<std::string>(nb::str(key)) + "'";
  if (nb::isinstance<nb::bool_>(value)) return nb::cast<bool>(value);
  if (PyIndex_Check(value.ptr())) {
    nb::object index = nb::steal(PyNumber_Index(value.ptr()));
    if (!index.is_valid()) throw nb::python_error();
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow) throw Error(ErrorKind::Semantic, where + ": " + nb::cast<std::string>(nb::repr(value)) + " is too large");
    return static_cast<int64_t>(x);
  }
  if (nb::isinstance<nb::str>(value)) return nb::cast<std::string>(value);
  if (nb::isinstance<nb::list>(value) || nb::isinstance<nb::tuple>(value)) {
    std::vector<std::string> literals;
    for (nb::handle item : value) {
      if (!nb::isinstance<nb::str>(item))
        throw Error(ErrorKind::Semantic, where + ": a mask is a list of literals (str), got " +
                                             nb::cast<std::string>(nb::repr(item)));
      literals.push_back(nb::cast<std::string>(item));
    }
    return literals;
  }
  throw Error(ErrorKind::Semantic, where + ": expected a bool, an int, a str or a list of str, got " +
                                       nb::cast<std::string>(nb::repr(value)));
}

nb::object python_value(const zoo::ParamValue& v) {
  return std::visit([](const auto& x) -> nb::object { return nb::cast(x); }, v);
}

// A generated module: its rules' text and where its weights sit in torch's state dict.
void bind_module(nb::module_& m) {
  nb::class_<zoo::TorchSlice>(m, "ZooTorchSlice")
      .def_ro("weight", &zoo::TorchSlice::weight)
      .def_ro("torch_name", &zoo::TorchSlice::torch_name)
      .def_ro("row_begin", &zoo::TorchSlice::row_begin)
      .def_ro("row_end", &zoo::TorchSlice::row_end)
      .def_ro("col_begin", &zoo::TorchSlice::col_begin)
      .def_ro("col_end", &zoo::TorchSlice::col_end)
      .def_ro("vector", &zoo::TorchSlice::vector);

  nb::class_<zoo::Module>(m, "ZooModule")
      .def_ro("kind", &zoo::Module::kind)
      .def_ro("prefix", &zoo::Module::prefix)
      .def_ro("input", &zoo::Module::input)
      .def_ro("memory", &zoo::Module::memory)
      .def_ro("output", &zoo::Module::output)
      .def_ro("edge", &zoo::Module::edge)
      .def_ro("input_dim", &zoo::Module::input_dim)
      .def_ro("output_dim", &zoo::Module::output_dim)
      .def_ro("torch", &zoo::Module::torch)
      .def("text", &zoo::Module::text);
}

// The rule generators: masks, attention, encoder and decoder layers, positional encodings.
void bind_generators(nb::module_& m) {
  // Masks: the literal lists of the C++ definitions.
  m.def("zoo_mask", [](const std::string& kind, int param) {
    if (kind == "causal") return zoo::Mask::causal().literals;
    if (kind == "window") return zoo::Mask::sliding_window(param).literals;
    if (kind == "strided") return zoo::Mask::strided(param).literals;
    throw Error(ErrorKind::Semantic, "unknown mask kind '" + kind + "' (causal, window, strided)");
  });
  m.def("zoo_custom_mask", [](const std::string& literals) { return zoo::Mask::custom(literals).literals; });

  m.def(
      "zoo_module",
      [](const std::string& name, const nb::dict& params) {
        std::map<std::string, zoo::ParamValue> values;
        for (auto [key, value] : params) values[nb::cast<std::string>(key)] = param_value(name, key, value);
        return zoo::module_rules(name, values);
      },
      nb::arg("name"), nb::arg("params"),
      "Generates the registered zoo module `name` from its parameters by name (zoo_modules() lists them).");
  m.def(
      "zoo_modules",
      []() {
        // (name, doc, [(parameter, type, default or None, doc, minimum), ...]) per module.
        nb::list out;
        for (const zoo::ModuleSpec& spec : zoo::modules()) {
          nb::list params;
          for (const zoo::ParamSpec& p : spec.params)
            params.append(nb::make_tuple(p.name, zoo::to_string(p.type),
                                         p.default_value ? python_value(*p.default_value) : nb::none(), p.doc, p.min));
          out.append(nb::make_tuple(spec.name, spec.doc, params));
        }
        return out;
      },
      "Every registered zoo module with its parameters.");
  m.def(
      "zoo_seq2seq_parts",
      [](int vocab, int d_model, int nhead, int num_encoder_layers, int num_decoder_layers, int dim_feedforward,
         const std::string& prefix, const std::string& source, const std::string& target, int max_len,
         bool tie_output, bool norm_first, bool norm_affine) {
        zoo::Seq2SeqOptions o{prefix, source, target, max_len, tie_output, norm_first, norm_affine};
        zoo::Seq2SeqParts parts =
            zoo::seq2seq_parts(vocab, d_model, nhead, num_encoder_layers, num_decoder_layers, dim_feedforward, o);
        return std::make_pair(std::move(parts.encoder), std::move(parts.decoder));
      },
      nb::arg("vocab"), nb::arg("d_model"), nb::arg("nhead"), nb::arg("num_encoder_layers"),
      nb::arg("num_decoder_layers"), nb::arg("dim_feedforward"), nb::arg("prefix"), nb::arg("source"),
      nb::arg("target"), nb::arg("max_len"), nb::arg("tie_output"), nb::arg("norm_first"), nb::arg("norm_affine"));
  m.def("zoo_positional_encoding", [](int n, int d) { return to_numpy(zoo::positional_encoding(n, d), n, d); });
}

// A module run on sequences: parameters, torch weights, forward and backward.
void bind_sequence_model(nb::module_& m) {
  nb::class_<zoo::SequenceModel>(m, "ZooSequenceModel")
      .def(nb::init<const zoo::Module&, uint64_t>(), nb::arg("module"), nb::arg("seed") = 1)
      .def_prop_rw(
          "dtype", [](const zoo::SequenceModel& s) { return std::string(to_string(s.dtype())); },
          [](zoo::SequenceModel& s, const std::string& name) { s.set_dtype(parse_dtype(name)); })
      .def("parameter_names", &zoo::SequenceModel::parameter_names)
      .def("parameter",
           [](const zoo::SequenceModel& s, const std::string& name) {
             auto [r, c] = s.parameter_shape(name);
             return to_numpy(s.parameter(name), r, c);
           })
      .def("set_parameter",
           [](zoo::SequenceModel& s, const std::string& name, Array a) {
             s.set_parameter(name, std::vector<double>(a.data(), a.data() + a.size()));
           })
      .def("parameter_grad",
           [](const zoo::SequenceModel& s, const std::string& name) {
             auto [r, c] = s.parameter_shape(name);
             return to_numpy(s.parameter_grad(name), r, c);
           })
      .def("zero_grad", &zoo::SequenceModel::zero_grad)
      .def("load_torch",
           [](zoo::SequenceModel& s, const zoo::Module& module, const std::map<std::string, Array>& state) {
             std::map<std::string, zoo::TorchTensor> tensors;
             for (const auto& [k, a] : state)
               tensors[k] = zoo::TorchTensor{std::vector<double>(a.data(), a.data() + a.size()), int(a.shape(0)),
                                             int(a.shape(1))};
             s.load_torch(module.torch, tensors);
           })
      .def(
          "forward",
          [](zoo::SequenceModel& s, const std::vector<std::pair<std::string, Array>>& inputs, int out_n,
             const std::vector<std::string>& extra_facts) {
            std::vector<zoo::SequenceInput> seq;
            for (const auto& [pred, a] : inputs) seq.push_back({pred, a.data(), int(a.shape(0)), int(a.shape(1))});
            std::vector<Literal> extra = facts_of(extra_facts);
            std::vector<double> out;
            {
              nb::gil_scoped_release release;
              out = s.forward(seq, out_n, extra);
            }
            const size_t d = out_n ? out.size() / out_n : 0;
            return to_numpy(std::move(out), out_n, d);
          },
          nb::arg("inputs"), nb::arg("out_n"), nb::arg("extra_facts") = std::vector<std::string>{})
      .def("backward",
           [](zoo::SequenceModel& s, Array grad) {
             std::vector<std::vector<double>> g;
             {
               nb::gil_scoped_release release;
               g = s.backward(std::vector<double>(grad.data(), grad.data() + grad.size()));
             }
             // One [size, 1] array per input, reshaped by lrnn.nn; arrays, not lists of
             // floats: a list made a Python float per entry (~15% of an n = 512 attention pass).
             nb::list out;
             for (std::vector<double>& flat : g) {
               const size_t size = flat.size();
               out.append(to_numpy(std::move(flat), size, 1));
             }
             return out;
           })
      .def("stats", [](const zoo::SequenceModel& s) {
        auto st = s.stats();
        return std::make_tuple(st.groundings, st.cache_hits, st.ground_rules, st.build_cpu_seconds);
      });
}

}  // namespace

void bind_zoo(nb::module_& m) {
  bind_module(m);
  bind_generators(m);
  bind_sequence_model(m);
}

}  // namespace lrnn::python
