// Aligned terminal columns.
#include "report/text_table.h"

#include <algorithm>

namespace cudagate {

std::string text_table(
    const std::vector<std::vector<std::string>>& rows,
    const std::function<std::string(std::size_t row, const std::string& cell)>& style) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    const auto& row = rows[r];
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string& cell = row[i];
      line += (i == 0 && style) ? style(r, cell) : cell;
      if (i + 1 != row.size()) line.append(width[i] - cell.size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace cudagate
