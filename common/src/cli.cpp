#include "rocebench/common/cli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <iostream>

#include <nlohmann/json.hpp>

#include "rocebench/common/errors.hpp"

namespace rocebench {

template <typename T>
T parse_number(const std::string& option, const std::string& text) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(static_cast<double>(value))) {
    throw UsageError(fmt::format("{}: '{}' is not a valid number", option, printable_excerpt(text)));
  }
  return value;
}
template int parse_number<int>(const std::string&, const std::string&);
template long long parse_number<long long>(const std::string&, const std::string&);
template double parse_number<double>(const std::string&, const std::string&);

ArgParser::ArgParser(std::string program, std::string description)
    : program_(std::move(program)), description_(std::move(description)) {}

ArgParser& ArgParser::option(const std::string& name, std::string* target, const std::string& help,
                             const std::string& metavar) {
  options_.push_back({name, metavar, help, true, [target](const std::string& v) { *target = v; }});
  return *this;
}

ArgParser& ArgParser::option(const std::string& name, int* target, const std::string& help, const std::string& metavar) {
  options_.push_back({name, metavar, help, true, [name, target](const std::string& v) { *target = parse_number<int>(name, v); }});
  options_.back().numbers = [name](const std::string& v) { return std::vector<double>{parse_number<double>(name, v)}; };
  return *this;
}

ArgParser& ArgParser::option(const std::string& name, double* target, const std::string& help,
                             const std::string& metavar) {
  options_.push_back({name, metavar, help, true, [name, target](const std::string& v) { *target = parse_number<double>(name, v); }});
  options_.back().numbers = [name](const std::string& v) { return std::vector<double>{parse_number<double>(name, v)}; };
  return *this;
}

ArgParser& ArgParser::range(double min, double max) {
  if (options_.empty() || !options_.back().numbers) throw std::logic_error("ArgParser::range follows a number option");
  options_.back().min = min;
  options_.back().max = max;
  return *this;
}

ArgParser& ArgParser::range(const nlohmann::json& schema, Numbers numbers) {
  // Nothing to check: a schema without bounds, or of something other than a number (JSON Schema's
  // bounds apply to numbers only); the option keeps the reader it has, or none.
  const auto bounds = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
  if (!schema.is_object() || std::none_of(bounds.begin(), bounds.end(), [&](const char* b) { return schema.contains(b); })) {
    return *this;
  }
  if (const auto type = schema.find("type"); type != schema.end() && *type != "integer" && *type != "number") return *this;
  if (numbers && !options_.empty()) options_.back().numbers = std::move(numbers);
  range(schema.value("minimum", schema.value("exclusiveMinimum", -std::numeric_limits<double>::infinity())),
        schema.value("maximum", schema.value("exclusiveMaximum", std::numeric_limits<double>::infinity())));
  options_.back().min_open = schema.contains("exclusiveMinimum");
  options_.back().max_open = schema.contains("exclusiveMaximum");
  return *this;
}

bool ArgParser::Option::admits(double x) const {
  return (min_open ? x > min : x >= min) && (max_open ? x < max : x <= max);
}

std::string ArgParser::Option::interval() const {
  const bool low = std::isfinite(min), high = std::isfinite(max);
  if (low && high) return fmt::format("{}{}, {}{}", min_open ? "(" : "[", min, max, max_open ? ")" : "]");
  if (low) return fmt::format("{} {}", min_open ? ">" : ">=", min);
  if (high) return fmt::format("{} {}", max_open ? "<" : "<=", max);
  return "";
}

ArgParser& ArgParser::option(const std::string& name, std::vector<std::string>* target, const std::string& help,
                             const std::string& metavar) {
  options_.push_back({name, metavar, help + " (repeatable)", true, [target](const std::string& v) { target->push_back(v); }});
  return *this;
}

ArgParser& ArgParser::flag(const std::string& name, bool* target, const std::string& help) {
  options_.push_back({name, "", help, false, [target](const std::string&) { *target = true; }});
  return *this;
}

ArgParser& ArgParser::renamed(const std::string& old_name, const std::string& new_name) {
  renamed_.emplace_back(old_name, new_name);
  return *this;
}

