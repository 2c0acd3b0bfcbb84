// The canonical text form. Everything printed here parses back to an equal AST
// (spans aside): numbers use the shortest round-trip decimal form, constants that are
// not plain identifiers are quoted, the offset goes last in the body.
#include <charconv>

#include "lrnn/syntax.hpp"
#include "syntax/number_text.hpp"

namespace lrnn {

namespace {

void append_number(std::string& out, double v) { out += shortest_number(v); }

bool is_plain_constant(const std::string& s) {
  if (s.empty() || !(s[0] >= 'a' && s[0] <= 'z')) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  return true;
}

void append_quoted(std::string& out, const std::string& s) {
  out += '\'';
  for (char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\'': out += "\\'"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: out += c;
    }
  }
  out += '\'';
}

void append_base_value(std::string& out, const ValueSpec& v) {
  switch (v.kind) {
    case ValueSpec::Kind::Scalar: append_number(out, v.data.empty() ? 0.0 : v.data[0]); break;
    case ValueSpec::Kind::Vector:
      out += '[';
      if (v.sparse) {
        out += std::to_string(v.data.size());
        out += '|';
        bool first = true;
        for (size_t i = 0; i < v.data.size(); ++i) {
          if (v.data[i] == 0.0) continue;
          if (!first) out += ", ";
          first = false;
          out += std::to_string(i);
          out += ':';
          append_number(out, v.data[i]);
        }
      } else {
        for (size_t i = 0; i < v.data.size(); ++i) {
          if (i) out += ", ";
          append_number(out, v.data[i]);
        }
      }
      out += ']';
      break;
    case ValueSpec::Kind::Matrix:
      out += '[';
      for (int r = 0; r < v.rows; ++r) {
        if (r) out += ", ";
        out += '[';
        for (int c = 0; c < v.cols; ++c) {
          if (c) out += ", ";
          size_t i = static_cast<size_t>(r) * static_cast<size_t>(v.cols) + static_cast<size_t>(c);
          append_number(out, i < v.data.size() ? v.data[i] : 0.0);
        }
        out += ']';
      }
      out += ']';
      break;
    case ValueSpec::Kind::Dims:
      out += '{';
      out += std::to_string(v.rows);
      if (!v.dims_is_vector || v.cols != 1) {
        out += ", ";
        out += std::to_string(v.cols);
      }
      out += '}';
      break;
    case ValueSpec::Kind::Reference: break;
  }
}

void append_value(std::string& out, const ValueSpec& v) {
  if (v.kind == ValueSpec::Kind::Reference) {
    if (v.fixed) out += '<';
    out += '$';
    out += v.name;
    if (v.fixed) out += '>';
    return;
  }
  if (!v.name.empty()) {
    out += '$';
    out += v.name;
    out += '=';
  }
  if (v.fixed) out += '<';
  append_base_value(out, v);
  if (v.fixed) out += '>';
}

void append_term(std::string& out, const Term& t) {
  if (!t.type.empty()) {
    out += t.type;
    out += ':';
  }
  switch (t.kind) {
    case Term::Kind::Variable:
    case Term::Kind::Number: out += t.text; break;
    case Term::Kind::Constant:
      if (is_plain_constant(t.text)) out += t.text;
      else append_quoted(out, t.text);
      break;
    case Term::Kind::String: append_quoted(out, t.text); break;
  }
}

void append_literal(std::string& out, const Literal& l) {
  if (l.weight) {
    append_value(out, *l.weight);
    out += ' ';
  }
  if (l.negated) out += '!';
  if (l.soft_negated) out += '~';
  if (l.builtin) out += '@';
  if (l.hidden) out += '*';
  out += l.predicate;
  if (!l.args.empty()) {
    out += '(';
    for (size_t i = 0; i < l.args.size(); ++i) {
      if (i) out += ", ";
      append_term(out, l.args[i]);
    }
    out += ')';
  }
  if (l.transposed) out += "^T";
}

void append_function(std::string& out, const FunctionSpec& f) {
  out += f.name;
  if (!f.has_parens) return;
  out += '(';
  bool first = true;
  for (const auto& a : f.args) {
    if (!first) out += ", ";
    first = false;
    out += a;
  }
  for (const auto& [k, v] : f.kwargs) {
    if (!first) out += ", ";
    first = false;
    out += k;
    out += '=';
    out += v;
  }
  out += ')';
}

void append_meta(std::string& out, const std::vector<MetaEntry>& meta) {
  out += '[';
  for (size_t i = 0; i < meta.size(); ++i) {
    if (i) out += ", ";
    out += meta[i].key;
    out += '=';
    append_function(out, meta[i].value);
  }
  out += ']';
}

void append_literals(std::string& out, const std::vector<Literal>& lits) {
  for (size_t i = 0; i < lits.size(); ++i) {
    if (i) out += ", ";
    append_literal(out, lits[i]);
  }
}

void append_rule(std::string& out, const Rule& r) {
  append_literal(out, r.head);
  if (!r.body.empty() || r.offset) {
    out += " :- ";
    append_literals(out, r.body);
    if (r.offset) {
      if (!r.body.empty()) out += ", ";
      append_value(out, *r.offset);
    }
  }
  out += '.';
  if (!r.meta.empty()) {
    out += ' ';
    append_meta(out, r.meta);
  }
}

}  // namespace

std::string print_value(const ValueSpec& v) {
  std::string out;
  append_value(out, v);
  return out;
}

std::string print_term(const Term& t) {
  std::string out;
  append_term(out, t);
  return out;
}

std::string print_literal(const Literal& l) {
  std::string out;
  append_literal(out, l);
  return out;
}

std::string print_meta(const std::vector<MetaEntry>& meta) {
  std::string out;
  append_meta(out, meta);
  return out;
}

std::string print_rule(const Rule& r) {
  std::string out;
  append_rule(out, r);
  return out;
}

std::string print_template(const TemplateAst& t) {
  std::string out;
  for (const auto& d : t.predicates) {
    out += d.name;
    out += '/';
    out += std::to_string(d.arity);
    if (d.offset) {
      out += ' ';
      append_value(out, *d.offset);
    }
    if (!d.meta.empty()) {
      out += ' ';
      append_meta(out, d.meta);
    }
    if (!d.offset && d.meta.empty()) out += '.';  // a bare arity declaration
    out += '\n';
  }
  if (!t.predicates.empty() && (!t.facts.empty() || !t.rules.empty())) out += '\n';
  for (const auto& f : t.facts) {
    append_literal(out, f);
    out += ".\n";
  }
  if (!t.facts.empty() && !t.rules.empty()) out += '\n';
  for (const auto& r : t.rules) {
    append_rule(out, r);
    out += '\n';
  }
  return out;
}

std::string print_example(const ExampleAst& e) {
  std::string out;
  if (!e.id.empty()) {
    out += e.id;
    out += " :- ";
  } else if (!e.queries.empty()) {
    append_literal(out, e.queries.front());
    out += " :- ";
  }
  append_literals(out, e.facts);
  out += '.';
  return out;
}

std::string print_query_line(const QueryLineAst& q) {
  std::string out;
  if (!q.id.empty()) {
    if (q.importance != 1.0) {
      append_number(out, q.importance);
      out += ' ';
    }
    out += q.id;
    out += " :- ";
  }
  append_literals(out, q.queries);
  out += '.';
  return out;
}

}  // namespace lrnn
