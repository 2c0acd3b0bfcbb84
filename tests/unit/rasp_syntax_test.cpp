// The `.rasp` text syntax: expressions, functions, lambdas, annotations and errors.
#include <gtest/gtest.h>
#include <malloc.h>
#include <pthread.h>

#include "lrnn/rasp.hpp"
#include "rasp_test_support.hpp"

namespace {

using namespace lrnn::rasp;

using rasp_test::error_of;

std::string joined(const std::vector<Value>& xs) {
  std::string s;
  for (const auto& x : xs) s += to_string(x) + " ";
  return s;
}

TEST(RaspSyntax, PrecedenceFollowsTheOriginalGrammar) {
  // * before +, % after * /, comparisons after arithmetic, and/or after comparisons,
  // the conditional last.
  Program p = parse_rasp("x = indices + 2 * 3 % 4 == 2 and indices > 1;\n"
                         "y = 1 if indices == 0 else 2 ^ 3;\n"
                         "z = -indices + 1;\n");
  EXPECT_EQ(joined(run(p.with_output("x"), chars("abcd"))), "False False False False ");
  EXPECT_EQ(joined(run(p.with_output("y"), chars("abc"))), "1 8 8 ");
  EXPECT_EQ(joined(run(p.with_output("z"), chars("abc"))), "1 0 -1 ");
  // `not` binds tighter than comparisons, as in the original grammar.
  Program q = parse_rasp("w = not indices == False;");
  EXPECT_EQ(joined(run(q, chars("ab"))), "False True ");
}

TEST(RaspSyntax, ListsComprehensionsInAndLambdas) {
  Program p = parse_rasp(
      "pairs = [\"ab\", \"cd\"];\n"
      "firsts = [q[0] for q in pairs];  # a comment\n"
      "is_first = tokens in firsts;\n"
      "plus = map(lambda x: x + 1, indices);\n"
      "prod = zipmap(lambda a, b: a * b, indices, plus);\n"
      "n = len(pairs) + range(3)[2];\n"
      "shifted = map(lambda x: x + n, indices);\n");
  EXPECT_EQ(joined(run(p.with_output("is_first"), chars("abcd"))), "True False True False ");
  EXPECT_EQ(joined(run(p.with_output("plus"), chars("abc"))), "1 2 3 ");
  EXPECT_EQ(joined(run(p.with_output("prod"), chars("abc"))), "0 2 6 ");
  EXPECT_EQ(joined(run(p.with_output("shifted"), chars("ab"))), "4 5 ");
  EXPECT_EQ(p.get("plus").node()->label, "lambda x: x + 1");
}

TEST(RaspSyntax, FunctionsAnnotationsAndDefaults) {
  Program p = parse_rasp(
      "def shift_right(seq, n, filler) {\n"
      "  s = select(indices, indices - n, ==);\n"
      "  return aggregate(s, seq, filler);\n"
      "}\n"
      "categorical shifted = shift_right(tokens, 1, \"_\");\n"
      "numerical frac = aggregate(select(indices, indices, <=), indicator(tokens == \"a\"));\n"
      "ints = tokens_int + 1;\n");
  EXPECT_EQ(joined(run(p.with_output("shifted"), chars("abc"))), "_ a b ");
  EXPECT_EQ(p.get("shifted").node()->encoding, Encoding::Categorical);
  EXPECT_EQ(p.get("frac").node()->encoding, Encoding::Numerical);
  // mean aggregation: the fraction of a's so far
  EXPECT_EQ(joined(run(p.with_output("frac"), chars("abab"))), "1 0.5 0.6666666667 0.5 ");
  EXPECT_EQ(joined(run(p.with_output("ints"), chars("123"))), "2 3 4 ");
}

TEST(RaspSyntax, ParseErrorHasFileLineColumnAndCaret) {
  std::string msg = error_of([] { parse_rasp("a = tokens;\nb = select(tokens, tokens, ==;\n", "bad.rasp"); });
  EXPECT_EQ(msg, "bad.rasp:2:30: error: expected ')' to close select(...), found ';'\n"
                 "b = select(tokens, tokens, ==;\n"
                 "                             ^");
  msg = error_of([] { parse_rasp("x = tokens +;", "e.rasp"); });
  EXPECT_NE(msg.find("e.rasp:1:13: error: expected an expression, found ';'"), std::string::npos) << msg;
  msg = error_of([] { parse_rasp("x = \"abc;", "e.rasp"); });
  EXPECT_NE(msg.find("unterminated string"), std::string::npos) << msg;
  msg = error_of([] { parse_rasp("def f(a) { x = a; }", "e.rasp"); });
  EXPECT_NE(msg.find("expected 'return'"), std::string::npos) << msg;
  msg = error_of([] { parse_rasp("x = tokens $ 2;", "e.rasp"); });
  EXPECT_NE(msg.find("e.rasp:1:12: error: unexpected character '$'"), std::string::npos) << msg;
}

TEST(RaspSyntax, SemanticErrorsPointAtTheSource) {
  std::string msg = error_of([] { parse_rasp("s = select(tokens, tokens, ==);\nx = s == tokens;\n", "t.rasp"); });
  EXPECT_NE(msg.find("t.rasp:2:7: error: cannot compare a selector with an s-op"), std::string::npos) << msg;
  msg = error_of([] { parse_rasp("x = aggregate(tokens, tokens);", "t.rasp"); });
  EXPECT_NE(msg.find("must be a selector"), std::string::npos) << msg;
  msg = error_of([] { parse_rasp("x = undefined_thing + 1;", "t.rasp"); });
  EXPECT_NE(msg.find("t.rasp:1:5: error: undefined variable 'undefined_thing'"), std::string::npos) << msg;
  msg = error_of([] { parse_rasp("def f(a) { return f(a); }\nx = f(tokens);", "t.rasp"); });
  EXPECT_NE(msg.find("nested more than 200 deep"), std::string::npos) << msg;
  msg = error_of([] { parse_rasp("load \"does_not_exist.rasp\";", "t.rasp"); });
  EXPECT_NE(msg.find("cannot read"), std::string::npos) << msg;
  // A name the OS refuses (longer than NAME_MAX; fuzz_rasp found it): the same error, not a
  // std::filesystem exception.
  msg = error_of([] { parse_rasp("load \"" + std::string(5000, 'b') + ".rasp\";", "t.rasp"); });
  EXPECT_NE(msg.find("t.rasp:1:1"), std::string::npos) << msg.substr(0, 200);
  EXPECT_NE(msg.find("cannot read"), std::string::npos) << msg.substr(0, 200);
  msg = error_of([] { parse_rasp("s = select(tokens, tokens, ==);", "t.rasp"); });
  EXPECT_NE(msg.find("assigns no s-op"), std::string::npos) << msg;
  // Issue 32: a directory opened as an empty stream and loaded as an empty program.
  msg = error_of([] { parse_rasp("load \"/tmp\";\nx = tokens;", "t.rasp"); });
  EXPECT_NE(msg.find("t.rasp:1:1: error: cannot read /tmp: it is a directory"), std::string::npos) << msg;
  // Issue 32: a device that never ends (/dev/zero) was read until memory ran out.
  msg = error_of([] { parse_rasp("load \"/dev/zero\";\nx = tokens;", "t.rasp"); });
  EXPECT_NE(msg.find("t.rasp:1:1: error: /dev/zero is larger than 16 MiB"), std::string::npos) << msg;
}

TEST(RaspSyntax, AggregatingSeveralStringsFailsWithThePosition) {
  Program p = parse_rasp("prefix = select(indices, indices, <=);\nsmear = aggregate(prefix, tokens);\n", "s.rasp");
  std::string msg = error_of([&] { run(p, chars("xy")); });
  EXPECT_NE(msg.find("s.rasp:2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot aggregate 2 selected values that are not all numbers (\"x\", \"y\") at position 1"),
            std::string::npos)
      << msg;
  // One selected string passes through; the mean of numbers is a float.
  Program ok = parse_rasp("first = aggregate(select(indices, 0, ==), tokens);");
  EXPECT_EQ(joined(run(ok, chars("xy"))), "x x ");
}

}  // namespace

