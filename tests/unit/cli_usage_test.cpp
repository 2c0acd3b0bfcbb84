// The CLI's usage contract (issue 14): option values out of range are usage errors (exit 2,
// naming the option) rather than being wrapped, clamped or replaced by defaults; every
// usage error exits 2; a TEMPLATE next to --load is refused; a diverged run is not saved.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>
#include <string>

#include "cli_test_support.hpp"
#include "shared_datasets.hpp"

namespace {

using lrnn_test::CliRun;

CliRun lrnn_cli(const std::string& args) { return lrnn_test::run_lrnn(args); }

const std::string kXor = std::string(LRNN_SOURCE_DIR) + "/examples/templates/xor.lrnn";
const std::string kXorData = std::string(LRNN_DATASETS_DIR) + "/neuralogic/simple/xor/naive/trainExamples.txt";

std::string write_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("lrnn_cli_usage_" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(CliUsage, OutOfRangeOptionValuesAreUsageErrors) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  const std::pair<const char*, const char*> cases[] = {
      {"--epochs -5", "--epochs"},         {"--lr -1", "--lr"},
      {"--lr nan", "--lr"},                {"--lr inf", "--lr"},
      {"--test-fraction -0.5", "--test-fraction"}, {"--batch-size -1", "--batch-size"},
      {"--epochs 2.5", "--epochs"},        {"--weight-decay -0.1", "--weight-decay"},
  };
  for (const auto& [args, option] : cases) {
    CliRun r = lrnn_cli("train " + kXor + " -e " + kXorData + " " + args);
    EXPECT_EQ(r.code, 2) << args << ":\n" << r.out;
    EXPECT_NE(r.out.find(option), std::string::npos) << args << ":\n" << r.out;
    EXPECT_EQ(r.out.find("trained"), std::string::npos) << args << " trained anyway:\n" << r.out;
  }
}

TEST(CliUsage, DtypeIsFloat32OrFloat64AndAModelKeepsIt) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  CliRun typo = lrnn_cli("train " + kXor + " -e " + kXorData + " --epochs 1 --dtype flaot32");
  EXPECT_EQ(typo.code, 2) << typo.out;
  EXPECT_NE(typo.out.find("did you mean 'float32'"), std::string::npos) << typo.out;
  const std::string model = (std::filesystem::temp_directory_path() / "lrnn_cli_usage_f32.json").string();
  ASSERT_EQ(lrnn_cli("train " + kXor + " -e " + kXorData + " --epochs 3 --dtype float32 --save " + model).code, 0);
  CliRun saved = lrnn_cli("eval " + model + " -e " + kXorData + " --json");
  EXPECT_NE(saved.out.find("\"dtype\":\"float32\""), std::string::npos) << saved.out;
  CliRun as64 = lrnn_cli("eval " + model + " -e " + kXorData + " --json --dtype float64");
  EXPECT_NE(as64.out.find("\"dtype\":\"float64\""), std::string::npos) << as64.out;
  EXPECT_EQ(lrnn_cli("eval " + model + " -e " + kXorData + " --dtype float16").code, 2);
}

TEST(CliUsage, ZeroLearningRateIsAllowed) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  CliRun r = lrnn_cli("train " + kXor + " -e " + kXorData + " --epochs 2 --lr 0 --optimizer sgd");
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST(CliUsage, EveryUsageErrorExitsTwo) {
  EXPECT_EQ(lrnn_cli("").code, 2);                                   // no subcommand
  EXPECT_EQ(lrnn_cli("train").code, 2);                              // missing --examples
  EXPECT_EQ(lrnn_cli("train --no-such-flag").code, 2);               // unknown flag
  EXPECT_EQ(lrnn_cli("rasp run no_such_file.rasp --input ab").code, 2);  // missing file
  EXPECT_EQ(lrnn_cli("--help").code, 0);
  EXPECT_EQ(lrnn_cli("--version").code, 0);
}

