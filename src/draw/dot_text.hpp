// Small helpers shared by the picture writers: DOT string quoting and value text.
#pragma once

#include <string>
#include <vector>

namespace lrnn::draw {

// A DOT double-quoted string ("..." with \" and \\ escaped; "\n" stays a line break).
std::string quoted(const std::string& text);

// `v` (rows x cols, row-major) with `digits` significant digits: a scalar as a number,
// anything larger as [a, b, ...] with at most `max_entries` entries and the count left out.
std::string value_text(const std::vector<double>& v, int rows, int cols, int digits, size_t max_entries = 6);

// Significant digits of PyNeuraLogic's value_detail levels 0, 1, 2; throws lrnn::Error for
// any other level.
int detail_digits(int value_detail);

}  // namespace lrnn::draw
