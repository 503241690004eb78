#pragma once
// An acceptance's verdicts rendered: the host x stage table for the console, report sections,
// JUnit and JSON.
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/reports/accept_verdicts.hpp"
#include "rocebench/reports/tables.hpp"

namespace rocebench::reports::accept {

// Rendering: the host x stage table for the console; the same table and the evidence as report
// sections (for render_markdown / render_html); JUnit, one suite per host.
std::string verdict_table(const Verdicts& v);
std::vector<Section> verdict_sections(const Verdicts& v);
std::string verdict_junit(const Verdicts& v);
json verdict_json(const Verdicts& v);

}  // namespace rocebench::reports::accept