// The command's allocator (docs/big_graphs.md "The command's allocator"): mimalloc where the
// build links it, on 2 MB pages only when the files the arguments name add up to 256 MB
// (a sparse file of that size, named bare or as a dataset spec, costs no disk), giving
// freed memory back only from 16 MB of input, and the environment's MIMALLOC_LARGE_OS_PAGES=0
// and MIMALLOC_ALLOW_DECOMMIT=0 obeyed.
TEST(CliUsage, VersionNamesTheAllocator) {
  const CliRun r = lrnn_cli("--version");
  ASSERT_EQ(r.code, 0) << r.out;
#ifdef LRNN_CLI_MIMALLOC
  EXPECT_NE(r.out.find("allocator: mimalloc 2."), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("large OS pages"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("gives freed memory back"), std::string::npos) << r.out;
  // A sparse file of `bytes` in the temporary directory (no disk used).
  const auto sparse_file = [](const char* name, uint64_t bytes) {
    const auto path = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove(path);
    { std::ofstream(path.string()).put('x'); }
    std::filesystem::resize_file(path, bytes);
    return path;
  };
  const auto big = sparse_file("lrnn_cli_usage_big_input.npz", uint64_t(256) << 20);
  const auto small = sparse_file("lrnn_cli_usage_small_input.npz", (uint64_t(256) << 20) - 1);
  const auto graph = sparse_file("lrnn_cli_usage_graph_input.txt", uint64_t(16) << 20);
  const auto tiny = sparse_file("lrnn_cli_usage_tiny_input.txt", (uint64_t(16) << 20) - 1);
  // `lrnn --version ARGS`' output, with the environment's `name` set to `value` if given.
  const auto version = [](const std::string& args, const char* name = nullptr, const char* value = nullptr) {
    if (name) EXPECT_EQ(setenv(name, value, 1), 0);
    const CliRun run = lrnn_cli("--version " + args);
    if (name) unsetenv(name);
    return run.out;
  };
  const auto has = [](const std::string& out, const char* what) { return out.find(what) != std::string::npos; };
  const std::string graph_run = version("-e " + graph.string()), tiny_run = version("-e " + tiny.string());
  const std::string kept = version("-e " + graph.string(), "MIMALLOC_ALLOW_DECOMMIT", "0");
  const std::string bare = version(big.string()), spec = version("--dataset=npz:" + big.string());
  const std::string below = version("npz:" + small.string());
  const std::string refused = version(big.string(), "MIMALLOC_LARGE_OS_PAGES", "0");
  for (const auto& path : {big, small, graph, tiny}) std::filesystem::remove(path);
  EXPECT_TRUE(has(graph_run, "(gives freed memory back)") && !has(graph_run, "large OS pages")) << graph_run;
  EXPECT_FALSE(has(tiny_run, "gives freed memory back")) << tiny_run;
  EXPECT_FALSE(has(kept, "gives freed memory back")) << kept;
  EXPECT_TRUE(has(bare, "(large OS pages)")) << bare;
  EXPECT_TRUE(has(spec, "(large OS pages)")) << spec;
  EXPECT_FALSE(has(below, "large OS pages")) << below;
  EXPECT_TRUE(has(refused, "allocator: mimalloc 2.") && !has(refused, "large OS pages")) << refused;
#else
  EXPECT_NE(r.out.find("allocator: the C library's malloc"), std::string::npos) << r.out;
#endif
}

TEST(CliUsage, TemplateNextToLoadIsRefused) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  const std::string model = (std::filesystem::temp_directory_path() / "lrnn_cli_usage_model.json").string();
  ASSERT_EQ(lrnn_cli("train " + kXor + " -e " + kXorData + " --epochs 1 --save " + model).code, 0);
  CliRun r = lrnn_cli("train " + kXor + " --load " + model + " -e " + kXorData);
  EXPECT_EQ(r.code, 2) << r.out;  // a usage error (issue 32: it exited 1)
  EXPECT_NE(r.out.find("not both"), std::string::npos) << r.out;
  EXPECT_EQ(lrnn_cli("train --load " + model + " -e " + kXorData + " --epochs 1").code, 0);
}

