#include <fmt/format.h>

#include "rocebench/reports/tables.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

std::string render_markdown(const std::string& title, const std::vector<Section>& sections,
                            const std::filesystem::path& plots_base) {
  std::string out = "# " + title + "\n";
  for (const auto& s : sections) {
    out += "\n## " + s.title + "\n\n";
    for (const auto& n : s.notes) out += n + "\n\n";
    for (const auto& p : s.plots) {
      out += fmt::format("![{}]({})\n\n", p.stem().string(), (plots_base / p.filename()).string());
    }
    for (const auto& t : s.tables) {
      if (!t.title.empty()) out += "### " + escape_markdown_cell(t.title) + "\n\n";
      if (!t.note.empty()) out += "_" + t.note + "_\n\n";
      out += "|";
      for (const auto& c : t.columns) out += " " + escape_markdown_cell(c) + " |";
      out += "\n|";
      for (std::size_t i = 0; i < t.columns.size(); ++i) out += " --- |";
      out += "\n";
      for (const auto& row : t.rows) {
        out += "|";
        for (const auto& cell : row) {
          const std::string text = escape_markdown_cell(cell.text);
          out += " " + (cell.mark == Mark::bad ? "**" + text + "**" : cell.mark == Mark::missing ? "_" + text + "_" : text) + " |";
        }
        out += "\n";
      }
      out += "\n";
    }
  }
  return out;
}

}  // namespace rocebench::reports
