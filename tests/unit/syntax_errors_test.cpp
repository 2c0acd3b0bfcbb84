// Malformed inputs (tests/errors/) give `file:line:col: error: ...` plus the source line
// and a caret, from the library and from `lrnn check` (exit code 2, no crash).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "lrnn/syntax.hpp"
#include "shared_datasets.hpp"

namespace {

const std::string kErrors = std::string(LRNN_SOURCE_DIR) + "/tests/errors";

enum class Mode { Template, Examples, Queries };

struct ErrorCase {
  const char* file;
  Mode mode;
  const char* first_line;  // `{dir}` stands for kErrors
};

// One entry per malformed file under tests/errors/.
const ErrorCase kCases[] = {
    {"unclosed_bracket.lrnn", Mode::Template,
     "{dir}/unclosed_bracket.lrnn:1:15: error: expected ',' or ']' closing the vector, found 'p'"},
    {"bad_weight.lrnn", Mode::Template, "{dir}/bad_weight.lrnn:2:9: error: malformed number '0.5x'"},
    {"double_decimal_point.lrnn", Mode::Template,
     "{dir}/double_decimal_point.lrnn:2:6: error: malformed number '0.5.5'"},
    {"bad_dims.lrnn", Mode::Template,
     "{dir}/bad_dims.lrnn:1:10: error: expected a dimension (a positive integer), found number '0'"},
    {"missing_period.lrnn", Mode::Template,
     "{dir}/missing_period.lrnn:1:13: error: expected ',' or '.' after the rule body, found 'q'"},
    {"unknown_builtin.lrnn", Mode::Template,
     "{dir}/unknown_builtin.lrnn:1:15: error: unknown builtin '@foo' (known: eq, neq, lt, leq, gt, geq, next, "
     "alldiff, in, true, false, add, sub, mul, div, mod, add_eval, sub_eval, mul_eval, div_eval, mod_eval, "
     "max_eval, min_eval)"},
    {"builtin_arity.lrnn", Mode::Template,
     "{dir}/builtin_arity.lrnn:1:15: error: wrong arity: builtin '@leq' takes 2 arguments, found 1"},
    {"non_utf8.lrnn", Mode::Template, "{dir}/non_utf8.lrnn:1:12: error: invalid UTF-8: byte 0xE9 at byte offset 11"},
    {"empty.lrnn", Mode::Template,
     "{dir}/empty.lrnn:1:1: error: empty file: expected a template (rules, facts or predicate declarations)"},
    {"empty.txt", Mode::Examples,
     "{dir}/empty.txt:1:1: error: empty file: expected examples (facts separated by ',' and ending with '.')"},
    {"empty.txt", Mode::Queries, "{dir}/empty.txt:1:1: error: empty file: expected queries (e.g. '1.0 predict.')"},
    {"unterminated_string.lrnn", Mode::Template,
     "{dir}/unterminated_string.lrnn:1:8: error: unterminated string: expected closing ', found end of line"},
    {"unterminated_comment.lrnn", Mode::Template,
     "{dir}/unterminated_comment.lrnn:2:1: error: unterminated block comment: expected '*/', found end of file"},
    {"bad_metadata.lrnn", Mode::Template,
     "{dir}/bad_metadata.lrnn:1:41: error: expected '=' after the metadata key 'aggregation', found ']'"},
    {"missing_import.lrnn", Mode::Template,
     "{dir}/missing_import.lrnn:2:1: error: cannot read imported file '{dir}/does_not_exist.lrnn'"},
    {"import_cycle.lrnn", Mode::Template,
     "{dir}/import_cycle_b.lrnn:2:1: error: import cycle: '{dir}/import_cycle.lrnn' imports itself "
     "({dir}/import_cycle.lrnn -> {dir}/import_cycle_b.lrnn -> {dir}/import_cycle.lrnn)"},
    {"stray_token.lrnn", Mode::Template,
     "{dir}/stray_token.lrnn:1:13: error: expected ',' or '.' after the rule body, found ')'"},
    {"unexpected_character.lrnn", Mode::Template,
     "{dir}/unexpected_character.lrnn:1:14: error: unexpected character '&'"},
    {"variable_as_predicate.lrnn", Mode::Template,
     "{dir}/variable_as_predicate.lrnn:1:9: error: expected a predicate name (starting with a lower-case "
     "letter), found variable 'X'"},
    {"two_offsets.lrnn", Mode::Template,
     "{dir}/two_offsets.lrnn:1:14: error: a rule has at most one offset, found a second one"},
    {"ragged_matrix.lrnn", Mode::Template,
     "{dir}/ragged_matrix.lrnn:1:15: error: matrix row 2 has 1 entry, expected 2"},
    {"sparse_index.lrnn", Mode::Template, "{dir}/sparse_index.lrnn:1:9: error: sparse index 5 out of range [0, 3)"},
    {"metadata_after_fact.lrnn", Mode::Template,
     "{dir}/metadata_after_fact.lrnn:1:9: error: metadata lists follow rules, not facts (use 'name/arity "
     "[...]' for a predicate)"},
    {"deep_nesting.lrnn", Mode::Template, "{dir}/deep_nesting.lrnn:1:87: error: metadata nested too deeply"},
    {"examples_missing_period.txt", Mode::Examples,
     "{dir}/examples_missing_period.txt:1:11: error: expected ',' or '.' after a fact of the example, found 'c'"},
    {"examples_builtin_fact.txt", Mode::Examples,
     "{dir}/examples_builtin_fact.txt:1:7: error: expected a fact in the example, found a builtin literal"},
    {"queries_valued_id.txt", Mode::Queries,
     "{dir}/queries_valued_id.txt:2:5: error: expected an example id (a bare name) before ':-'"},
    {"queries_vector_importance.txt", Mode::Queries,
     "{dir}/queries_vector_importance.txt:2:1: error: a query line's importance (before its id) is one number, "
     "e.g. '0.5 id :- 1.0 q.'"},
    {"queries_unclosed_fixed.txt", Mode::Queries,
     "{dir}/queries_unclosed_fixed.txt:1:6: error: expected '>' closing the fixed value, found 'predict'"},
};

std::string expand(std::string s) {
  for (size_t at; (at = s.find("{dir}")) != std::string::npos;) s.replace(at, 5, kErrors);
  return s;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The diagnostic has the position line, the source line and a caret line.
void expect_diagnostic_shape(const std::string& text, const std::string& first_line) {
  auto lines = lines_of(text);
  ASSERT_GE(lines.size(), 3u) << text;
  EXPECT_EQ(lines[0], first_line);
  EXPECT_NE(lines[2].find('^'), std::string::npos) << text;
  EXPECT_EQ(lines[2].find_first_not_of(" \t"), lines[2].find('^')) << "caret line must start with the caret";
}

void load(Mode mode, const std::string& path) {
  switch (mode) {
    case Mode::Template: lrnn::load_template(path); break;
    case Mode::Examples: lrnn::load_examples(path); break;
    case Mode::Queries: lrnn::load_queries(path); break;
  }
}

TEST(SyntaxErrors, EveryMalformedFileGivesItsExactDiagnostic) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.file);
    try {
      load(c.mode, kErrors + "/" + c.file);
      ADD_FAILURE() << "no error for " << c.file;
    } catch (const lrnn::Error& e) {
      EXPECT_EQ(e.kind(), lrnn::ErrorKind::Parse);
      expect_diagnostic_shape(e.what(), expand(c.first_line));
    }
  }
}

