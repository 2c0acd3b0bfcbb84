// The zoo's registry: the modules registered with LRNN_ZOO_MODULE, found by name, and the
// checks on their parameters (include/lrnn/zoo.hpp). The list of registrations is generated
// by the build from the LRNN_ZOO_MODULE lines of src/zoo/*.cpp (CMakeLists.txt), so a new
// module file needs no edit here.
#include <algorithm>
#include <climits>

#include "lrnn/diagnostics.hpp"
#include "lrnn/suggest.hpp"
#include "lrnn/zoo.hpp"

namespace lrnn::zoo {

// One declaration per registered module: `ModuleSpec registered_module_<name>();`.
#define LRNN_ZOO_ENTRY(NAME) ModuleSpec registered_module_##NAME();
#include "zoo/modules.inc"
#undef LRNN_ZOO_ENTRY

const char* to_string(ParamType type) {
  switch (type) {
    case ParamType::Int: return "int";
    case ParamType::Bool: return "bool";
    case ParamType::String: return "string";
    case ParamType::Mask: return "mask";
  }
  return "?";
}

namespace {

ParamType type_of(const ParamValue& v) {
  switch (v.index()) {
    case 0: return ParamType::Bool;
    case 1: return ParamType::Int;
    case 2: return ParamType::String;
    default: return ParamType::Mask;
  }
}

// What a value of each type is called in an error: "a bool", "an int", ...
std::string a(ParamType type) { return type == ParamType::Int ? "an int" : std::string("a ") + to_string(type); }

Error bad(const std::string& module, const std::string& message) {
  return Error(ErrorKind::Semantic, "zoo module '" + module + "': " + message);
}

// A registration's own mistakes (a default of another type, a repeated parameter) are
// refused when the registry is first read, naming the module, so no call runs on them.
void check_spec(const ModuleSpec& spec) {
  if (!spec.generate) throw bad(spec.name, "registered without a generator");
  for (size_t i = 0; i < spec.params.size(); ++i) {
    const ParamSpec& p = spec.params[i];
    for (size_t j = 0; j < i; ++j)
      if (spec.params[j].name == p.name) throw bad(spec.name, "parameter '" + p.name + "' declared twice");
    if (p.default_value && type_of(*p.default_value) != p.type)
      throw bad(spec.name, "the default of parameter '" + p.name + "' is not " + a(p.type));
  }
}

std::vector<ModuleSpec> registered() {
  std::vector<ModuleSpec> all;
#define LRNN_ZOO_ENTRY(NAME)                  \
  all.push_back(registered_module_##NAME()); \
  all.back().name = #NAME;
#include "zoo/modules.inc"
#undef LRNN_ZOO_ENTRY
  std::sort(all.begin(), all.end(), [](const ModuleSpec& x, const ModuleSpec& y) { return x.name < y.name; });
  for (const ModuleSpec& spec : all) check_spec(spec);
  return all;
}

// The value of one parameter, checked against its declaration.
ParamValue checked(const std::string& module, const ParamSpec& p, const ParamValue& v) {
  if (type_of(v) != p.type)
    throw bad(module, "parameter '" + p.name + "' is " + a(p.type) + ", got " + a(type_of(v)));
  if (p.type == ParamType::Int) {
    const int64_t x = std::get<int64_t>(v);
    if (x < p.min || x > INT_MAX)
      throw bad(module, "parameter '" + p.name + "' must be in [" + std::to_string(p.min) + ", " +
                            std::to_string(INT_MAX) + "], got " + std::to_string(x));
  }
  if (p.type == ParamType::Mask) {
    try {
      ModuleParams({}, {{p.name, v}}).mask(p.name);
    } catch (const Error& e) {
      throw bad(module, "parameter '" + p.name + "' is not a mask: " + e.what());
    }
  }
  return v;
}

}  // namespace

const std::vector<ModuleSpec>& modules() {
  static const std::vector<ModuleSpec> all = registered();
  return all;
}

const ModuleSpec& module_spec(const std::string& name) {
  std::vector<std::string> names;
  for (const ModuleSpec& spec : modules()) {
    if (spec.name == name) return spec;
    names.push_back(spec.name);
  }
  const std::string near = closest_name(name, names);
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  throw Error(ErrorKind::Semantic, "unknown zoo module '" + name + "'" +
                                       (near.empty() ? "" : " (did you mean '" + near + "'?)") + "; the modules: " + list);
}

Module module_rules(const std::string& name, const std::map<std::string, ParamValue>& params) {
  const ModuleSpec& spec = module_spec(name);
  std::vector<std::string> declared;
  for (const ParamSpec& p : spec.params) declared.push_back(p.name);
  for (const auto& [given, value] : params)
    if (std::find(declared.begin(), declared.end(), given) == declared.end()) {
      const std::string near = closest_name(given, declared);
      std::string list;
      for (const std::string& n : declared) list += (list.empty() ? "" : ", ") + n;
      throw bad(name, "unknown parameter '" + given + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                          "; its parameters: " + list);
    }
  std::map<std::string, ParamValue> values;
  for (const ParamSpec& p : spec.params) {
    auto it = params.find(p.name);
    if (it != params.end()) {
      values[p.name] = checked(name, p, it->second);
    } else if (p.default_value) {
      values[p.name] = *p.default_value;
    } else {
      throw bad(name, "parameter '" + p.name + "' (" + p.doc + ") is required");
    }
  }
  return spec.generate(ModuleParams(name, std::move(values)));
}

// ---- ModuleParams -------------------------------------------------------------------------
ModuleParams::ModuleParams(std::string module, std::map<std::string, ParamValue> values)
    : module_(std::move(module)), values_(std::move(values)) {}

const ParamValue& ModuleParams::value(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw bad(module_, "reads parameter '" + name + "', which it does not declare");
  return it->second;
}

int ModuleParams::integer(const std::string& name) const {
  const auto* v = std::get_if<int64_t>(&value(name));
  if (!v) throw bad(module_, "reads parameter '" + name + "' as an int");
  return static_cast<int>(*v);  // in int's range: checked by module_rules
}

bool ModuleParams::flag(const std::string& name) const {
  const auto* v = std::get_if<bool>(&value(name));
  if (!v) throw bad(module_, "reads parameter '" + name + "' as a bool");
  return *v;
}

const std::string& ModuleParams::text(const std::string& name) const {
  const auto* v = std::get_if<std::string>(&value(name));
  if (!v) throw bad(module_, "reads parameter '" + name + "' as a string");
  return *v;
}

Mask ModuleParams::mask(const std::string& name) const {
  const auto* v = std::get_if<std::vector<std::string>>(&value(name));
  if (!v) throw bad(module_, "reads parameter '" + name + "' as a mask");
  // The literals joined and parsed back, as the Python binding always built masks: the
  // generated text is then the same whichever way a module is reached.
  if (v->empty()) return Mask::none();
  std::string body;
  for (const std::string& l : *v) body += (body.empty() ? "" : ", ") + l;
  return Mask::custom(body);
}

}  // namespace lrnn::zoo
