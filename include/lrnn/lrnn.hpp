// Everything a C++ program needs to use lrnn: the text format (syntax.hpp), templates,
// datasets and trainable models (model.hpp), errors (diagnostics.hpp), pictures (draw.hpp).
#pragma once

#include "lrnn/ast.hpp"
#include "lrnn/diagnostics.hpp"
#include "lrnn/draw.hpp"
#include "lrnn/memory.hpp"
#include "lrnn/model.hpp"
#include "lrnn/syntax.hpp"