TEST(SyntaxErrors, EveryFileUnderTestsErrorsIsCovered) {
  std::set<std::string> covered = {"ok.lrnn", "import_cycle_b.lrnn"};  // valid / the cycle's partner
  for (const auto& c : kCases) covered.insert(c.file);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kErrors)) {
    ++files;
    EXPECT_TRUE(covered.count(entry.path().filename().string())) << entry.path() << " has no expectation";
  }
  EXPECT_GE(files, 12);
}

TEST(SyntaxErrors, UnreadableFileIsAnIoErrorNamingThePath) {
  try {
    lrnn::load_template(kErrors + "/no_such_file.lrnn");
    FAIL();
  } catch (const lrnn::Error& e) {
    EXPECT_EQ(e.kind(), lrnn::ErrorKind::Io);
    EXPECT_EQ(std::string(e.what()), "error: cannot read '" + kErrors + "/no_such_file.lrnn'");
  }
}

// Runs `lrnn check ...`; returns the exit code and fills stderr / stdout.
int run_cli(const std::string& args, std::string& err, std::string& out) {
  auto dir = std::filesystem::temp_directory_path();
  auto err_path = dir / ("lrnn_check_err_" + std::to_string(::getpid()));
  auto out_path = dir / ("lrnn_check_out_" + std::to_string(::getpid()));
  std::string cmd = std::string(LRNN_CLI_PATH) + " check " + args + " >" + out_path.string() + " 2>" + err_path.string();
  int status = std::system(cmd.c_str());
  auto slurp = [](const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  err = slurp(err_path);
  out = slurp(out_path);
  std::filesystem::remove(err_path);
  std::filesystem::remove(out_path);
  if (!WIFEXITED(status)) return -1;  // killed by a signal: a crash
  return WEXITSTATUS(status);
}

std::string shell_quote(const std::string& path) { return "'" + path + "'"; }

TEST(SyntaxErrors, CheckCommandExitsWithCode2AndTheDiagnostic) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.file);
    std::string path = shell_quote(kErrors + "/" + c.file);
    std::string ok = shell_quote(kErrors + "/ok.lrnn");
    std::string args = c.mode == Mode::Template   ? path
                       : c.mode == Mode::Examples ? ok + " --examples " + path
                                                  : ok + " --queries " + path;
    std::string err, out;
    EXPECT_EQ(run_cli(args, err, out), 2) << err;
    expect_diagnostic_shape(err, expand(c.first_line));
    EXPECT_EQ(out, "");
  }
}

