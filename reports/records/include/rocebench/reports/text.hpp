#pragma once
// Small text helpers shared by the renderers and importers.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace rocebench::reports {

std::string number(double v);                       // 4 significant digits, no exponent for usual values
std::string number(const std::optional<double>& v);  // "—" when absent
std::string bytes_text(double bytes);               // 65536 -> "64 KiB"
std::string escape_xml(std::string_view s);         // also right for HTML text and attributes
std::string escape_markdown_cell(std::string_view s);
std::string escape_csv(std::string_view s);
std::vector<std::string> split_ws(std::string_view line);  // split on blanks and tabs
std::string trim(std::string_view s);
// Prometheus text format: a metric or label name ([a-zA-Z_][a-zA-Z0-9_]*, anything else becomes '_'),
// and a label value escaped for its double quotes.
std::string prom_name(const std::string& s);
std::string prom_label_value(const std::string& s);
// Strict number parse of a whole token; nullopt for "N/A" and the like.
std::optional<double> to_number(std::string_view token);
// A count read as a number (iterations): whole, not negative, within long long. Throws InputError
// otherwise; casting 1e29 to an integer type is undefined (found by fuzz_importers).
long long as_count(double value);
// A series as compare and thresholds name it: "[k=v k=v] world=N", and "world=unknown" for records
// whose tool did not say how many ranks ran (params.ranks "unknown"), never a made-up 1.
std::string series_label(const nlohmann::json& params, int world);
// Seconds since the epoch of an RFC 3339 time (the records' "time"); nullopt when it is not one.
std::optional<double> rfc3339_seconds(std::string_view time);

}  // namespace rocebench::reports
