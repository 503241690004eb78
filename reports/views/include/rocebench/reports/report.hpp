#pragma once
// A report written from results files: what `rocebench report` does, and what `rocebench run` does
// at its end. Also the console summary a person reads first.
#include <filesystem>
#include <string>
#include <vector>

#include "rocebench/reports/aggregate.hpp"
#include "rocebench/reports/verdict.hpp"

namespace rocebench::reports {

struct ReportRequest {
  std::vector<std::string> inputs;  // results.jsonl files, in time order
  std::filesystem::path out_dir = "report";
  // A plan or thresholds file. Empty: the plan.json beside a single results file, when there is one.
  std::string thresholds_file;
  std::string baseline_file, machine;
  double min_effect = 0.05;
  std::string title = "rocebench report";
  bool plots = true;
};

struct ReportResult {
  std::vector<Verdict> verdicts;
  std::size_t failed = 0;          // verdicts that did not pass
  int exit_code = 0;               // the records and the verdicts judged as `rocebench run` judges them (run_exit_code)
  std::string thresholds_from;     // the file whose thresholds were judged, or ""
  std::filesystem::path html;      // report.html (Markdown, PNGs, JUnit and CSV beside it)
  std::string plots_missing;       // why there are no plots, or ""
  std::string summary;             // the console summary (console_summary)
};

// The records of results files, in order; bad lines are reported on stderr and left out. Throws
// UsageError without files, InputError on a file without one valid record.
Dataset load_results(const std::vector<std::string>& files);


// Writes report.md, report.html, junit.xml, aggregate.csv and plots/ into out_dir. Throws
// InputError/UsageError on bad input.
ReportResult write_report(const ReportRequest& request);

// What a person reads at the end of a run: per series its headline figures (latency p50/p99, bandwidth,
// peak busbw, images/s and speedup), netcheck failures, each skip reason once with what it skipped,
// and the verdicts that did not pass.
std::string console_summary(const Dataset& data, const Aggregate& agg, const std::vector<Verdict>& verdicts);

}  // namespace rocebench::reports