TEST(SyntaxErrors, CheckCommandSummarisesValidInput) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  std::string data = std::string(LRNN_DATASETS_DIR) + "/neuralogic/molecules/mutagenesis/";
  std::string err, out;
  int code = run_cli(shell_quote(kErrors + "/ok.lrnn") + " --examples " + shell_quote(data + "examples.txt") + " --queries " +
                         shell_quote(data + "queries.txt"),
                     err, out);
  EXPECT_EQ(code, 0) << err;
  EXPECT_EQ(out, "ok: " + kErrors + "/ok.lrnn: 2 rules, 0 facts, 0 predicate declarations; 188 examples (20622 facts); 188 queries\n");
  EXPECT_EQ(run_cli(shell_quote(kErrors + "/no_such_file.lrnn"), err, out), 1);
  EXPECT_EQ(err, "error: cannot read '" + kErrors + "/no_such_file.lrnn'\n");
}

// A 10 MB single line: parsed in linear time, and an error at its end reports the right
// column with a windowed (short) source line.
TEST(SyntaxErrors, TenMegabyteLine) {
  auto dir = std::filesystem::temp_directory_path() / ("lrnn_syntax_big_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string line;
  line.reserve(10'500'000);
  int facts = 0;
  while (line.size() < 10'000'000) {
    if (facts) line += ", ";
    line += "edge(n" + std::to_string(facts) + ", n" + std::to_string(facts + 1) + ")";
    ++facts;
  }
  {
    std::ofstream(dir / "good.txt") << line << ".\n";
    std::ofstream(dir / "bad.txt") << line;  // no final period
  }
  auto examples = lrnn::load_examples((dir / "good.txt").string());
  ASSERT_EQ(examples.size(), 1u);
  EXPECT_EQ(examples[0].facts.size(), static_cast<size_t>(facts));
  EXPECT_EQ(examples[0].facts.back().args[1].text, "n" + std::to_string(facts));
  EXPECT_EQ(examples[0].facts.back().span.col, line.rfind("edge(") + 1);

  std::string bad = (dir / "bad.txt").string();
  std::string expected = bad + ":1:" + std::to_string(line.size() + 1) +
                         ": error: expected ',' or '.' after a fact of the example, found end of file";
  try {
    lrnn::load_examples(bad);
    ADD_FAILURE() << "no error";
  } catch (const lrnn::Error& e) {
    expect_diagnostic_shape(e.what(), expected);
    EXPECT_LT(std::string(e.what()).size(), expected.size() + 400);
  }
  std::string err, out;
  EXPECT_EQ(run_cli(shell_quote(kErrors + "/ok.lrnn") + " --examples " + shell_quote(bad), err, out), 2);
  expect_diagnostic_shape(err, expected);
  std::filesystem::remove_all(dir);
}

// Errors in text given directly (CLI goals, rules built in code, small strings).
TEST(SyntaxErrors, InlineInputsGiveExactDiagnostics) {
  struct Inline {
    std::function<void()> parse;
    const char* first_line;
  };
  const Inline cases[] = {
      {[] { lrnn::parse_literal("reachable(X, charing_cross) extra"); },
       "<goal>:1:29: error: expected end of input after the literal, found 'extra'"},
      {[] { lrnn::parse_literal("  "); }, "<goal>:1:1: error: empty input: expected a literal"},
      {[] { lrnn::parse_template("@eq(X, Y) :- p(X)."); },
       "<string>:1:1: error: expected a rule head, found a builtin literal"},
      {[] { lrnn::parse_template("!p(a)."); },
       "<string>:1:1: error: expected a fact (a rule head needs ':-'), found a negated literal"},
      {[] { lrnn::parse_template("p/x [a=b]"); }, "<string>:1:3: error: expected an arity after 'p/', found 'x'"},
      {[] { lrnn::parse_template("p/2"); },
       "<string>:1:4: error: expected metadata '[key=value, ...]', an offset value or '.' after 'p/2', found end of "
       "file"},
      {[] { lrnn::parse_template("h :- p(X)^X."); },
       "<string>:1:11: error: expected 'T' after '^' (a transposed literal is 'p(X)^T'), found variable 'X'"},
      {[] { lrnn::parse_queries("id :- ."); }, "<string>:1:7: error: expected a literal, found '.'"},
      {[] { lrnn::parse_template("h :- 1e999 p."); }, "<string>:1:6: error: number out of range: '1e999'"},
      {[] { lrnn::parse_examples("a(1) b(2)."); },
       "<string>:1:6: error: expected ',' or '.' after a fact of the example, found 'b'"},
      {[] { lrnn::parse_template("h :- p. [activation=sigmoid"); },
       "<string>:1:28: error: expected ',' or ']' closing the metadata list, found end of file"},
      {[] { lrnn::parse_template("h(X :- p."); },
       "<string>:1:5: error: expected ',' or ')' after an argument of 'h', found ':-'"},
      {[] { lrnn::parse_template("h :- p, ."); }, "<string>:1:9: error: expected a body literal or an offset, found '.'"},
      {[] { lrnn::parse_rule("h :- p. q."); }, "<string>:1:9: error: expected end of input after the rule, found 'q'"},
      {[] { lrnn::parse_template("h :- [] p."); }, "<string>:1:7: error: expected a number, found ']'"},
      {[] { lrnn::parse_template("h :- {1,2,3} p."); },
       "<string>:1:10: error: expected '}' closing the dimensions (at most two: {rows, cols}), found ','"},
      {[] { lrnn::parse_template("h :- p. [activation=f(a=1, 2)]"); },
       "<string>:1:28: error: expected 'key=value' (positional arguments come first), found number '2'"},
      {[] { lrnn::parse_template("h :- p(\"ab\ncd\")."); },
       "<string>:1:8: error: unterminated string: expected closing \", found end of line"},
      {[] { lrnn::parse_template("h :- p\x01."); }, "<string>:1:7: error: unexpected character '0x01'"},
      {[] { lrnn::parse_template("h :- p.\n\n  q :- r(X) s."); },
       "<string>:3:13: error: expected ',' or '.' after the rule body, found 's'"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.first_line);
    try {
      c.parse();
      ADD_FAILURE() << "no error";
    } catch (const lrnn::Error& e) {
      EXPECT_EQ(e.kind(), lrnn::ErrorKind::Parse);
      expect_diagnostic_shape(e.what(), c.first_line);
    }
  }
}

// The caret lines up under the offending character even after multi-byte UTF-8 text
// (one terminal column per character), and bytes that are not UTF-8 are shown as '?'.
TEST(SyntaxErrors, CaretCountsCharactersNotBytes) {
  try {
    lrnn::parse_template("h :- p('caf\xc3\xa9 \xe2\x82\xac'), q(X) & r.");
    FAIL();
  } catch (const lrnn::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "<string>:1:27: error: unexpected character '&'\n"  // columns count bytes
              "h :- p('caf\xc3\xa9 \xe2\x82\xac'), q(X) & r.\n"
              "                       ^");
  }
  try {
    lrnn::parse_template("h :- p.\nq :- '\xff'.");
    FAIL();
  } catch (const lrnn::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "<string>:2:7: error: invalid UTF-8: byte 0xFF at byte offset 14\n"
              "q :- '?'.\n"
              "      ^");
  }
}

