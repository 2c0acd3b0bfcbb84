// Query answering without learning (include/lrnn/logic.hpp): `Template.query` in Python,
// `lrnn query` on the command line.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "lrnn/logic.hpp"
#include "lrnn/syntax.hpp"

namespace lrnn::python {

void bind_logic(nb::module_& m) {
  // (variables, rows of (text, is_number, number), ground) for `goal` against the template
  // text and one line of facts (may be empty).
  m.def(
      "answer_query",
      [](const std::string& template_text, const std::string& facts_text, const std::string& goal_text) {
        using Cell = std::tuple<std::string, bool, double>;
        std::vector<std::vector<Cell>> rows;
        logic::QueryResult result;
        {
          nb::gil_scoped_release release;
          TemplateAst tmpl = parse_template(template_text, "<template>");
          std::vector<ExampleAst> facts;
          if (!facts_text.empty()) facts = parse_examples(facts_text, "<facts>");
          Literal goal = parse_literal(goal_text, "<goal>");
          result = logic::answer_query(tmpl, facts, goal);
        }
        rows.reserve(result.rows.size());
        for (const auto& row : result.rows) {
          std::vector<Cell> cells;
          cells.reserve(row.size());
          for (const auto& v : row) cells.emplace_back(v.text, v.is_number, v.number);
          rows.push_back(std::move(cells));
        }
        return std::make_tuple(result.variables, std::move(rows), result.ground);
      },
      nb::arg("template_text"), nb::arg("facts_text"), nb::arg("goal"));
}

}  // namespace lrnn::python
