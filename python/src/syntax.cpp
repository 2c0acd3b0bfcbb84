// The parsed form of the text format (include/lrnn/ast.hpp) and the parser/printer
// (include/lrnn/syntax.hpp). Python reads ASTs (read-only) and prints them with the C++
// printer, which is what the DSL's own printing is tested against.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "lrnn/ast.hpp"
#include "lrnn/syntax.hpp"
#include "neural/functions.hpp"

namespace lrnn::python {

namespace {

const char* term_kind(Term::Kind k) {
  switch (k) {
    case Term::Kind::Variable: return "variable";
    case Term::Kind::Constant: return "constant";
    case Term::Kind::Number: return "number";
    case Term::Kind::String: return "string";
  }
  return "constant";
}

const char* value_kind(ValueSpec::Kind k) {
  switch (k) {
    case ValueSpec::Kind::Scalar: return "scalar";
    case ValueSpec::Kind::Vector: return "vector";
    case ValueSpec::Kind::Matrix: return "matrix";
    case ValueSpec::Kind::Dims: return "dims";
    case ValueSpec::Kind::Reference: return "reference";
  }
  return "scalar";
}

// Parsing and printing touch no Python objects, so other Python threads may run meanwhile.
template <class F>
auto without_gil(F&& f) {
  nb::gil_scoped_release release;
  return f();
}

using Statements = std::tuple<std::vector<std::string>, std::vector<std::string>, std::vector<std::string>>;

Statements canonical_statements(const TemplateAst& t) {
  Statements out;
  for (const PredicateDecl& d : t.predicates) {
    TemplateAst one;
    one.predicates.push_back(d);
    std::string line = print_template(one);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    std::get<0>(out).push_back(std::move(line));
  }
  for (const Literal& f : t.facts) std::get<1>(out).push_back(print_literal(f) + ".");
  for (const Rule& r : t.rules) std::get<2>(out).push_back(print_rule(r));
  return out;
}

// The pieces of a literal: terms and values.
void bind_terms_and_values(nb::module_& m) {
  nb::class_<Term>(m, "Term")
      .def_prop_ro("kind", [](const Term& t) { return term_kind(t.kind); })
      .def_ro("text", &Term::text)
      .def_ro("type", &Term::type)
      .def("__str__", [](const Term& t) { return print_term(t); })
      .def("__repr__", [](const Term& t) { return "Term(" + print_term(t) + ")"; })
      .def("__eq__", [](const Term& a, const Term& b) { return a == b; });

  nb::class_<ValueSpec>(m, "ValueSpec")
      .def_prop_ro("kind", [](const ValueSpec& v) { return value_kind(v.kind); })
      .def_ro("rows", &ValueSpec::rows)
      .def_ro("cols", &ValueSpec::cols)
      .def_ro("data", &ValueSpec::data)
      .def_ro("fixed", &ValueSpec::fixed)
      .def_ro("name", &ValueSpec::name)
      .def_ro("sparse", &ValueSpec::sparse)
      .def_ro("dims_is_vector", &ValueSpec::dims_is_vector)
      .def("__str__", [](const ValueSpec& v) { return print_value(v); })
      .def("__repr__", [](const ValueSpec& v) { return "ValueSpec(" + print_value(v) + ")"; })
      .def("__eq__", [](const ValueSpec& a, const ValueSpec& b) { return a == b; });
}

// Literals, rules and their metadata, declarations.
void bind_statements(nb::module_& m) {
  nb::class_<Literal>(m, "Literal")
      .def_ro("predicate", &Literal::predicate)
      .def_ro("args", &Literal::args)
      .def_ro("builtin", &Literal::builtin)
      .def_ro("hidden", &Literal::hidden)
      .def_ro("negated", &Literal::negated)
      .def_ro("soft_negated", &Literal::soft_negated)
      .def_ro("transposed", &Literal::transposed)
      .def_ro("weight", &Literal::weight)
      .def_prop_ro("arity", &Literal::arity)
      .def("__str__", [](const Literal& l) { return print_literal(l); })
      .def("__repr__", [](const Literal& l) { return "Literal(" + print_literal(l) + ")"; })
      .def("__eq__", [](const Literal& a, const Literal& b) { return a == b; });

  nb::class_<FunctionSpec>(m, "FunctionSpec")
      .def_ro("name", &FunctionSpec::name)
      .def_ro("args", &FunctionSpec::args)
      .def_ro("kwargs", &FunctionSpec::kwargs)
      .def_ro("has_parens", &FunctionSpec::has_parens)
      .def("__eq__", [](const FunctionSpec& a, const FunctionSpec& b) { return a == b; });

  nb::class_<MetaEntry>(m, "MetaEntry")
      .def_ro("key", &MetaEntry::key)
      .def_ro("value", &MetaEntry::value)
      .def("__eq__", [](const MetaEntry& a, const MetaEntry& b) { return a == b; });

  nb::class_<Rule>(m, "Rule")
      .def_ro("head", &Rule::head)
      .def_ro("body", &Rule::body)
      .def_ro("offset", &Rule::offset)
      .def_ro("meta", &Rule::meta)
      .def("__str__", [](const Rule& r) { return print_rule(r); })
      .def("__repr__", [](const Rule& r) { return "Rule(" + print_rule(r) + ")"; })
      .def("__eq__", [](const Rule& a, const Rule& b) { return a == b; });

  nb::class_<PredicateDecl>(m, "PredicateDecl")
      .def_ro("name", &PredicateDecl::name)
      .def_ro("arity", &PredicateDecl::arity)
      .def_ro("meta", &PredicateDecl::meta)
      .def_ro("offset", &PredicateDecl::offset)
      .def("__eq__", [](const PredicateDecl& a, const PredicateDecl& b) { return a == b; });
}

// Whole files: a template, an examples file, a queries file.
void bind_files(nb::module_& m) {
  nb::class_<TemplateAst>(m, "TemplateAst")
      .def_ro("rules", &TemplateAst::rules)
      .def_ro("facts", &TemplateAst::facts)
      .def_ro("predicates", &TemplateAst::predicates)
      .def("__str__", [](const TemplateAst& t) { return print_template(t); })
      .def("__eq__", [](const TemplateAst& a, const TemplateAst& b) { return a == b; });

  nb::class_<ExampleAst>(m, "ExampleAst")
      .def_ro("id", &ExampleAst::id)
      .def_ro("facts", &ExampleAst::facts)
      .def_ro("queries", &ExampleAst::queries)
      .def("__str__", [](const ExampleAst& e) { return print_example(e); })
      .def("__eq__", [](const ExampleAst& a, const ExampleAst& b) { return a == b; });

  nb::class_<QueryLineAst>(m, "QueryLineAst")
      .def_ro("id", &QueryLineAst::id)
      .def_ro("queries", &QueryLineAst::queries)
      .def("__str__", [](const QueryLineAst& q) { return print_query_line(q); })
      .def("__eq__", [](const QueryLineAst& a, const QueryLineAst& b) { return a == b; });
}

// Parsing text and files into the AST, and printing it back.
void bind_parse_and_print(nb::module_& m) {
  m.def("parse_template", [](const std::string& text, const std::string& name) {
        return without_gil([&] { return parse_template(text, name); });
      }, nb::arg("text"), nb::arg("name") = "<string>");
  m.def("load_template", [](const std::string& path) { return without_gil([&] { return load_template(path); }); },
        nb::arg("path"));
  m.def("parse_examples", [](const std::string& text, const std::string& name) {
        return without_gil([&] { return parse_examples(text, name); });
      }, nb::arg("text"), nb::arg("name") = "<string>");
  m.def("load_examples", [](const std::string& path) { return without_gil([&] { return load_examples(path); }); },
        nb::arg("path"));
  m.def("parse_queries", [](const std::string& text, const std::string& name) {
        return without_gil([&] { return parse_queries(text, name); });
      }, nb::arg("text"), nb::arg("name") = "<string>");
  m.def("load_queries", [](const std::string& path) { return without_gil([&] { return load_queries(path); }); },
        nb::arg("path"));
  m.def("parse_literal", [](const std::string& text, const std::string& name) { return parse_literal(text, name); },
        nb::arg("text"), nb::arg("name") = "<goal>");
  m.def("parse_rule", [](const std::string& text, const std::string& name) { return parse_rule(text, name); },
        nb::arg("text"), nb::arg("name") = "<string>");

  // A template's statements in canonical text, by kind (declarations, facts, rules): what
  // Template.from_file / from_string keep, so Python-added rules print in the same layout.
  m.def("canonical_statements", [](const std::string& text, const std::string& name) {
        TemplateAst t = without_gil([&] { return parse_template(text, name); });
        return canonical_statements(t);
      }, nb::arg("text"), nb::arg("name") = "<string>");
  m.def("canonical_statements_file", [](const std::string& path) {
        TemplateAst t = without_gil([&] { return load_template(path); });
        return canonical_statements(t);
      }, nb::arg("path"));
  m.def("print_template", [](const TemplateAst& t) { return print_template(t); });
  m.def("print_rule", [](const Rule& r) { return print_rule(r); });
  m.def("print_literal", [](const Literal& l) { return print_literal(l); });
  m.def("print_value", [](const ValueSpec& v) { return print_value(v); });
}

}  // namespace

void bind_syntax(nb::module_& m) {
  m.def("function_names", [] {
    nb::dict d;
    d["transformation"] = neural::activation_names();
    d["combination"] = neural::combination_names();
    d["aggregation"] = neural::aggregation_names();
    return d;
  }, "The engine's canonical function names by class (lrnn.core.functions is checked against them)");
  bind_terms_and_values(m);
  bind_statements(m);
  bind_files(m);
  bind_parse_and_print(m);
}

}  // namespace lrnn::python
