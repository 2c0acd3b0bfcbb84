// Moved to the public include/lrnn/atomic_file.hpp (the CLI includes only public headers,
// issue 31). This forwarder keeps src/train/checkpoint.cpp's include working until it
// names lrnn/atomic_file.hpp (src/train is being changed elsewhere this session); then delete it.
#pragma once

#include "lrnn/atomic_file.hpp"
