#pragma once
// Aligned columns for terminal reports: each column as wide as its widest
// cell, two spaces between columns, no trailing spaces.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace cudagate {

// `rows` (the first one the header), one line each. `style`, when given,
// wraps the first cell of row i (ANSI colour); the padding is computed on
// the plain text.
[[nodiscard]] std::string text_table(
    const std::vector<std::vector<std::string>>& rows,
    const std::function<std::string(std::size_t row, const std::string& cell)>& style = {});

}  // namespace cudagate
