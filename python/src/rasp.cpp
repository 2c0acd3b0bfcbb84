// RASP (include/lrnn/rasp.hpp) for lrnn.rasp: the s-op and selector handles with Python
// operators, RASPy's key/query spelling, the interpreter, the analyser, the `.rasp` loader,
// the lowering to templates and the SVG pictures. Everything is the C++ library's; this
// file only converts values and wraps Python callables.
//
// Python callables (map/zip functions) live inside C++ nodes as std::function objects
// holding a reference to the function (PyCallable). The GIL is held through every call below
// (none of these bindings releases it), and the wrappers take it again themselves in case a
// node is copied, called or destroyed from elsewhere. An exception a Python function raises is remembered and
// re-raised as itself when the interpreter reports the failure, with the lrnn diagnostic
// (which node failed) added as a note.
#include <Python.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "lrnn/rasp.hpp"
#include "lrnn/syntax.hpp"

namespace lrnn::python {

namespace {

namespace r = lrnn::rasp;

// ---- values ------------------------------------------------------------------------------

nb::str utf8(const std::string& s) {
  return nb::steal<nb::str>(PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace"));
}

std::string type_name_of(nb::handle h) { return Py_TYPE(h.ptr())->tp_name; }

// None, bool, int, float or str (and NumPy integers/floats); nullopt for anything else.
std::optional<r::Value> value_of(nb::handle h) {
  PyObject* p = h.ptr();
  if (p == Py_None) return r::Value{};
  if (PyBool_Check(p)) return r::Value(p == Py_True);
  if (PyFloat_Check(p)) return r::Value(PyFloat_AsDouble(p));
  if (PyUnicode_Check(p)) {
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(p, &size);
    if (!data) throw nb::python_error();
    return r::Value(std::string(data, static_cast<size_t>(size)));
  }
  if (PyLong_Check(p) || PyIndex_Check(p)) {
    nb::object index = nb::steal(PyNumber_Index(p));
    if (!index.is_valid()) throw nb::python_error();
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow != 0)
      throw Error(ErrorKind::Semantic, "the integer " + nb::cast<std::string>(nb::str(h)) +
                                           " does not fit a RASP value (64-bit integers)");
    return r::Value(static_cast<int64_t>(v));
  }
  // NumPy floating scalars other than float64 (arrays, which also have __float__, have a length)
  if (PyObject_HasAttrString(p, "__float__") && !PyComplex_Check(p) && !PyObject_HasAttrString(p, "__len__")) {
    double d = PyFloat_AsDouble(p);
    if (d == -1.0 && PyErr_Occurred()) throw nb::python_error();
    return r::Value(d);
  }
  return std::nullopt;
}

const char* const kValueKinds = "None, a bool, an int, a float or a str";

// A value a Python function returned: anything else is an error of the node that called it.
r::Value returned_value(nb::handle h) {
  if (auto v = value_of(h)) return *v;
  throw Error(ErrorKind::Semantic, std::string("the function returned a ") + type_name_of(h) +
                                       "; a RASP value is " + kValueKinds);
}

nb::object from_value(const r::Value& v) {
  switch (v.index()) {
    case 0: return nb::none();
    case 1: return nb::bool_(std::get<bool>(v));
    case 2: return nb::int_(std::get<int64_t>(v));
    case 3: return nb::float_(std::get<double>(v));
    default: return utf8(std::get<std::string>(v));
  }
}

nb::list to_list(const std::vector<r::Value>& values) {
  nb::list out;
  for (const auto& v : values) out.append(from_value(v));
  return out;
}

// A program input: a str is its characters, any other iterable its elements.
std::vector<r::Value> input_of(nb::handle h) {
  if (PyUnicode_Check(h.ptr())) return r::chars(nb::cast<std::string>(h));
  if (PyBytes_Check(h.ptr()) || !PyObject_HasAttrString(h.ptr(), "__iter__"))
    throw nb::type_error(("an input is a str (a sequence of characters) or a list of values, not a " +
                          type_name_of(h))
                             .c_str());
  std::vector<r::Value> out;
  size_t i = 0;
  for (nb::handle item : h) {
    auto v = value_of(item);
    if (!v)
      throw nb::type_error(("input position " + std::to_string(i) + " holds a " + type_name_of(item) +
                            "; a RASP value is " + kValueKinds)
                               .c_str());
    out.push_back(std::move(*v));
    ++i;
  }
  return out;
}

r::Convention convention_of(const std::string& name, bool allow_default) {
  if (name == "sum") return r::Convention::Sum;
  if (name == "mean" || name == "avg") return r::Convention::Mean;
  if (allow_default && (name.empty() || name == "default")) return r::Convention::Default;
  throw nb::value_error(("unknown aggregation convention '" + name + "' (sum or mean)").c_str());
}

const char* convention_name(r::Convention c) {
  switch (c) {
    case r::Convention::Sum: return "sum";
    case r::Convention::Mean: return "mean";
    case r::Convention::Default: return "default";
  }
  return "default";
}

r::Predicate predicate_of(const std::string& symbol) {
  static const std::pair<const char*, r::Predicate> table[] = {
      {"==", r::Predicate::Eq}, {"!=", r::Predicate::Ne}, {"<", r::Predicate::Lt},
      {"<=", r::Predicate::Le}, {">", r::Predicate::Gt}, {">=", r::Predicate::Ge},
      {"true", r::Predicate::True}, {"false", r::Predicate::False}};
  for (const auto& [s, p] : table)
    if (symbol == s) return p;
  throw nb::value_error(("unknown selector predicate '" + symbol + "' (== != < <= > >= true false)").c_str());
}

// ---- operands ----------------------------------------------------------------------------

r::Operand operand_of(nb::handle h, const char* what) {
  if (nb::isinstance<r::SOp>(h)) return nb::cast<r::SOp>(h);
  if (nb::isinstance<r::Selector>(h)) return nb::cast<r::Selector>(h);
  if (auto v = value_of(h)) return *v;
  if (nb::isinstance<r::Key>(h) || nb::isinstance<r::Query>(h))
    throw nb::type_error((std::string(what) + " is a key(...)/query(...); compare key(keys) with query(queries) "
                                              "to build a selector")
                             .c_str());
  throw nb::type_error((std::string(what) + " is a " + type_name_of(h) +
                        "; RASP operands are s-ops, selectors or values (" + kValueKinds + ")")
                           .c_str());
}

r::SOp sop_of(nb::handle h, const char* what) { return r::to_sop(operand_of(h, what), what); }

r::Selector selector_of(nb::handle h, const char* what) {
  if (nb::isinstance<r::Selector>(h)) return nb::cast<r::Selector>(h);
  throw nb::type_error((std::string(what) + " must be a selector (key(...) == query(...) or select(...)), not " +
                        (nb::isinstance<r::SOp>(h) ? std::string("an s-op") : "a " + type_name_of(h)))
                           .c_str());
}

nb::object from_operand(const r::Operand& x) {
  if (auto* v = std::get_if<r::Value>(&x)) return from_value(*v);
  if (auto* s = std::get_if<r::SOp>(&x)) return nb::cast(*s);
  return nb::cast(std::get<r::Selector>(x));
}

nb::object binary(r::Op op, nb::handle a, nb::handle b) {
  return from_operand(r::apply_binary(op, operand_of(a, "the left operand"), operand_of(b, "the right operand")));
}

// ---- Python functions inside nodes -------------------------------------------------------

// The exception the last failing Python function raised (a strong reference), re-raised by
// the entry points below when the interpreter reports the failure. A raw pointer, not an
// nb::object: it must never be released after the interpreter has shut down.
thread_local PyObject* pending_exception = nullptr;

void clear_pending() {
  if (pending_exception) {
    PyObject* e = pending_exception;
    pending_exception = nullptr;
    Py_DECREF(e);
  }
}

// Every live PyCallable, so that interpreter shutdown can drop their functions (below).
// Only touched with the GIL held.
class PyCallable;
std::unordered_set<PyCallable*>& live_callables() {
  static auto* live = new std::unordered_set<PyCallable*>();  // never destroyed: used until exit
  return *live;
}

// Holds a Python callable; copies and destruction take the GIL (the nodes that hold these
// may be copied or released by C++ code that does not know about Python).
//
// A function that refers to the program it is part of (a module-level `atoi =
// tokens.map(lambda x: ...)`: the lambda's globals hold `atoi`) makes a reference cycle
// through C++ that Python's garbage collector cannot see. Such cycles are broken at
// interpreter exit (`release_all`, an atexit hook) so that everything is freed normally.
class PyCallable {
 public:
  explicit PyCallable(nb::object fn) : fn_(fn.release().ptr()) { live_callables().insert(this); }
  PyCallable(const PyCallable& other) : fn_(other.fn_) {
    nb::gil_scoped_acquire gil;
    Py_XINCREF(fn_);
    live_callables().insert(this);
  }
  PyCallable& operator=(const PyCallable&) = delete;
  ~PyCallable() {
    if (!Py_IsInitialized()) return;  // after shutdown the reference is simply dropped
    nb::gil_scoped_acquire gil;
    live_callables().erase(this);
    Py_XDECREF(fn_);
  }

