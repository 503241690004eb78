#include <map>

#include <fmt/format.h>

#include "rocebench/reports/tables.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

std::string render_junit(const std::string& name, const std::vector<Verdict>& verdicts) {
  std::map<std::string, std::vector<const Verdict*>> suites;
  std::size_t failures = 0;
  for (const auto& v : verdicts) {
    suites[v.suite].push_back(&v);
    failures += v.outcome != Outcome::pass;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\">\n", escape_xml(name), verdicts.size(), failures);
  for (const auto& [suite, cases] : suites) {
    std::size_t suite_failures = 0;
    for (const Verdict* v : cases) suite_failures += v->outcome != Outcome::pass;
    out += fmt::format("  <testsuite name=\"rocebench.{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\">\n",
                       escape_xml(suite), cases.size(), suite_failures);
    for (const Verdict* v : cases) {
      out += fmt::format("    <testcase classname=\"rocebench.{}\" name=\"{}\"", escape_xml(suite), escape_xml(v->name));
      if (v->outcome == Outcome::pass) {
        out += ">\n      <system-out>" + escape_xml(v->message) + "</system-out>\n    </testcase>\n";
      } else {
        out += fmt::format(">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n", to_string(v->outcome),
                           escape_xml(v->message), escape_xml(v->message));
      }
    }
    out += "  </testsuite>\n";
  }
  return out + "</testsuites>\n";
}

}  // namespace rocebench::reports
