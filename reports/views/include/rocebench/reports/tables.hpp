#pragma once
// The report's content as plain sections of tables, built once from the aggregate and the
// verdicts; Markdown and HTML only differ in how they print them.
#include <filesystem>
#include <string>
#include <vector>

#include "rocebench/reports/aggregate.hpp"
#include "rocebench/reports/lossless_verdict.hpp"
#include "rocebench/reports/plots.hpp"
#include "rocebench/reports/verdict.hpp"

namespace rocebench::reports {

enum class Mark { none, good, bad, missing, words };  // words: a sentence, read from the left

struct TableCell {
  std::string text;
  Mark mark = Mark::none;
};

struct Table {
  std::string title, note;
  std::vector<std::string> columns;
  std::vector<std::vector<TableCell>> rows;
};

struct Section {
  std::string title;
  std::vector<std::string> notes;
  std::vector<Table> tables;
  std::vector<std::filesystem::path> plots;
};

struct ReportInput {
  const Aggregate* agg = nullptr;
  const std::vector<Verdict>* verdicts = nullptr;
  const std::vector<LoadIssue>* issues = nullptr;
  const std::vector<std::string>* files = nullptr;
  const Plots* plots = nullptr;
  const std::vector<json>* incast = nullptr;  // microbench.incast records, whole (Dataset::incast)
  const PfcPriorities* pfc = nullptr;         // the priorities each host has PFC on (netcheck), where known
};

std::vector<Section> build_sections(const ReportInput& in);

// Renderers. Markdown links the PNGs relative to `plots_base`; HTML embeds them.
std::string render_markdown(const std::string& title, const std::vector<Section>& sections,
                            const std::filesystem::path& plots_base);
std::string render_html(const std::string& title, const std::vector<Section>& sections);
std::string render_junit(const std::string& name, const std::vector<Verdict>& verdicts);
// The aggregated data in long form: section,series,x,metric,value,note.
std::string render_csv(const Aggregate& agg);

}  // namespace rocebench::reports