  static void release_all() {
    std::vector<PyObject*> functions;
    for (PyCallable* c : live_callables()) {
      if (c->fn_) functions.push_back(c->fn_);
      c->fn_ = nullptr;
    }
    for (PyObject* f : functions) Py_DECREF(f);  // may free nodes, which erase themselves
  }

 protected:
  // Calls the function; a Python exception is remembered and reported to the C++ caller as a
  // short std::runtime_error (the interpreter names the failing node around it).
  r::Value call(const std::vector<r::Value>& xs) const {
    nb::gil_scoped_acquire gil;
    if (!fn_) throw std::runtime_error("the Python function was released at interpreter exit");
    nb::object args = nb::steal(PyTuple_New(static_cast<Py_ssize_t>(xs.size())));
    if (!args.is_valid()) throw nb::python_error();
    for (size_t i = 0; i < xs.size(); ++i)
      PyTuple_SET_ITEM(args.ptr(), static_cast<Py_ssize_t>(i), from_value(xs[i]).release().ptr());
    nb::object result = nb::steal(PyObject_CallObject(fn_, args.ptr()));
    if (!result.is_valid()) {
      nb::python_error e;  // fetches (and clears) the raised exception
      nb::handle value = e.value();
      std::string text;
      try {
        text = nb::cast<std::string>(nb::str(value));
      } catch (...) {
      }
      std::string described = std::string(Py_TYPE(value.ptr())->tp_name) + (text.empty() ? "" : ": " + text);
      clear_pending();
      pending_exception = nb::borrow(value).release().ptr();
      throw std::runtime_error(described);
    }
    return returned_value(result);
  }

