// Moved to the public include/lrnn/suggest.hpp (the CLI includes only public headers,
// issue 31). This forwarder keeps the includes of src/train/config.cpp and dataset.cpp
// working until they name lrnn/suggest.hpp (src/train is being changed elsewhere this
// session); then delete it.
#pragma once

#include "lrnn/suggest.hpp"