TEST(SyntaxErrors, SelfImportIsACycle) {
  auto dir = std::filesystem::temp_directory_path() / ("lrnn_syntax_self_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "self.lrnn").string();
  std::ofstream(path) << "a.\nimport ./self.lrnn\n";
  try {
    lrnn::load_template(path);
    ADD_FAILURE() << "no error";
  } catch (const lrnn::Error& e) {
    expect_diagnostic_shape(e.what(), path + ":2:1: error: import cycle: '" + path + "' imports itself (" + path +
                                          " -> " + path + ")");
  }
  std::filesystem::remove_all(dir);
}

// Pathologically deep or long constructs fail with a message, never by recursion.
TEST(SyntaxErrors, DeepNestingFailsWithoutRecursing) {
  const size_t depth = 1'000'000;
  auto first_line = [](const std::string& text) {
    try {
      lrnn::parse_template(text, "deep.lrnn");
    } catch (const lrnn::Error& e) {
      return lines_of(e.what()).at(0);
    }
    return std::string("no error");
  };
  EXPECT_EQ(first_line("h :- " + std::string(depth, '[') + "1" + std::string(depth, ']') + " p."),
            "deep.lrnn:1:8: error: expected a number, found '['");
  EXPECT_EQ(first_line("h :- p. [a=f(" + std::string(depth, '(') + "]"),
            "deep.lrnn:1:78: error: metadata nested too deeply");
  EXPECT_EQ(first_line("h :- p(" + std::string(depth, '(') + ")."),
            "deep.lrnn:1:8: error: expected a term (a variable, constant, number or string), found '('");
  std::string typed;
  for (size_t i = 0; i < depth; ++i) typed += "a:";
  EXPECT_EQ(first_line("h :- p(" + typed + "X)."), "deep.lrnn:1:10: error: a term has at most one type");
  EXPECT_EQ(first_line("h :- " + std::string(depth, '!') + "p."), "deep.lrnn:1:7: error: repeated prefix '!'");
  EXPECT_EQ(first_line("h :- " + std::string(depth, '<') + "1" + " p."),
            "deep.lrnn:1:7: error: expected a value (a number, [vector], [[matrix]] or {dims}), found '<'");
}

// Every prefix of a feature-rich template and random byte edits of it either parse or
// throw lrnn::Error: no crash, no other exception type, no hang.
TEST(SyntaxErrors, TruncatedAndMutatedInputsNeverCrash) {
  const std::string text =
      "p/2 [activation=sigmoid]\nq/1 {3, 1}\n$e=<[1, 2]> emb(a).\n"
      "h(X) :- 0.5 p(X, Y), {3, 3} q(Y)^T, !r(X), ~s(woman:Y), @leq(X, 3), *t('s t'), [3|0:1, 2:-1], -1e-3. "
      "[aggregation=softmax(J), activation=slice(rows=(0,2), cols=(1,3))]\n"
      "/* block */ g <= [[1, 2], [3, 4]] h(\"x\"). % done\n";
  int parsed = 0, failed = 0;
  auto attempt = [&](const std::string& s) {
    try {
      lrnn::parse_template(s, "<fuzz>");
      ++parsed;
    } catch (const lrnn::Error& e) {
      EXPECT_EQ(e.kind(), lrnn::ErrorKind::Parse) << s;
      EXPECT_NE(std::string(e.what()).find("error: "), std::string::npos);
      ++failed;
    }
  };
  for (size_t n = 0; n <= text.size(); ++n) attempt(text.substr(0, n));
  std::mt19937 rng(12345);
  const std::string alphabet = "()[]{}<>,.:-=$@*!~^|/%'\" \n\taZ_09\xff\xc3";
  for (int i = 0; i < 3000; ++i) {
    std::string s = text;
    for (int k = 0; k < 3; ++k) s[rng() % s.size()] = alphabet[rng() % alphabet.size()];
    attempt(s);
  }
  EXPECT_GT(failed, 0);
  EXPECT_GT(parsed, 0);
  EXPECT_EQ(parsed + failed, static_cast<int>(text.size()) + 1 + 3000);
}

}  // namespace