ArgParser& ArgParser::positional(const std::string& name, std::string* target, const std::string& help, bool required) {
  positionals_.push_back({name, help, required, [target](const std::string& v) { *target = v; }});
  return *this;
}

ArgParser& ArgParser::rest(const std::string& name, std::vector<std::string>* target, const std::string& help) {
  rest_ = {name, help, false, [target](const std::string& v) { target->push_back(v); }};
  has_rest_ = true;
  return *this;
}

void ArgParser::fail(const std::string& message) const { throw UsageError(program_ + ": " + message + "\n\n" + usage()); }

bool ArgParser::parse(const Args& args) {
  std::size_t next_positional = 0;
  bool only_positionals = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!only_positionals && (arg == "--help" || arg == "-h")) {
      std::cout << usage();
      return false;
    }
    if (!only_positionals && arg == "--") {
      only_positionals = true;
      continue;
    }
    if (!only_positionals && arg.size() > 1 && arg[0] == '-') {
      const auto eq = arg.find('=');
      const std::string name = arg.substr(0, eq);
      auto it = std::find_if(options_.begin(), options_.end(), [&](const Option& o) { return o.name == name; });
      if (it == options_.end()) {
        for (const auto& [old_name, new_name] : renamed_) {
          if (name == old_name) fail(fmt::format("'{}' is now '{}'", old_name, new_name));
        }
        fail("unknown option " + name);
      }
      std::string value;
      if (it->takes_value) {
        if (eq != std::string::npos) value = arg.substr(eq + 1);
        else if (i + 1 < args.size()) value = args[++i];
        else fail(name + " needs a value");
        // An empty value would pass as if the flag were absent: the user meant something by it.
        if (value.empty()) fail(fmt::format("{} is empty: give {} or leave the flag out", name, it->metavar));
      } else if (eq != std::string::npos) {
        fail(name + " takes no value");
      }
      std::vector<double> numbers;
      try {
        it->set(value);
        if (it->numbers) numbers = it->numbers(value);
      } catch (const UsageError& e) {
        fail(e.what());
      }
      for (const double x : numbers) {
        // One line, without the usage: the range is all the user needs to see.
        if (!it->admits(x)) {
          throw UsageError(fmt::format("{}: {}: {} is out of range {}", program_, name, printable_excerpt(value), it->interval()));
        }
      }
      continue;
    }
    if (next_positional < positionals_.size()) positionals_[next_positional++].set(arg);
    else if (has_rest_) rest_.set(arg);
    else fail("unexpected argument '" + arg + "'");
  }
  for (std::size_t i = next_positional; i < positionals_.size(); ++i) {
    if (positionals_[i].required) fail("missing " + positionals_[i].name);
  }
  return true;
}

std::string ArgParser::usage() const {
  std::string line = "usage: " + program_;
  if (!options_.empty()) line += " [options]";
  for (const auto& p : positionals_) line += p.required ? " " + p.name : " [" + p.name + "]";
  if (has_rest_) line += " [" + rest_.name + "...]";
  std::string out = line + "\n\n" + description_ + "\n";
  if (!positionals_.empty() || has_rest_) out += "\narguments:\n";
  for (const auto& p : positionals_) out += fmt::format("  {:<24} {}\n", p.name, p.help);
  if (has_rest_) out += fmt::format("  {:<24} {}\n", rest_.name, rest_.help);
  out += "\noptions:\n";
  for (const auto& o : options_) {
    const std::string range = o.interval();
    out += fmt::format("  {:<24} {}{}\n", o.takes_value ? o.name + " " + o.metavar : o.name, o.help,
                       range.empty() ? "" : " " + range);
  }
  out += fmt::format("  {:<24} {}\n", "-h, --help", "show this help and exit");
  return out;
}

