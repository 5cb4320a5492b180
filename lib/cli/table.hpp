// A plain-text table with auto-sized columns, for the CLI's readable output.
#ifndef DEVSHARE_CLI_TABLE_HPP_
#define DEVSHARE_CLI_TABLE_HPP_

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

namespace devshare::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}

  void AddRow(std::vector<std::string> row) {
    row.resize(header_.size());
    rows_.push_back(std::move(row));
  }

  std::string Render() const {
    std::vector<std::size_t> width(header_.size());
    for (std::size_t c = 0; c < header_.size(); ++c) {
      width[c] = header_[c].size();
      for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
    }
    std::string out;
    auto line = [&](const std::vector<std::string>& cells) {
      std::string text;
      for (std::size_t c = 0; c < cells.size(); ++c) {
        if (c > 0) text += "  ";
        text += fmt::format("{:<{}}", cells[c], width[c]);
      }
      while (!text.empty() && text.back() == ' ') text.pop_back();
      out += text;
      out += '\n';
    };
    line(header_);
    std::vector<std::string> rule;
    rule.reserve(width.size());
    for (std::size_t w : width) rule.emplace_back(w, '-');
    line(rule);
    for (const auto& row : rows_) line(row);
    return out;
  }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace devshare::cli

#endif  // DEVSHARE_CLI_TABLE_HPP_
