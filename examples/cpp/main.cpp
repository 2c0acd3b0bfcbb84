// lrnn from C++: write a template, build a dataset, train, evaluate, inspect, save, load.
// Learns XOR with a small perceptron written as two rules; exits 1 unless it learned it.
#include <lrnn/lrnn.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

int main() {
  try {
    lrnn::Template tmpl = lrnn::Template::from_string(
        "hidden :- {4,2} xy, {4}. [activation=tanh]\n"
        "xor :- {1,4} hidden, {1}. [activation=sigmoid]\n");
    // Labelled examples: the target is the example's own query.
    lrnn::Dataset data = lrnn::Dataset::from_text(
        "<0> xor :- <[0,0]> xy.\n"
        "<1> xor :- <[0,1]> xy.\n"
        "<1> xor :- <[1,0]> xy.\n"
        "<0> xor :- <[1,1]> xy.\n");

    lrnn::Settings settings;
    settings.epochs = 400;
    settings.lr = 0.05;
    settings.seed = 7;
    lrnn::Model model(tmpl, settings);
    lrnn::TrainReport report = model.train(data, nullptr, [](const lrnn::EpochInfo& e) {
      if (e.epoch % 100 == 0) std::printf("epoch %d  loss %.5f  accuracy %.2f\n", e.epoch, e.train.loss, e.train.accuracy);
      return true;
    });

    lrnn::Evaluation ev = model.evaluate(data);
    const double expected[] = {0, 1, 1, 0};
    bool learned = ev.outputs.size() == 4;
    for (size_t i = 0; i < ev.outputs.size(); ++i) {
      const lrnn::Output& o = ev.outputs[i];
      std::printf("example %zu: %s = %.4f (target %.0f)\n", o.example, o.query.c_str(), o.value[0], o.target[0]);
      learned = learned && std::round(o.value[0]) == expected[i];
    }
    std::printf("trained %d epochs in %.4f s; accuracy %.2f\n", report.epochs, report.train_seconds, ev.metrics.accuracy);

    for (const lrnn::Parameter& p : model.parameters())
      std::printf("parameter %s: %dx%d\n", p.name.c_str(), p.rows, p.cols);

    // The ground network of the second example, with gradients of its loss.
    lrnn::GroundNetwork net = model.network(data, 1, true);
    for (const auto& atom : net.atoms) std::printf("  neuron %s (depth %d): %zu values\n", atom.text.c_str(), atom.depth, atom.value.size());

    // Save and load: the loaded model gives identical outputs.
    const std::string path = (std::filesystem::temp_directory_path() / "lrnn_example_cpp_model.json").string();
    model.save(path);
    lrnn::Model loaded = lrnn::Model::load(path);
    std::filesystem::remove(path);
    const auto again = loaded.forward(data);
    for (size_t i = 0; i < again.size(); ++i) learned = learned && again[i] == ev.outputs[i].value;

    std::printf(learned ? "learned XOR\n" : "did NOT learn XOR\n");
    return learned ? 0 : 1;
  } catch (const lrnn::Error& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
}