  PyObject* fn_;
};

struct PyMapFn : PyCallable {
  using PyCallable::PyCallable;
  r::Value operator()(const r::Value& x) const { return call({x}); }
};

struct PyZipFn : PyCallable {
  using PyCallable::PyCallable;
  r::Value operator()(const std::vector<r::Value>& xs) const { return call(xs); }
};

std::string label_of(nb::handle fn, const std::string& label) {
  if (!label.empty()) return label;
  if (nb::hasattr(fn, "__name__")) {
    std::string name = nb::cast<std::string>(nb::str(fn.attr("__name__")));
    if (name == "<lambda>") return "lambda";
    if (!name.empty()) return name;
  }
  return "map";
}

void require_callable(nb::handle fn, const char* what) {
  if (!PyCallable_Check(fn.ptr()))
    throw nb::type_error((std::string(what) + " needs a function, got a " + type_name_of(fn)).c_str());
}

// Runs `f`; when it fails because a Python function raised, re-raises that exception (with
// the lrnn diagnostic as a note) instead of the lrnn error.
template <class F>
auto running_python(F&& f) {
  clear_pending();
  try {
    auto result = f();
    clear_pending();
    return result;
  } catch (const Error& e) {
    if (!pending_exception) throw;
    nb::object exc = nb::steal(pending_exception);
    pending_exception = nullptr;
    if (nb::hasattr(exc, "add_note")) exc.attr("add_note")(utf8(std::string("lrnn: ") + e.what()));
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    throw nb::python_error();
  }
}

// Lowering calls functions on value combinations the program may never meet and skips the
// ones that fail, so remembered exceptions are dropped there.
template <class F>
auto swallowing_python(F&& f) {
  clear_pending();
  try {
    auto result = f();
    clear_pending();
    return result;
  } catch (...) {
    clear_pending();
    throw;
  }
}

// ---- programs ----------------------------------------------------------------------------

// The s-op and convention of something runnable: an s-op (sum, RASPy) or a `.rasp` program.
std::pair<r::SOp, r::Convention> runnable(nb::handle h, const std::string& convention) {
  if (nb::isinstance<r::Program>(h)) {
    const auto& p = nb::cast<const r::Program&>(h);
    return {p.output, convention.empty() ? p.convention : convention_of(convention, false)};
  }
  if (nb::isinstance<r::SOp>(h))
    return {nb::cast<r::SOp>(h), convention.empty() ? r::Convention::Sum : convention_of(convention, false)};
  if (nb::isinstance<r::Selector>(h))
    throw nb::type_error("a selector is not a program: aggregate it (.value(...)) or take its selector_width first");
  throw nb::type_error(("a program is an s-op or a loaded .rasp Program, not a " + type_name_of(h)).c_str());
}

// The input Jupyter pictures are drawn on: RASPy's "hello" until set_display_input.
std::vector<r::Value>& display_input() {
  static std::vector<r::Value> input = r::chars("hello");
  return input;
}

// Jupyter's inline picture (_repr_svg_) of an s-op, a selector (drawn through its width, so
// its matrix shows) or a program, on the display input; None, so that Jupyter shows the
// text repr instead, when it cannot run on that input (say, a program of numbers).
nb::object repr_svg(nb::handle program) {
  try {
    r::SOp s;
    r::Convention conv = r::Convention::Sum;
    if (nb::isinstance<r::Selector>(program)) s = r::selector_width(nb::cast<r::Selector>(program));
    else std::tie(s, conv) = runnable(program, "");
    const std::vector<r::Value> input = display_input();
    std::string svg = running_python([&] { return r::draw_svg(s, input, conv); });
    return nb::str(svg.c_str(), svg.size());
  } catch (const lrnn::Error&) {
    return nb::none();
  } catch (nb::python_error&) {  // a Python function of the program failed on this input
    return nb::none();
  }
}

nb::list run(nb::handle program, nb::handle input, const std::string& convention) {
  auto [sop, conv] = runnable(program, convention);
  std::vector<r::Value> in = input_of(input);
  return to_list(running_python([&] { return r::run(sop, in, conv); }));
}

std::string describe(const r::SOp& s) {
  const r::Node& n = *s.node();
  return "SOp(" + n.display_name() + ")";
}

}  // namespace

namespace {

// The arithmetic, comparison and logical operators, shared by s-ops and selectors:
// apply_binary decides what a combination means (selector & selector is a selector; a
// selector compared with anything an error).
struct OpDef { const char* name; r::Op op; bool reflected; };
const OpDef kBinaryOperators[] = {
    {"__add__", r::Op::Add, false}, {"__radd__", r::Op::Add, true},  {"__sub__", r::Op::Sub, false},
    {"__rsub__", r::Op::Sub, true}, {"__mul__", r::Op::Mul, false},  {"__rmul__", r::Op::Mul, true},
    {"__truediv__", r::Op::Div, false}, {"__rtruediv__", r::Op::Div, true}, {"__mod__", r::Op::Mod, false},
    {"__rmod__", r::Op::Mod, true}, {"__pow__", r::Op::Pow, false},  {"__rpow__", r::Op::Pow, true},
    {"__eq__", r::Op::Eq, false},   {"__ne__", r::Op::Ne, false},    {"__lt__", r::Op::Lt, false},
    {"__le__", r::Op::Le, false},   {"__gt__", r::Op::Gt, false},    {"__ge__", r::Op::Ge, false},
    {"__and__", r::Op::And, false}, {"__rand__", r::Op::And, true},  {"__or__", r::Op::Or, false},
    {"__ror__", r::Op::Or, true}};

template <class T>
void def_binary_operators(nb::class_<T>& cls) {
  for (const OpDef& d : kBinaryOperators) {
    const r::Op op = d.op;
    if (d.reflected)
      cls.def(d.name, [op](nb::handle self, nb::handle other) { return binary(op, other, self); }, nb::is_operator());
    else
      cls.def(d.name, [op](nb::handle self, nb::handle other) { return binary(op, self, other); }, nb::is_operator());
  }
}

// The s-op class: its methods and operators.
void bind_sops(nb::module_& m) {
  // ---- s-ops --------------------------------------------------------------------------------
  nb::class_<r::SOp> sop(m, "SOp");
  sop.def("__call__", [](nb::handle self, nb::handle input) { return run(self, input, ""); }, nb::arg("input"),
          "The values on an input (a str or a list), with RASPy's sum aggregation.")
      .def("input", [](nb::handle self, nb::handle input) { return run(self, input, ""); }, nb::arg("input"))
      .def(
          "name",
          [](const r::SOp& self, std::optional<std::string> name) -> nb::object {
            if (!name) return nb::str(self.name().c_str());
            return nb::cast(self.name(*name));
          },
          nb::arg("name") = nb::none(),
          "With a name: a copy of this s-op under that name (RASPy). Without: its name ('' if none).")
      .def_prop_ro("label", [](const r::SOp& self) { return self.node()->display_name(); },
                   "The name, or a description such as 'aggregate#12'.")
      .def_prop_ro("id", [](const r::SOp& self) { return self.node()->id; })
      .def_prop_ro("kind", [](const r::SOp& self) { return std::string(r::kind_name(self.node()->kind)); })
      .def_prop_ro("encoding",
                   [](const r::SOp& self) {
                     switch (self.node()->encoding) {
                       case r::Encoding::Categorical: return "categorical";
                       case r::Encoding::Numerical: return "numerical";
                       default: return "unspecified";
                     }
                   })
      .def(
          "map",
          [](const r::SOp& self, nb::object fn, const std::string& label) {
            require_callable(fn, "map");
            std::string l = label_of(fn, label);
            return self.map(PyMapFn(std::move(fn)), l);
          },
          nb::arg("fn"), nb::arg("label") = "", "f applied at every position (an MLP in a transformer).")
      .def_static(
          "zip",
          [](nb::object fn, nb::args sops) {
            require_callable(fn, "zip");
            std::vector<r::SOp> args;
            for (nb::handle h : sops) args.push_back(sop_of(h, "a zip argument"));
            std::string l = label_of(fn, "");
            return r::zipmap(args, PyZipFn(std::move(fn)), l);
          },
          nb::arg("fn"), nb::arg("sops"), "SOp.zip(f, a, b, ...): f(a[i], b[i], ...) at every position (RASPy).")
      .def("numerical", &r::SOp::numerical)
      .def("categorical", &r::SOp::categorical)
      .def("round", [](const r::SOp& self) { return r::round(self); })
      .def(
          "has",
          [](const r::SOp& self, nb::object values) {
            if (!nb::hasattr(values, "__contains__"))
              throw nb::type_error(("has(...) needs a collection, got a " + type_name_of(values)).c_str());
            return self.map(PyMapFn(values.attr("__contains__")), "has");
          },
          nb::arg("values"), "x in values at every position (RASPy's .has).")
      .def("__repr__", &describe)
      .def("_repr_svg_", [](nb::handle self) { return repr_svg(self); },
           "Jupyter's picture: the program on the display input (lrnn.rasp.set_display_input).")
      .def("__hash__", [](const r::SOp& self) { return self.node()->id; })
      .def("__bool__",
           [](const r::SOp&) -> bool {
             throw nb::type_error(
                 "an s-op has no truth value: comparisons build s-ops (use where(cond, a, b), '&', '|', '~'; "
                 "chained comparisons such as 0 < x < 5 are not supported)");
           });

  def_binary_operators(sop);
  sop.def("__invert__", [](const r::SOp& a) { return r::unary(r::Op::Not, a); })
      .def("__neg__", [](const r::SOp& a) { return r::unary(r::Op::Neg, a); })
      .def("__pos__", [](const r::SOp& a) { return a; });
}

// Selectors: combinators, operators and their matrix on an input.
void bind_selectors(nb::module_& m) {
  // ---- selectors ---------------------------------------------------------------------------
  nb::class_<r::Selector> sel(m, "Selector");
  sel.def(
         "value",
         [](const r::Selector& self, nb::handle values, nb::handle default_value) {
           auto d = value_of(default_value);
           if (!d) throw nb::type_error(("an aggregate's default is a value, not a " + type_name_of(default_value)).c_str());
           return self.value(sop_of(values, "the aggregated values"), *d);
         },
         nb::arg("values"), nb::arg("default").none() = nb::int_(0),
         "aggregate(self, values, default): RASPy's attention (sum of the selected values).")
      .def("width", &r::Selector::width)
      .def(
          "name",
          [](const r::Selector& self, std::optional<std::string> name) -> nb::object {
            if (!name) return nb::str(self.name().c_str());
            return nb::cast(self.name(*name));
          },
          nb::arg("name") = nb::none(),
          "With a name: a copy of this selector under that name. Without: its name ('' if none).")
      .def_prop_ro("label", [](const r::Selector& self) { return self.node()->display_name(); })
      .def_prop_ro("id", [](const r::Selector& self) { return self.node()->id; })
      .def_prop_ro("kind", [](const r::Selector& self) { return std::string(r::kind_name(self.node()->kind)); })
      .def("__invert__", [](const r::Selector& a) { return r::select_not(a); })
      .def("__repr__", [](const r::Selector& s) { return "Selector(" + s.node()->display_name() + ")"; })
      .def("_repr_svg_", [](nb::handle self) { return repr_svg(self); },
           "Jupyter's picture: the selector matrix (through its width) on the display input.")
      .def("__hash__", [](const r::Selector& self) { return self.node()->id; })
      .def("__bool__", [](const r::Selector&) -> bool {
        throw nb::type_error("a selector has no truth value: combine selectors with '&', '|', '~'");
      });
  def_binary_operators(sel);
  // The matrix on an input: [query i][key j], as RASPy draws it (`sel(input)` in RASPy).
  auto matrix = [](const r::Selector& self, nb::handle input) {
    std::vector<r::Value> in = input_of(input);
    r::SOp probe = r::aggregate(self, r::SOp(int64_t{0}));
    r::Evaluation ev = running_python([&] { return r::evaluate(probe, in); });
    nb::list rows;
    for (const auto& row : ev.selectors.at(self.node().get())) {
      nb::list out;
      for (uint8_t x : row) out.append(nb::bool_(x != 0));
      rows.append(out);
    }
    return rows;
  };
  sel.def("matrix", matrix, nb::arg("input")).def("__call__", matrix, nb::arg("input"));
}

// key(...) == query(...) builds selectors, as in RASPy.
void bind_keys_and_queries(nb::module_& m) {
  // ---- key / query -------------------------------------------------------------------------
  nb::class_<r::Query>(m, "Query")
      .def_prop_ro("sop", [](const r::Query& q) { return q.sop; })
      .def("__repr__", [](const r::Query& q) { return "query(" + q.sop.node()->display_name() + ")"; });
  nb::class_<r::Key> key_class(m, "Key");
  key_class.def_prop_ro("sop", [](const r::Key& k) { return k.sop; })
      .def("__repr__", [](const r::Key& k) { return "key(" + k.sop.node()->display_name() + ")"; });
  static const std::pair<const char*, r::Predicate> comparisons[] = {
      {"__eq__", r::Predicate::Eq}, {"__ne__", r::Predicate::Ne}, {"__lt__", r::Predicate::Lt},
      {"__le__", r::Predicate::Le}, {"__gt__", r::Predicate::Gt}, {"__ge__", r::Predicate::Ge}};
  for (const auto& [name, pred] : comparisons) {
    const r::Predicate p = pred;
    key_class.def(
        name,
        [p](const r::Key& k, nb::handle other) {
          if (!nb::isinstance<r::Query>(other))
            throw nb::type_error(("key(...) compares with query(...) to build a selector, not with " +
                                  (nb::isinstance<r::SOp>(other)      ? std::string("an s-op")
                                   : nb::isinstance<r::Selector>(other) ? std::string("a selector")
                                                                        : "a " + type_name_of(other)) +
                                  " (write key(keys) == query(queries))")
                                     .c_str());
          return r::select(k.sop, nb::cast<const r::Query&>(other).sop, p);
        },
        nb::is_operator());
  }
  key_class.def("__hash__", [](const r::Key& k) { return k.sop.node()->id; });
  m.def("key", [](nb::handle x) { return r::Key{sop_of(x, "key(...)")}; }, nb::arg("keys"));
  m.def("query", [](nb::handle x) { return r::Query{sop_of(x, "query(...)")}; }, nb::arg("queries"));
}

// The primitives and combinators (tokens, aggregate, selector_width, ...).
void bind_combinators(nb::module_& m) {
  // ---- combinators -------------------------------------------------------------------------
  m.def("tokens", &r::tokens);
  m.def("indices", &r::indices);
  m.def("length", &r::length);
  m.def("constant", [](nb::handle v) {
    auto value = value_of(v);
    if (!value) throw nb::type_error(("a constant is a value (" + std::string(kValueKinds) + "), not a " + type_name_of(v)).c_str());
    return r::SOp::constant(*value);
  }, nb::arg("value").none());
  m.def(
      "select",
      [](nb::handle keys, nb::handle queries, const std::string& predicate) {
        return r::select_dynamic(operand_of(keys, "select's keys"), operand_of(queries, "select's queries"),
                                 predicate_of(predicate));
      },
      nb::arg("keys"), nb::arg("queries"), nb::arg("predicate"));
  m.def(
      "aggregate",
      [](nb::handle selector, nb::handle values, nb::handle default_value, const std::string& convention) {
        auto d = value_of(default_value);
        if (!d) throw nb::type_error(("an aggregate's default is a value, not a " + type_name_of(default_value)).c_str());
        return r::aggregate(selector_of(selector, "aggregate's selector"), sop_of(values, "the aggregated values"), *d,
                            convention_of(convention, true));
      },
      nb::arg("selector"), nb::arg("values"), nb::arg("default").none() = nb::int_(0), nb::arg("convention") = "");
  m.def("selector_width", [](nb::handle s) { return r::selector_width(selector_of(s, "selector_width's argument")); },
        nb::arg("selector"));
  m.def(
      "where",
      [](nb::handle cond, nb::handle t, nb::handle f) {
        return r::where(sop_of(cond, "where's condition"), sop_of(t, "where's true branch"),
                        sop_of(f, "where's false branch"));
      },
      nb::arg("cond"), nb::arg("if_true"), nb::arg("if_false"));
  m.def("numerical", [](nb::handle x) { return r::numerical(sop_of(x, "numerical(...)")); });
  m.def("categorical", [](nb::handle x) { return r::categorical(sop_of(x, "categorical(...)")); });
  m.def("indicator", [](nb::handle x) { return r::indicator(sop_of(x, "indicator(...)")); });
  // The functions above that lrnn.rasp exports as they are (a new primitive: its name here).
  m.attr("primitives") = nb::make_tuple("key", "query", "where", "selector_width", "numerical", "categorical",
                                        "indicator", "constant");
}

// Programs, the interpreter and the analyser.
void bind_programs(nb::module_& m) {
  // ---- programs, interpreter ---------------------------------------------------------------
  nb::class_<r::Program>(m, "Program")
      .def_prop_ro("output", [](const r::Program& p) { return p.output; })
      .def_prop_ro("convention", [](const r::Program& p) { return std::string(convention_name(p.convention)); })
      .def_prop_ro("named", [](const r::Program& p) { return p.named; })
      .def("get", &r::Program::get, nb::arg("name"))
      .def("with_output", &r::Program::with_output, nb::arg("name"))
      .def("__call__", [](nb::handle self, nb::handle input) { return run(self, input, ""); }, nb::arg("input"))
      .def("input", [](nb::handle self, nb::handle input) { return run(self, input, ""); }, nb::arg("input"))
      .def("_repr_svg_", [](nb::handle self) { return repr_svg(self); },
           "Jupyter's picture: the program on the display input (lrnn.rasp.set_display_input).")
      .def("__repr__", [](const r::Program& p) {
        return "Program(" + p.output.node()->display_name() + ", " + convention_name(p.convention) + ", " +
               std::to_string(p.named.size()) + " named s-ops)";
      });
  m.def("load_rasp_file", &r::load_rasp_file, nb::arg("path"));
  m.def("parse_rasp", &r::parse_rasp, nb::arg("text"), nb::arg("name") = "<string>");

  m.def("run", &run, nb::arg("program"), nb::arg("input"), nb::arg("convention") = "");
  // Every s-op of the program on an input, children before parents: (label, values).
  m.def(
      "trace",
      [](nb::handle program, nb::handle input, const std::string& convention) {
        auto [s, conv] = runnable(program, convention);
        std::vector<r::Value> in = input_of(input);
        r::Evaluation ev = running_python([&] { return r::evaluate(s, in, conv); });
        nb::list out;
        for (const r::Node* n : ev.order)
          if (!n->is_selector()) out.append(nb::make_tuple(n->display_name(), to_list(ev.values.at(n))));
        return out;
      },
      nb::arg("program"), nb::arg("input"), nb::arg("convention") = "");

  // ---- analyser ----------------------------------------------------------------------------
  nb::class_<r::Head>(m, "Head")
      .def_ro("layer", &r::Head::layer)
      .def_ro("selector", &r::Head::selector)
      .def_ro("outputs", &r::Head::outputs)
      .def("__repr__", [](const r::Head& h) {
        std::string outs;
        for (const auto& o : h.outputs) outs += (outs.empty() ? "" : ", ") + o;
        return "Head(layer " + std::to_string(h.layer) + ": " + h.selector + " -> " + outs + ")";
      });
  nb::class_<r::Analysis>(m, "Analysis")
      .def_ro("layers", &r::Analysis::layers)
      .def_ro("heads_per_layer", &r::Analysis::heads_per_layer)
      .def_ro("max_heads", &r::Analysis::max_heads)
      .def_ro("heads", &r::Analysis::heads)
      .def("__repr__", [](const r::Analysis& a) {
        std::string heads;
        for (int h : a.heads_per_layer) heads += (heads.empty() ? "" : ", ") + std::to_string(h);
        return "Analysis(layers=" + std::to_string(a.layers) + ", heads_per_layer=[" + heads +
               "], max_heads=" + std::to_string(a.max_heads) + ")";
      });
  m.def("analyze", [](nb::handle program) { return r::analyze(runnable(program, "").first); }, nb::arg("program"));
}

// Lowering to lrnn templates.
void bind_lowering(nb::module_& m) {
  // ---- lowering ----------------------------------------------------------------------------
  nb::class_<r::LoweredTemplate>(m, "LoweredTemplate")
      .def_ro("ast", &r::LoweredTemplate::ast)
      .def_ro("text", &r::LoweredTemplate::text)
      .def_ro("output_predicate", &r::LoweredTemplate::output_predicate)
      .def_ro("output_numeric", &r::LoweredTemplate::output_numeric)
      .def_ro("exact", &r::LoweredTemplate::exact)
      .def_ro("values_enumerated", &r::LoweredTemplate::values_enumerated)
      .def_prop_ro("output_values", [](const r::LoweredTemplate& t) { return to_list(t.output_values); })
      .def_prop_ro("value_sets", [](const r::LoweredTemplate& t) {
        nb::list out;
        for (const auto& [name, values] : t.value_sets) out.append(nb::make_tuple(name, to_list(values)));
        return out;
      });
  m.def(
      "to_template",
      [](nb::handle program, nb::handle vocab, int max_len, const std::string& convention, size_t max_values) {
        auto [s, conv] = runnable(program, convention);
        std::vector<r::Value> v = input_of(vocab);
        if (max_len < 1) throw nb::value_error("max_len must be at least 1");
        return swallowing_python([&] { return r::to_template(s, v, max_len, conv, max_values); });
      },
      nb::arg("program"), nb::arg("vocab"), nb::arg("max_len"), nb::arg("convention") = "",
      nb::arg("max_values") = 4096);
  m.def(
      "example_facts", [](nb::handle input) { return print_example(r::example_facts(input_of(input))); },
      nb::arg("input"), "The example (token(i, v), index(i, i) facts) of an input, as one examples-file line.");
  m.def(
      "value_term", [](nb::handle v) {
        auto value = value_of(v);
        if (!value) throw nb::type_error(("not a RASP value: a " + type_name_of(v)).c_str());
        return print_term(r::value_term(*value));
      },
      nb::arg("value").none(), "The constant a value becomes in lowered templates (printed).");
}

// What CompiledModel.verify reports: how many inputs were checked and the first mismatch.
void bind_verify_report(nb::module_& m) {
  nb::class_<r::VerifyReport>(m, "VerifyReport")
      .def_ro("checked", &r::VerifyReport::checked)
      .def_ro("total", &r::VerifyReport::total)
      .def_ro("mismatches", &r::VerifyReport::mismatches)
      .def_ro("sampled", &r::VerifyReport::sampled)
      .def_ro("first_mismatch", &r::VerifyReport::first_mismatch)
      .def_prop_ro("ok", [](const r::VerifyReport& v) { return v.mismatches == 0 && v.checked > 0; })
      .def("__bool__", [](const r::VerifyReport& v) { return v.mismatches == 0 && v.checked > 0; })
      .def("__repr__", [](const r::VerifyReport& v) {
        return "VerifyReport(checked=" + std::to_string(v.checked) + " of " + std::to_string(v.total) +
               (v.sampled ? " (sampled)" : "") + ", mismatches=" + std::to_string(v.mismatches) +
               (v.first_mismatch.empty() ? "" : ", first: " + v.first_mismatch) + ")";
      });
}

// (name, rows, cols, flat row-major values) for every weight matrix; lrnn.rasp makes NumPy
// arrays of them.
nb::list compiled_weights(const r::CompiledModel& self) {
  nb::list out;
  auto add = [&](const std::string& name, int rows, int cols, const std::vector<double>& w) {
    out.append(nb::make_tuple(name, rows, cols, w));
  };
  const int d = self.d_model;
  add("embed.tokens", static_cast<int>(self.vocab.size()), d, self.token_embedding);
  add("embed.positions", self.max_len, d, self.position_embedding);
  add("embed.bos", 1, d, self.bos_embedding);
  for (size_t l = 0; l < self.layers.size(); ++l) {
    const auto& layer = self.layers[l];
    std::string p = "layers." + std::to_string(l) + ".";
    for (size_t h = 0; h < layer.heads.size(); ++h) {
      add(p + "heads." + std::to_string(h) + ".qk", d, d, layer.heads[h].qk);
      add(p + "heads." + std::to_string(h) + ".ov", d, d, layer.heads[h].ov);
    }
    add(p + "mlp.w1", layer.mlp.hidden, d, layer.mlp.w1);
    add(p + "mlp.b1", 1, layer.mlp.hidden, layer.mlp.b1);
    add(p + "mlp.w2", d, layer.mlp.hidden, layer.mlp.w2);
  }
  return out;
}

// A compiled transformer: running it, verifying it, and its sizes and weights.
void bind_compiled_model(nb::module_& m) {
  nb::class_<r::CompiledModel>(m, "CompiledModel")
      .def("__call__",
           [](const r::CompiledModel& self, nb::handle input) {
             std::vector<r::Value> in = input_of(input);
             return to_list(self(in));
           },
           nb::arg("input"), "The output of the weights on an input (argmax per categorical position).")
      .def("forward",
           [](const r::CompiledModel& self, nb::handle input) {
             std::vector<r::Value> in = input_of(input);
             return std::make_pair(self.forward(in), static_cast<int>(in.size()) + 1);
           },
           nb::arg("input"), "The final residual stream, flat (n + 1) x d_model, and its row count.")
      .def(
          "verify",
          [](const r::CompiledModel& self, size_t max_inputs) {
            return running_python([&] { return self.verify(max_inputs); });
          },
          nb::arg("max_inputs") = 100000)
      .def("table", &r::CompiledModel::table)
      .def(
          "template_text",
          [](const r::CompiledModel& self, bool fixed, bool random, double readout_scale) {
            r::CompiledTemplateOptions o;
            o.fixed = fixed;
            o.random = random;
            o.readout_scale = readout_scale;
            return self.template_text(o);
          },
          nb::arg("fixed") = false, nb::arg("random") = false, nb::arg("readout_scale") = 0.0,
          "The transformer as an lrnn template (attention and MLP rules with these weights).")
      .def(
          "readout_query_text",
          [](const r::CompiledModel& self, nb::handle outputs) { return self.readout_query_text(input_of(outputs)); },
          nb::arg("outputs"), "The readout's queries for target outputs: a one-hot rasp_out(p) per position.")
      .def(
          "example_text",
          [](const r::CompiledModel& self, nb::handle input) { return self.example_text(input_of(input)); },
          nb::arg("input"), "The template's example facts of an input (rasp_input(0) is BOS).")
      .def(
          "query_text",
          [](const r::CompiledModel& self, nb::handle input) { return self.query_text(input_of(input)); },
          nb::arg("input"), "The template's queries of an input: residual(p) for every position, BOS first.")
      .def(
          "draw_svg",
          [](const r::CompiledModel& self, nb::handle input) { return r::draw_compiled_svg(self, input_of(input)); },
          nb::arg("input"), "The residual stream and every head's attention weights on an input, as SVG.")
      .def(
          "attention",
          [](const r::CompiledModel& self, nb::handle input) { return self.attention(input_of(input)); },
          nb::arg("input"), "Every head's attention weights, (n + 1) x (n + 1) row major each, BOS first.")
      .def_ro("d_model", &r::CompiledModel::d_model)
      .def_ro("max_len", &r::CompiledModel::max_len)
      .def_ro("causal", &r::CompiledModel::causal)
      .def_ro("dim_labels", &r::CompiledModel::dim_labels)
      .def_ro("analyzed_layers", &r::CompiledModel::analyzed_layers)
      .def_prop_ro("vocab", [](const r::CompiledModel& self) { return to_list(self.vocab); })
      .def_prop_ro("layers", [](const r::CompiledModel& self) { return static_cast<int>(self.layers.size()); })
      .def_prop_ro("heads", &r::CompiledModel::heads)
      .def_prop_ro("heads_per_layer", &r::CompiledModel::heads_per_layer)
      .def_prop_ro("mlp_width", &r::CompiledModel::mlp_width)
      .def_prop_ro("mlp_hidden", [](const r::CompiledModel& self) {
        std::vector<int> out;
        for (const auto& l : self.layers) out.push_back(l.mlp.hidden);
        return out;
      })
      .def_prop_ro("spaces", [](const r::CompiledModel& self) {
        nb::list out;
        for (const auto& s : self.spaces)
          out.append(nb::make_tuple(s.name, s.numerical ? "numerical" : s.offset < 0 ? "constant" : "categorical",
                                    s.offset, s.width, to_list(s.values)));
        return out;
      })
      .def_prop_ro("output_space", [](const r::CompiledModel& self) { return self.output_space; })
      .def("_weights", &compiled_weights)
      .def("_heads", [](const r::CompiledModel& self) {
        nb::list out;
        for (size_t l = 0; l < self.layers.size(); ++l)
          for (const auto& h : self.layers[l].heads) out.append(nb::make_tuple(static_cast<int>(l) + 1, h.output, h.selector));
        return out;
      })
      .def("__repr__", [](const r::CompiledModel& self) {
        return "CompiledModel(layers=" + std::to_string(self.layers.size()) + ", heads=" + std::to_string(self.heads()) +
               ", residual=" + std::to_string(self.d_model) + ", mlp_width=" + std::to_string(self.mlp_width()) + ")";
      });
}

// The weight compiler, its compiled models, and the pictures of programs.
void bind_compiler(nb::module_& m) {
  bind_verify_report(m);
  bind_compiled_model(m);
  m.def(
      "compile",
      [](nb::handle program, nb::handle vocab, int max_len, const std::string& convention, bool causal,
         size_t max_inputs) {
        auto [s, conv] = runnable(program, convention);
        std::vector<r::Value> v = input_of(vocab);
        r::CompileOptions options;
        options.convention = conv;
        options.causal = causal;
        options.max_inputs = max_inputs;
        return running_python([&] { return r::compile(s, v, max_len, options); });
      },
      nb::arg("program"), nb::arg("vocab"), nb::arg("max_len"), nb::arg("convention") = "",
      nb::arg("causal") = false, nb::arg("max_inputs") = 200000);

  // ---- pictures ----------------------------------------------------------------------------
  m.def("set_display_input", [](nb::handle input) { display_input() = input_of(input); }, nb::arg("input"),
        "The input Jupyter draws s-ops, selectors and programs on (default \"hello\", as RASPy).");
  m.def(
      "draw_svg",
      [](nb::handle program, nb::handle input, const std::string& convention) {
        auto [s, conv] = runnable(program, convention);
        std::vector<r::Value> in = input_of(input);
        return running_python([&] { return r::draw_svg(s, in, conv); });
      },
      nb::arg("program"), nb::arg("input"), nb::arg("convention") = "");
}

}  // namespace

void bind_rasp(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("rasp", "RASP programs (lrnn.rasp wraps this module)");
  m.def("_release_functions", &PyCallable::release_all,
        "Drops every Python function held by RASP nodes (run at interpreter exit).");
  nb::module_::import_("atexit").attr("register")(m.attr("_release_functions"));
  bind_sops(m);
  bind_selectors(m);
  bind_keys_and_queries(m);
  bind_combinators(m);
  bind_programs(m);
  bind_lowering(m);
  bind_compiler(m);
}

}  // namespace lrnn::python
