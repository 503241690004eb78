// Test tool: judge_tcp_incast on a results.jsonl, one line per host ("HOST VERDICT"), its evidence
// indented under it; for the netns tests, until report and accept show the verdict themselves.
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "rocebench/reports/lossless_verdict.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: lossless_judge RESULTS.jsonl\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << "lossless_judge: cannot open " << argv[1] << "\n";
    return 2;
  }
  std::vector<rocebench::json> records;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) records.push_back(rocebench::json::parse(line));
  }
  for (const auto& h : rocebench::reports::judge_tcp_incast(records)) {
    std::cout << h.host << " " << h.verdict << "\n";
    for (const auto& e : h.evidence) std::cout << "  " << e << "\n";
  }
  return 0;
}