void LauncherFlags::add_to(ArgParser& parser) {
  const std::map<std::string, std::pair<std::string, std::string>> help{
      {"--ranks", {fmt::format("local ranks to start (default {})", default_ranks_), "N"}},
      {"--netns", {"hosts file ('NAME ADDRESS [agent=PORT]', ci/testbeds/netns): rank i runs in host i, in its namespace or through its agent", "FILE"}},
      {"--launcher", {"local | mpirun | srun", "NAME"}},
      {"--hostfile", {"hosts for mpirun / srun ('host slots=N' lines)", "FILE"}},
      {"--ranks-per-host", {"ranks on each host (default: the hostfile's slots)", "N"}},
      {"--results", {"folder that receives <run-id>/results.jsonl", "DIR"}},
      {"--results-dir", {"exact results folder of this run", "DIR"}},
      {"--deadline", {"seconds any single wait may take", "S"}}};
  for (auto& [flag, value] : values_) parser.option(flag, &value, help.at(flag).first, help.at(flag).second);
}

Args LauncherFlags::to_args(int ranks) const {
  Args out = given();
  if (launch_value(out, "--ranks").empty()) out.insert(out.begin(), {"--ranks", std::to_string(ranks)});
  return out;
}

Args LauncherFlags::given() const {
  Args out;
  for (const auto& [flag, value] : values_) {
    if (!value.empty()) out.insert(out.end(), {flag, value});
  }
  // --results once named a file that records were appended to; a file there now is the old usage.
  const std::string& results =
      std::find_if(values_.begin(), values_.end(), [](const auto& v) { return v.first == "--results"; })->second;
  const std::filesystem::path path(results);
  if (!results.empty() && !std::filesystem::is_directory(path) &&
      (std::filesystem::exists(path) || path.extension() == ".jsonl" || path.extension() == ".json")) {
    throw UsageError(fmt::format("--results {}: names a file; --results is now the folder that receives <run-id>/results.jsonl",
                                 printable_excerpt(results)));
  }
  return out;
}

std::string launch_value(const Args& launch, const std::string& flag) {
  for (std::size_t i = 0; i + 1 < launch.size(); i += 2) {
    if (launch[i] == flag) return launch[i + 1];
  }
  return "";
}

std::filesystem::path run_results_file(const std::string& results, const std::string& run_id) {
  const std::filesystem::path dir = std::filesystem::path(results) / run_id;
  std::filesystem::create_directories(dir);
  return dir / "results.jsonl";
}

std::size_t parse_bytes(const std::string& option, const std::string& text) {
  const std::string shown = text.size() > 40 ? text.substr(0, 40) + "…" : text;
  const auto bad = [&] { return UsageError(fmt::format("{}: '{}' is not a size (e.g. 8, 64K, 1M, 2G)", option, shown)); };
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 19) throw bad();  // no sign ("-5" would wrap around), at most 19 digits
  const unsigned long long value = std::stoull(text.substr(0, digits));
  // The unit: none, or K, M, G, T, each alone or followed by B or iB, in either case.
  const std::string unit = text.substr(digits);
  int shift = 0;
  if (!unit.empty()) {
    const auto k = std::string("KMGT").find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
    std::string rest = unit.substr(1);
    for (auto& c : rest) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (k == std::string::npos || !(rest.empty() || rest == "B" || rest == "IB")) throw bad();
    shift = 10 * static_cast<int>(k + 1);
  }
  if (value > (std::numeric_limits<std::size_t>::max() >> shift)) {
    throw UsageError(fmt::format("{}: '{}' is larger than a size can be here (16 EiB)", option, shown));
  }
  return static_cast<std::size_t>(value) << shift;
}

int run_guarded(const std::string& program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    const std::string what = e.what();
    std::cerr << what << (what.ends_with('\n') ? "" : "\n");
    return kExitBadInput;
  } catch (const InputError& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return kExitBadInput;
  } catch (const InfraError& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return kExitInfra;
  } catch (const std::filesystem::filesystem_error& e) {
    // A folder or file the user named that cannot be made or written (report -o /read-only/r).
    std::string what = e.what();  // "filesystem error: cannot create directories: Permission denied [PATH]"
    what = what.substr(what.find(": ") + 2, what.rfind(" [") - what.find(": ") - 2);
    std::cerr << program << ": " << printable_excerpt(e.path1().string(), 300) << ": " << what << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << program << ": internal error: " << e.what() << "\n";
    return kExitInfra;
  }
}

}  // namespace rocebench
