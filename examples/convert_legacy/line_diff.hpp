// How many lines one source file removed and added relative to another (a longest-common-
// subsequence diff), ignoring the step's title comment and its namespace
// name, which every step changes by construction.
#pragma once
#include <algorithm>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace convert_legacy {

inline std::vector<std::string> normalized_lines(std::string const& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::regex const step_name("step[0-9]+");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("// Step", 0) == 0) continue;
    lines.push_back(std::regex_replace(line, step_name, "stepN"));
  }
  return lines;
}

struct line_changes {
  std::size_t removed = 0, added = 0;
};

inline line_changes changed_lines(std::string const& before_path, std::string const& after_path) {
  auto const a = normalized_lines(before_path), b = normalized_lines(after_path);
  std::vector<std::vector<std::size_t>> lcs(a.size() + 1, std::vector<std::size_t>(b.size() + 1, 0));
  for (std::size_t i = a.size(); i-- > 0;) {
    for (std::size_t j = b.size(); j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  return {a.size() - lcs[0][0], b.size() - lcs[0][0]};
}

}  // namespace convert_legacy
