// lrnn::FactRows is built from a model's engine (api/fact_rows.cpp); Model::fact_rows calls this.
#pragma once

#include <cstddef>

#include "lrnn/model.hpp"

namespace lrnn {
namespace train {
class Engine;
}

FactRows build_fact_rows(const Model& model, const train::Engine& engine, const Dataset& data,
                         size_t max_ground_rules);

}  // namespace lrnn
