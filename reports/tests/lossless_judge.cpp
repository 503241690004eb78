// Test tool: judge_incast on a results.jsonl (over tcp, or the transport given), one line per host ("HOST VERDICT"), its evidence
// indented under it; for the netns tests, until report and accept show the verdict themselves.
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "rocebench/reports/lossless_verdict.hpp"

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::cerr << "usage: lossless_judge RESULTS.jsonl [tcp|verbs]\n";
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
  for (const auto& h : rocebench::reports::judge_incast(records, argc == 3 ? argv[2] : "tcp")) {
    std::cout << h.host << " " << h.verdict << "\n";
    for (const auto& e : h.evidence) std::cout << "  " << e << "\n";
  }
  return 0;
}
