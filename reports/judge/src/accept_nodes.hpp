#pragma once
// Node lists as the acceptance's parts name them (private to the acceptance's sources).
#include <string>
#include <vector>

#include "rocebench/reports/accept_records.hpp"

namespace rocebench::reports::accept::detail {

// The nodes' rows (hosts as their records name them).
inline std::vector<std::string> rows(const std::vector<Node>& nodes) {
  std::vector<std::string> out;
  for (const auto& n : nodes) out.push_back(n.host);
  return out;
}

}  // namespace rocebench::reports::accept::detail
