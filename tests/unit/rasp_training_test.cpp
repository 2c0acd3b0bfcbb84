// A compiled RASP program as the initial point of training in lrnn's engine (docs/rasp.md,
// "Trainable"): the compiled template plus a readout of the output subspace, trained with
// lrnn::Model and cross-entropy. Training on the program's own pairs keeps every output;
// on a nearby task (reverse, then a changed map of the tokens) the compiled weights reach
// a higher accuracy, on inputs longer than any trained on, than the same template from
// random init.
#include <gtest/gtest.h>

#include <map>

#include "lrnn/lrnn.hpp"
#include "lrnn/rasp.hpp"
#include "rasp_test_support.hpp"

namespace {

using namespace lrnn::rasp;

SOp make_reverse() {
  SOp length = select(tokens(), tokens(), Predicate::True).width().name("length");
  SOp opp = (length - indices() - 1).name("opp_idx");
  return select(indices(), opp, Predicate::Eq).value(tokens(), Value{}).name("reverse");
}

// The task's inputs of length in [min_len, max_len] over the vocabulary, as an lrnn dataset
// whose queries ask rasp_out(p) for `target(input)`.
template <class Target>
lrnn::Dataset dataset(const CompiledModel& m, int min_len, int max_len, Target target) {
  std::string examples, queries;
  for (size_t k = 0; k < compiled_input_count(m.vocab.size(), max_len); ++k) {
    const std::vector<Value> in = compiled_input(m.vocab, max_len, k);
    if (static_cast<int>(in.size()) < min_len) continue;
    const std::string id = "s" + std::to_string(k);
    examples += id + " :- " + m.example_text(in) + ".\n";
    queries += id + " :- " + m.readout_query_text(target(in)) + ".\n";
  }
  return lrnn::Dataset::from_text(examples, queries);
}

std::vector<Value> reversed(const std::vector<Value>& in) { return {in.rbegin(), in.rend()}; }

// The nearby task: reverse, then a -> b -> c -> a.
std::vector<Value> reversed_rotated(const std::vector<Value>& in) {
  std::map<std::string, std::string> next{{"a", "b"}, {"b", "c"}, {"c", "a"}};
  std::vector<Value> out;
  for (auto it = in.rbegin(); it != in.rend(); ++it) out.emplace_back(next.at(std::get<std::string>(*it)));
  return out;
}

lrnn::Settings settings(const std::string& optimizer, double lr, int epochs) {
  lrnn::Settings s;
  s.loss = "crossentropy";
  s.optimizer = optimizer;
  s.lr = lr;
  s.epochs = epochs;
  s.seed = 3;
  return s;
}

double accuracy(const lrnn::Model& model, const lrnn::Dataset& data) { return model.evaluate(data).metrics.accuracy; }

TEST(RaspTraining, OwnPairsKeepEveryOutput) {
  const CompiledModel m = compile(make_reverse(), chars("abc"), 4);
  CompiledTemplateOptions o;
  o.readout_scale = 20;  // a low temperature: the exact outputs are already confident
  const lrnn::Dataset own = dataset(m, 1, 4, reversed);
  // every weight learnable, plain SGD: the gradients at the program are tiny
  lrnn::Model sgd(lrnn::Template::from_string(m.template_text(o), "reverse.lrnn"), settings("sgd", 0.1, 20));
  EXPECT_EQ(accuracy(sgd, own), 1.0);
  const lrnn::TrainReport r = sgd.train(own);
  ASSERT_EQ(r.history.size(), 20u);
  EXPECT_LT(r.history.back().train.loss, 1e-6);
  EXPECT_EQ(accuracy(sgd, own), 1.0);
  // the internal weights fixed, Adam on the readout
  o.fixed = true;
  lrnn::Model adam(lrnn::Template::from_string(m.template_text(o), "reverse.lrnn"), settings("adam", 0.01, 20));
  adam.train(own);
  EXPECT_EQ(accuracy(adam, own), 1.0);
  EXPECT_EQ(adam.num_parameter_values(), sgd.num_parameter_values());  // fixed weights are still parameters
}

TEST(RaspTraining, ReadoutDataAndOptions) {
  const CompiledModel m = compile(make_reverse(), chars("abc"), 2);
  const CompiledModel::ReadoutData pairs = m.readout_data();
  EXPECT_EQ(pairs.count, 12u);  // 3 + 9 inputs
  // input 4 is "ab" (length 1 first, then length 2 in order): reversed "ba"
  EXPECT_NE(pairs.queries.find("s4 :- [0, 1, 0] rasp_out(1), [1, 0, 0] rasp_out(2).\n"), std::string::npos)
      << pairs.queries;
  EXPECT_THROW(m.readout_data(11), lrnn::Error);
  CompiledTemplateOptions both;
  both.fixed = both.random = true;
  EXPECT_THROW(m.template_text(both), lrnn::Error);
  CompiledTemplateOptions random;
  random.random = true;
  random.readout_scale = 1;
  const std::string text = m.template_text(random);
  EXPECT_NE(text.find("$readout={3,"), std::string::npos);
  EXPECT_EQ(text.find("[["), std::string::npos);  // no compiled values at all
}

TEST(RaspTraining, NearbyTaskStartsFromTheProgram) {
  const CompiledModel m = compile(make_reverse(), chars("abc"), 4);
  // trained on inputs up to length 3, tested on every input of length 4
  const lrnn::Dataset train = dataset(m, 1, 3, reversed_rotated);
  const lrnn::Dataset test = dataset(m, 4, 4, reversed_rotated);
  CompiledTemplateOptions from_program;
  from_program.readout_scale = 5;  // a readout the optimiser can turn round in 40 steps
  from_program.fixed = true;
  CompiledTemplateOptions from_random = from_program;
  from_random.fixed = false;
  from_random.random = true;
  const int epochs = 40;
  lrnn::Model program(lrnn::Template::from_string(m.template_text(from_program), "reverse.lrnn"),
                      settings("adam", 0.2, epochs));
  lrnn::Model random(lrnn::Template::from_string(m.template_text(from_random), "reverse.lrnn"),
                     settings("adam", 0.2, epochs));
  const double program_before = accuracy(program, test);
  program.train(train);
  random.train(train);
  const double program_after = accuracy(program, test), random_after = accuracy(random, test);
  std::printf("nearby task (reverse, then a->b->c->a), %d epochs on lengths 1-3, accuracy on length 4: "
              "from the program %.4f (before training %.4f), from random init %.4f (train %.4f)\n",
              epochs, program_after, program_before, random_after, accuracy(random, train));
  EXPECT_LT(program_before, 0.5);  // the program itself answers the old task
  EXPECT_EQ(program_after, 1.0);
  EXPECT_LT(random_after, program_after);
}

}  // namespace
