#include <fstream>
#include <sstream>

#include "rocebench/common/base64.hpp"
#include "rocebench/reports/tables.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

namespace {

constexpr const char* kStyle = R"css(
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1200px; color: #1d2330; padding: 0 1rem; }
h1 { border-bottom: 3px solid #2f6fde; padding-bottom: .3rem; }
h2 { margin-top: 2.2rem; border-bottom: 1px solid #d6dae3; padding-bottom: .2rem; }
h3 { margin-bottom: .3rem; font-size: 1rem; }
nav a { margin-right: 1rem; }
table { border-collapse: collapse; margin: .4rem 0 1.2rem; font-size: .85rem; }
th, td { border: 1px solid #d6dae3; padding: .25rem .55rem; text-align: right; vertical-align: top; white-space: pre-line; }
th { background: #f1f3f8; }
td:first-child, th:first-child { text-align: left; }
td.good { background: #e3f6e8; color: #17652f; }
td.bad { background: #fde5e5; color: #9b1c1c; font-weight: 600; }
td.missing { background: #fff6dc; color: #7a5a00; font-style: italic; }
td.words { text-align: left; }
.note { color: #4a5366; font-size: .9rem; }
.tablenote { color: #4a5366; font-size: .8rem; font-style: italic; margin: 0; }
img { max-width: 100%; border: 1px solid #e4e7ee; margin: .4rem 0; }
)css";

const char* css_class(Mark m) {
  switch (m) {
    case Mark::good: return " class=\"good\"";
    case Mark::bad: return " class=\"bad\"";
    case Mark::missing: return " class=\"missing\"";
    case Mark::words: return " class=\"words\"";
    case Mark::none: return "";
  }
  return "";
}

std::string anchor(std::size_t i) { return "s" + std::to_string(i); }

std::string embedded_png(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return "<img alt=\"" + escape_xml(file.stem().string()) + "\" src=\"data:image/png;base64," + base64_encode(bytes.str()) + "\">\n";
}

}  // namespace

std::string render_html(const std::string& title, const std::vector<Section>& sections) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + escape_xml(title) +
                    "</title>\n<style>" + kStyle + "</style></head><body>\n<h1>" + escape_xml(title) + "</h1>\n<nav>";
  for (std::size_t i = 0; i < sections.size(); ++i) {
    out += "<a href=\"#" + anchor(i) + "\">" + escape_xml(sections[i].title) + "</a>";
  }
  out += "</nav>\n";
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const Section& s = sections[i];
    out += "<h2 id=\"" + anchor(i) + "\">" + escape_xml(s.title) + "</h2>\n";
    for (const auto& n : s.notes) out += "<p class=\"note\">" + escape_xml(n) + "</p>\n";
    for (const auto& p : s.plots) out += embedded_png(p);
    for (const auto& t : s.tables) {
      if (!t.title.empty()) out += "<h3>" + escape_xml(t.title) + "</h3>\n";
      if (!t.note.empty()) out += "<p class=\"tablenote\">" + escape_xml(t.note) + "</p>\n";
      out += "<table><tr>";
      for (const auto& c : t.columns) out += "<th>" + escape_xml(c) + "</th>";
      out += "</tr>\n";
      for (const auto& row : t.rows) {
        out += "<tr>";
        for (const auto& cell : row) out += std::string("<td") + css_class(cell.mark) + ">" + escape_xml(cell.text) + "</td>";
        out += "</tr>\n";
      }
      out += "</table>\n";
    }
  }
  return out + "</body></html>\n";
}

}  // namespace rocebench::reports
