// How the harness tests read the docs' Markdown tables, to hold them to the tables in the code
// (engine_tables_test.cpp, scenario_fields_test.cpp): one reader, so that every such test reads a
// docs table the same way.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace distmetrics::harness::doc_tables {

// The text of docs/NAME (a failed expectation when it cannot be read).
inline std::string read_doc(const std::string& name) {
  std::ifstream in(std::string(DISTMETRICS_DOCS_DIR) + "/" + name);
  EXPECT_TRUE(in) << "cannot read docs/" << name;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A Markdown row's cells, trimmed: "| `a` | b |" -> {"`a`", "b"}.
inline std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::stringstream in(row);
  std::string cell;
  std::getline(in, cell, '|');  // before the first '|'
  while (std::getline(in, cell, '|')) {
    const auto begin = cell.find_first_not_of(' ');
    const auto end = cell.find_last_not_of(' ');
    out.push_back(begin == std::string::npos ? "" : cell.substr(begin, end - begin + 1));
  }
  if (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

// The body rows of docs/DOC's first table whose header's first cell is `header`, as written
// (the header and its "---" line left out); a failed expectation when there is no such table.
inline std::vector<std::string> table_lines(const std::string& doc, const std::string& header) {
  std::istringstream in(read_doc(doc));
  std::vector<std::string> lines;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("|", 0) != 0) {
      if (inside) break;
      continue;
    }
    const auto row = cells(line);
    if (!inside) {
      inside = !row.empty() && row.front() == header;
      continue;
    }
    if (row.empty() || row.front().rfind("---", 0) == 0) continue;
    lines.push_back(line);
  }
  EXPECT_TRUE(inside) << "docs/" << doc << " has no table headed '" << header << "'";
  return lines;
}

// The same rows as cells, backticks removed.
inline std::vector<std::vector<std::string>> table_rows(const std::string& doc, const std::string& header) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& line : table_lines(doc, header)) {
    auto row = cells(line);
    for (auto& cell : row) cell.erase(std::remove(cell.begin(), cell.end(), '`'), cell.end());
    rows.push_back(row);
  }
  return rows;
}

// Its first column, backticks removed: the names the docs list.
inline std::set<std::string> table_names(const std::string& doc, const std::string& header) {
  std::set<std::string> names;
  for (const auto& row : table_rows(doc, header))
    if (!row.empty()) names.insert(row.front());
  return names;
}

// "should read:\n" + one line each: what a failed table comparison prints.
inline std::string lines_text(const std::vector<std::string>& lines) {
  std::string all;
  for (const auto& line : lines) all += line + "\n";
  return all;
}

}  // namespace distmetrics::harness::doc_tables