namespace {

std::string repeated(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST(RaspSyntax, ProgramsWithFunctionsFreeTheirEnvironments) {
  // A def is stored in the environment it closes over, and an s-op that maps a function holds
  // the function: once both are gone, nothing of the program may stay allocated (each load
  // kept ~30 KB alive before). The sanitizer build's leak checker sees the same.
  const std::string text =
      "def add_one(x) { return x + 1; }\n"
      "def twice(x) { return add_one(add_one(x)); }\n"
      "def later(x) { return helper(x) * 2; }\n"
      "def helper(x) { return x - 1; }\n"
      "base = 10;\n"
      "f = lambda x: twice(x) + base;\n"
      "xs = [tokens_int, indices];\n"
      "y = map(f, tokens_int);\n"
      "z = zipmap(lambda a, b: later(a) + b, y, indices);\n";
  auto run_once = [&] {
    Program p = parse_rasp(text, "functions.rasp");
    return joined(run(p, {int64_t{1}, int64_t{2}}));
  };
  // functions called after their program was finished still see what they closed over
  EXPECT_EQ(run_once(), "24 27 ");
  const size_t before = mallinfo2().uordblks;
  for (int i = 0; i < 300; ++i) run_once();
  const size_t after = mallinfo2().uordblks;
  EXPECT_LT(after, before + 256 * 1024) << "300 programs left " << (after - before) << " bytes allocated";
}

TEST(RaspSyntax, AFunctionRunOnValuesNamesTheSOpItCannotUse) {
  std::string msg = error_of([&] {
    Program p = parse_rasp("s = tokens + 1;\ndef g(x) { return x + s; }\ny = map(g, tokens);\n", "g.rasp");
    run(p, {int64_t{1}});
  });
  EXPECT_NE(msg.find("'s' is an s-op; a function applied element by element (map, zipmap) runs on plain values"),
            std::string::npos)
      << msg;
}

TEST(RaspSyntax, DeepNestingIsAnErrorNotAStackOverflow) {
  using lrnn::rasp::parse_rasp;
  using rasp_test::error_of;
  // Inputs a recursive parser or evaluator would overflow the stack on: each is a limit
  // error at the place it is exceeded.
  const int n = 100000;
  std::string msg = error_of([&] { parse_rasp("x = " + repeated("(", n) + "tokens" + repeated(")", n) + ";", "p.rasp"); });
  EXPECT_NE(msg.find("p.rasp:1:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nested too deeply"), std::string::npos) << msg;
  msg = error_of([&] { parse_rasp("x = " + repeated("-", n) + "indices;"); });
  EXPECT_NE(msg.find("nested too deeply"), std::string::npos) << msg;
  msg = error_of([&] { parse_rasp("x = " + repeated("1 if indices == 0 else ", n) + "2;"); });
  EXPECT_NE(msg.find("nested too deeply"), std::string::npos) << msg;
  msg = error_of([&] { parse_rasp(repeated("def f() { ", n) + "return 1;" + repeated("}", n)); });
  EXPECT_NE(msg.find("nested too deeply"), std::string::npos) << msg;
  // long operator chains are built by loops, but evaluated and released recursively
  msg = error_of([&] { parse_rasp("x = tokens" + repeated(" + 1", n) + ";"); });
  EXPECT_NE(msg.find("more than 1000 operations deep"), std::string::npos) << msg;
  msg = error_of([&] { parse_rasp("x = indices" + repeated("[0]", n) + ";"); });
  EXPECT_NE(msg.find("more than 1000 operations deep"), std::string::npos) << msg;
  // recursion through long (legal) expressions: bounded by the evaluation depth
  msg = error_of([&] {
    parse_rasp("def f(n) { return 0 if n == 0 else f(n - 1) + n" + repeated(" + 0", 500) + "; }\nx = tokens_int + f(150);");
  });
  EXPECT_NE(msg.find("evaluation nested more than 2000 levels deep"), std::string::npos) << msg;
  // programs well inside the limits are unaffected
  auto p = parse_rasp("x = " + repeated("(", 150) + "tokens_int + 1" + repeated(")", 150) + ";\ny = x" +
                      repeated(" + 1", 900) + ";");
  EXPECT_EQ(std::get<int64_t>(lrnn::rasp::run(p, {lrnn::rasp::Value(int64_t{1})})[0]), 902);
}

// The depth limits above hold whatever the caller's stack: a Python thread has 1 MB.
TEST(RaspSyntax, DeepInputsAreLimitErrorsOnASmallCallerStack) {
  struct Result {
    std::string message;
  } result;
  auto body = [](void* arg) -> void* {
    auto& r = *static_cast<Result*>(arg);
    r.message = rasp_test::error_of([] {
      lrnn::rasp::parse_rasp("def f(n) { return 0 if n == 0 else f(n - 1) + n" + repeated(" + 0", 500) +
                             "; }\nx = tokens_int + f(150);");
    });
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t(1) << 20);
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, &attr, body, &result), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  EXPECT_NE(result.message.find("evaluation nested more than 2000 levels deep"), std::string::npos) << result.message;
}

namespace {

// Issue 32: a string doubled 25-33 times ended in bad_alloc and SIGILL/SIGSEGV. Strings made
// by '+' are limited (docs/semantics.md "Limits"), at run time and while reading.
using namespace lrnn::rasp;
using rasp_test::error_of;

TEST(RaspSyntax, DoublingAStringStopsAtTheLimitWithAnError) {
  std::string doubled = "s0 = tokens;\n", constant = "c0 = \"ab\";\n";
  for (int i = 1; i <= 33; ++i) {
    doubled += "s" + std::to_string(i) + " = s" + std::to_string(i - 1) + " + s" + std::to_string(i - 1) + ";\n";
    constant += "c" + std::to_string(i) + " = c" + std::to_string(i - 1) + " + c" + std::to_string(i - 1) + ";\n";
  }
  std::string msg = error_of([&] { run(parse_rasp(doubled, "d.rasp"), chars("ab")); });
  EXPECT_NE(msg.find("'+' would make a string of 2097152 bytes; RASP strings are limited to 1048576 bytes"),
            std::string::npos) << msg;
  msg = error_of([&] { parse_rasp(constant + "x = tokens;\n", "c.rasp"); });
  EXPECT_NE(msg.find("c.rasp:21:"), std::string::npos) << msg;  // c20 = c19 + c19: 2^21 bytes
  EXPECT_NE(msg.find("RASP strings are limited to 1048576 bytes"), std::string::npos) << msg;
  // below the limit a string is built as before
  const Program p = parse_rasp("s0 = tokens;\ns1 = s0 + s0;\ns2 = s1 + s1;\n", "ok.rasp");
  EXPECT_EQ(run(p, chars("ab")), (std::vector<Value>{Value(std::string("aaaa")), Value(std::string("bbbb"))}));
}

}  // namespace

namespace {

// Issue 32: recursion at run time (a def called by map's lambda when the program runs)
// overflowed a 256 KB stack at depth ~120, below the 200-call limit (exit 139). The depth is
// bounded by the stack the thread actually has.
TEST(RaspSyntax, RunTimeRecursionIsALimitErrorOnA256KStack) {
  struct Result {
    std::string message;
    std::string shallow;
  } result;
  auto body = [](void* arg) -> void* {
    auto& r = *static_cast<Result*>(arg);
    const std::string f = "def f(n) { return n if n == 0 else f(n - 1); }\n";
    r.message = rasp_test::error_of([&] {
      lrnn::rasp::run(lrnn::rasp::parse_rasp(f + "x = map(lambda v: f(150), indices);", "deep.rasp"),
                      lrnn::rasp::chars("ab"));
    });
    // a shallow recursion still runs on the same small stack
    const auto out = lrnn::rasp::run(lrnn::rasp::parse_rasp(f + "x = map(lambda v: f(20) + v, indices);"),
                                     lrnn::rasp::chars("ab"));
    r.shallow = lrnn::rasp::to_string(out[1]);
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t(256) << 10);
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, &attr, body, &result), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  EXPECT_NE(result.message.find("deep.rasp:"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("this thread's stack"), std::string::npos) << result.message;
  EXPECT_EQ(result.shallow, "1");
}

}  // namespace