TEST(CliUsage, ADivergedRunFailsAndIsNotSaved) {
  const std::string tmpl = write_file("div.lrnn", "{1} q :- a.\n");
  const std::string data = write_file("div.txt", "<1> q :- <1000> a.\n");
  const auto model = std::filesystem::temp_directory_path() / "lrnn_cli_usage_div.json";
  std::filesystem::remove(model);
  CliRun r = lrnn_cli("train " + tmpl + " -e " + data + " --optimizer sgd --lr 10 --epochs 40 --save " + model.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("training diverged"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(model));
}

}  // namespace

namespace {

// SIGINT during training stops after the current epoch, says so, saves with --save, and
// exits 130; the saved model loads.
TEST(CliUsage, InterruptedTrainingStopsSavesAndExits130) {
  const std::string data = std::string(LRNN_DATASETS_DIR) + "/neuralogic/molecules/mutagenesis/";
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  const auto dir = std::filesystem::temp_directory_path() / ("lrnn_cli_sigint_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string model = (dir / "model.json").string(), err = (dir / "err.txt").string();
  const std::string train = std::string(LRNN_CLI_PATH) + " train " + LRNN_SOURCE_DIR +
                            "/examples/templates/mutagenesis.lrnn -e " + data + "examples.txt -q " + data +
                            "queries.txt --epochs 1000000 --report-every 1 --save " + model;
  // Wait for the first epoch line, so the signal arrives while training runs.
  const std::string script = train + " > /dev/null 2> " + err + " & pid=$!; for i in $(seq 600); do grep -q epoch " + err +
                             " && break; sleep 0.1; done; kill -INT $pid; wait $pid; echo \"exit $?\"";
  FILE* pipe = popen(("bash -c '" + script + "'").c_str(), "r");
  std::string out;
  char buf[256];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  pclose(pipe);
  EXPECT_NE(out.find("exit 130"), std::string::npos) << out;
  std::ifstream e(err);
  const std::string log((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("interrupted (SIGINT): stopping after epoch"), std::string::npos) << log;
  EXPECT_EQ(lrnn_cli("eval " + model + " -e " + data + "examples.txt -q " + data + "queries.txt").code, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace

namespace {

// `lrnn check` runs what train/eval would (issue 14: it used to say "ok" and train then
// failed): each finding exits 2, and --json reports it with its position.
TEST(CliCheck, FindsWhatTrainingWouldAndExitsTwo) {
  const std::string tmpl = write_file("check.lrnn", "{1} q :- {1} a.\n");
  const std::string two = write_file("check_two.txt", "a.\na.\n");
  const std::pair<std::string, std::string> cases[] = {
      {"check " + write_file("check_meta.lrnn", "{1} q :- {1} a. [activaton=tanh]\n"), "did you mean 'activation'"},
      {"check " + tmpl + " -e " + two + " -q " + write_file("check_q3.txt", "1.0 q.\n1.0 q.\n1.0 q.\n"),
       "2 examples but 3 query lines"},
      {"check " + tmpl + " -e " + two + " -q " + write_file("check_typo.txt", "1.0 qq.\n1.0 q.\n"), "did you mean q/0?"},
      {"check " + write_file("check_shape.lrnn", "q :- {2,2} a.\n") + " -e " + write_file("check_v.txt", "<[1,2,3]> a.\n") +
           " -q " + write_file("check_q1.txt", "1.0 q.\n"),
       "weight shape 2x2 cannot apply to input shape 3x1"},
      {"check " + tmpl + " -e " + write_file("check_var.txt", "a(X).\n") + " -q " + write_file("check_q1b.txt", "1.0 q.\n"),
       "an example fact must be ground"},
  };
  for (const auto& [args, expected] : cases) {
    CliRun r = lrnn_cli(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(expected), std::string::npos) << args << "\n" << r.out;
  }
  CliRun ok = lrnn_cli("check " + tmpl + " -e " + two + " -q " + write_file("check_ok.txt", "1.0 q.\n0.0 q.\n"));
  EXPECT_EQ(ok.code, 0) << ok.out;
}

TEST(CliCheck, JsonNamesKindFileLineAndColumn) {
  const std::string bad = write_file("check_json.lrnn", "{1} q :- {1} a. [colour=blue]\n");
  CliRun r = lrnn_cli("check " + bad + " --json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("\"ok\":false"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"line\":1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"col\":18"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"kind\":\"semantic\""), std::string::npos) << r.out;
  EXPECT_NE(lrnn_cli("check " + write_file("check_good.lrnn", "{1} q :- {1} a.\n") + " --json").out.find("\"ok\":true"),
            std::string::npos);
}

}  // namespace

namespace {

// The step/exponential schedules' step size and decay factor can be set and are saved
// (issue 14: a hidden step size and gamma 0.5).
TEST(CliUsage, ScheduleStepSizeAndGammaAreSettableAndSaved) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  const std::string model = (std::filesystem::temp_directory_path() / "lrnn_cli_schedule.json").string();
  CliRun r = lrnn_cli("train " + kXor + " -e " + kXorData +
                      " --epochs 8 --schedule step --step-size 2 --gamma 0.1 --save " + model);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(model);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"step_size\": 2"), std::string::npos) << text.substr(text.find("schedule"), 200);
  EXPECT_NE(text.find("\"gamma\": 0.1"), std::string::npos);
  EXPECT_EQ(lrnn_cli("train " + kXor + " -e " + kXorData + " --gamma 1.5").code, 2);
  EXPECT_EQ(lrnn_cli("train " + kXor + " -e " + kXorData + " --step-size 0").code, 2);
}

}  // namespace

namespace {

// The one training path: `lrnn train` builds its model from lrnn::Settings, so the
// grounding limit of the settings is an option of train too.
TEST(CliUsage, TrainMaxGroundRulesStopsGroundingWithALimitError) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  CliRun r = lrnn_cli("train " + kXor + " --examples " + kXorData + " --epochs 1 --max-ground-rules 1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("grounding exceeded 1 ground rules"), std::string::npos) << r.out;
  CliRun ok = lrnn_cli("train " + kXor + " --examples " + kXorData + " --epochs 1 --max-ground-rules 1000");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_EQ(lrnn_cli("train " + kXor + " --examples " + kXorData + " --max-ground-rules 0").code, 2);
}

// A loaded model's weights exist: an initializer given with --load would do nothing.
TEST(CliUsage, InitializerWithLoadIsRefused) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  const std::string model = (std::filesystem::temp_directory_path() / "lrnn_cli_usage_init.json").string();
  ASSERT_EQ(lrnn_cli("train " + kXor + " --examples " + kXorData + " --epochs 2 --save " + model).code, 0);
  CliRun r = lrnn_cli("train --load " + model + " --examples " + kXorData + " --epochs 1 --initializer he");
  EXPECT_EQ(r.code, 2) << r.out;  // options that exclude each other: a usage error
  EXPECT_NE(r.out.find("--initializer has no effect with --load"), std::string::npos) << r.out;
  std::filesystem::remove(model);
}

// A misspelled subcommand names the closest one (CLI11 alone says "A subcommand is required").
TEST(CliUsage, MisspelledSubcommandSuggestsTheClosest) {
  CliRun top = lrnn_cli("trian x.lrnn");
  EXPECT_EQ(top.code, 2) << top.out;
  EXPECT_NE(top.out.find("unknown command 'trian'; did you mean 'train'?"), std::string::npos) << top.out;
  CliRun nested = lrnn_cli("rasp rnu x.rasp --input ab");
  EXPECT_EQ(nested.code, 2) << nested.out;
  EXPECT_NE(nested.out.find("lrnn rasp: unknown command 'rnu'; did you mean 'run'?"), std::string::npos) << nested.out;
  CliRun far = lrnn_cli("xyzzyplugh");
  EXPECT_EQ(far.code, 2) << far.out;
  EXPECT_NE(far.out.find("unknown command 'xyzzyplugh'"), std::string::npos) << far.out;
  EXPECT_EQ(far.out.find("did you mean"), std::string::npos) << far.out;
  // A real subcommand's positional is not taken for a command (train's option groups are
  // CLI11 subcommands internally).
  EXPECT_EQ(lrnn_cli("check " + kXor).code, 0);
  CliRun train = lrnn_cli("train " + kXor + " --examples /nonexistent.txt");
  EXPECT_EQ(train.out.find("unknown command"), std::string::npos) << train.out;
}

// eval's data options are the data evaluated, not training data.
TEST(CliUsage, EvalHelpCallsItsDataEvaluationData) {
  CliRun help = lrnn_cli("eval --help");
  EXPECT_EQ(help.code, 0) << help.out;
  EXPECT_NE(help.out.find("Evaluation data"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find("Training data"), std::string::npos) << help.out;
}

}  // namespace

namespace {

// Every subcommand (and RASP's own) whose --help lists numeric options.
const char* const kCommands[] = {"check",     "convert",      "query",       "train",        "eval",        "ground",
                                 "draw",      "rasp run",     "rasp analyze", "rasp lower", "rasp compile", "rasp draw"};

// (option, type) of each INT, UINT or FLOAT option in `lrnn COMMAND --help`.
std::vector<std::pair<std::string, std::string>> numeric_options(const std::string& command) {
  std::vector<std::pair<std::string, std::string>> found;
  std::istringstream help(lrnn_cli(command + " --help").out);
  const std::regex option(R"(^\s+(?:-\w,)?(--[\w-]+) (INT|UINT|FLOAT)\b)");
  std::smatch m;
  for (std::string line; std::getline(help, line);)
    if (std::regex_search(line, m, option)) found.emplace_back(m[1], m[2]);
  return found;
}

// Issue 32: an empty value was read as 0 (`--lr ''` trained with rate 0, `--epochs ''` for 0
// epochs, `--seed ''` was seed 0) and `--seed -1` or 2^64 were wrapped. Every numeric option
// of every command refuses them as a usage error naming the option, before doing anything.
TEST(CliUsage, EveryNumericOptionRefusesEmptyNegativeAndOverflowingValues) {
  size_t checked = 0;
  for (const char* command : kCommands) {
    for (const auto& [name, type] : numeric_options(command)) {
      std::vector<std::string> bad = {"''", "' '", "nan", "1e400"};
      if (type != "FLOAT") bad.insert(bad.end(), {"-1", "18446744073709551616", "2.5", "1e3"});
      for (const std::string& value : bad) {
        CliRun r = lrnn_cli(std::string(command) + " " + name + " " + value);
        EXPECT_EQ(r.code, 2) << command << " " << name << " " << value << ":\n" << r.out;
        EXPECT_NE(r.out.find(name), std::string::npos) << command << " " << name << " " << value << ":\n" << r.out;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 17u);  // train has 12, draw 4, ground 1, rasp lower/compile --max-len (and more)
}

TEST(CliUsage, TheWholeSeedRangeIsAcceptedAndNoMore) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  CliRun max = lrnn_cli("train " + kXor + " -e " + kXorData + " --epochs 1 --json --seed 18446744073709551615");
  EXPECT_EQ(max.code, 0) << max.out;
  EXPECT_NE(max.out.find("\"seed\":18446744073709551615"), std::string::npos) << max.out;
  CliRun over = lrnn_cli("train " + kXor + " -e " + kXorData + " --epochs 1 --seed 18446744073709551616");
  EXPECT_EQ(over.code, 2) << over.out;
  EXPECT_NE(over.out.find("is not an integer in [0, 18446744073709551615]"), std::string::npos) << over.out;
}

// `--save ''` saved nothing and said nothing: every option that takes a value refuses "".
TEST(CliUsage, EmptyTextValuesAreUsageErrors) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  for (const char* option : {"--save", "--load", "--report", "--queries", "--test-examples", "--dataset"}) {
    CliRun r = lrnn_cli("train " + kXor + " -e " + kXorData + " --epochs 1 " + option + " ''");
    EXPECT_EQ(r.code, 2) << option << ":\n" << r.out;
    EXPECT_NE(r.out.find(option), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("an empty value is not allowed"), std::string::npos) << r.out;
  }
  CliRun e = lrnn_cli("train " + kXor + " -e '' --epochs 1");
  EXPECT_EQ(e.code, 2) << e.out;
}

// Issue 32: unknown names and out-of-range values were failed runs (exit 1) where
// docs/cli.md says usage errors exit 2; the library's own message (with its suggestion) stays.
TEST(CliUsage, UnknownNamesAndOptionCombinationsExitTwo) {
  LRNN_SKIP_WITHOUT_SHARED_DATASETS();
  const std::pair<std::string, std::string> cases[] = {
      {"--optimizer foo", "--optimizer"},
      {"--optimizer adamm", "unknown optimizer 'adamm'"},
      {"--loss foo", "--loss"},
      {"--schedule foo", "--schedule"},
      {"--initializer 'uniform(nan)'", "--initializer"},
      {"--test-fraction 1", "--test-fraction"},
      {"--checkpoint-every 1", "give --save PATH too"},
      {"--test-curve", "--test-curve belongs to cross-validation"},
      {"--folds 2 --save x.json", "cannot be combined"},
  };
  for (const auto& [args, expected] : cases) {
    CliRun r = lrnn_cli("train " + kXor + " -e " + kXorData + " --epochs 1 " + args);
    EXPECT_EQ(r.code, 2) << args << ":\n" << r.out;
    EXPECT_NE(r.out.find(expected), std::string::npos) << args << ":\n" << r.out;
    EXPECT_EQ(r.out.find("trained"), std::string::npos) << args << ":\n" << r.out;
  }
  EXPECT_EQ(lrnn_cli("train " + kXor + " -e " + kXorData + " --epochs 1 --test-fraction 0.5").code, 0);
}

// Issue 32: examples without queries were exit 1 from `train` and 2 from `check`: bad input.
TEST(CliUsage, ExamplesWithoutQueriesAreBadInputForTrainAndCheck) {
  const std::string tmpl = write_file("noq.lrnn", "{1} q :- {1} a.\n");
  const std::string data = write_file("noq.txt", "a.\na.\n");
  for (const std::string command : {"train " + tmpl + " -e " + data + " --epochs 1", "check " + tmpl + " -e " + data}) {
    CliRun r = lrnn_cli(command);
    EXPECT_EQ(r.code, 2) << command << ":\n" << r.out;
    EXPECT_NE(r.out.find("noq.txt:1:1: error: example has no query"), std::string::npos) << r.out;
  }
}

// Issue 32: `rasp compile --pairs-out` without --readout compiled, printed, then failed (exit 1).
TEST(CliUsage, RaspCompileOptionsThatNeedEachOtherExitTwoBeforeCompiling) {
  const std::string program = std::string(LRNN_SOURCE_DIR) + "/tests/rasp/reverse.rasp";
  for (const char* args : {"--pairs-out /tmp/lrnn_cli_pairs", "--example-out /tmp/lrnn_cli_example.txt"}) {
    CliRun r = lrnn_cli("rasp compile " + program + " --vocab a,b,c --max-len 5 " + args);
    EXPECT_EQ(r.code, 2) << args << ":\n" << r.out;
    EXPECT_EQ(r.out.find("residual stream"), std::string::npos) << "compiled first:\n" << r.out;
  }
}

// Issue 32 (fuzz_train finding): a declaration `p/N` with N > 64 reached the relation index's
// 64-bit column mask (a shift by 64, undefined); it is refused where it is written.
TEST(CliUsage, APredicateDeclaredWithMoreThan64ArgumentsIsRefused) {
  const std::string tmpl = write_file("wide_decl.lrnn", "{1} q :- {1} a.\nxor/202 {1}\n");
  const std::string data = write_file("wide_decl.txt", "q :- a.\n");
  CliRun r = lrnn_cli("train " + tmpl + " -e " + data + " --epochs 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("wide_decl.lrnn:2:5: error: predicate xor/202 has more than 64 arguments"), std::string::npos)
      << r.out;
}

}  // namespace
