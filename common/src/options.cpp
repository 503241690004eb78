#include "rocebench/common/options.hpp"

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/schema.hpp"

namespace rocebench {

namespace {

using nlohmann::json;

const char* default_metavar(OptionType type) {
  switch (type) {
    case OptionType::integer: return "N";
    case OptionType::number: return "X";
    case OptionType::size:
    case OptionType::sizes: return "SIZE";
    case OptionType::integer_list: return "LIST";
    default: return "VALUE";
  }
}

// The help, with the default and the names the field admits ("ring | ps"); ArgParser adds the range.
std::string usage_help(const OptionSpec& spec) {
  std::vector<std::string> notes;
  if (spec.type != OptionType::boolean && !spec.fallback.is_null()) {
    notes.push_back("default " + (spec.fallback.is_string() ? spec.fallback.get<std::string>() : spec.fallback.dump()));
  }
  if (spec.rules.contains("enum")) {
    std::vector<std::string> names;
    for (const auto& v : spec.rules["enum"]) names.push_back(v.is_string() ? v.get<std::string>() : v.dump());
    notes.push_back(fmt::format("{}", fmt::join(names, " | ")));
  }
  return notes.empty() ? spec.help : fmt::format("{} ({})", spec.help, fmt::join(notes, "; "));
}

// Whether the flag's text is read as numbers (value_of); a text flag's is not, whatever its rules say.
bool holds_numbers(OptionType type) { return type != OptionType::text && type != OptionType::object && type != OptionType::boolean; }

json value_of(const OptionSpec& spec, const std::string& text) {
  switch (spec.type) {
    case OptionType::integer: return parse_number<long long>(spec.flag, text);
    case OptionType::number: return parse_number<double>(spec.flag, text);
    case OptionType::size:
    case OptionType::sizes: return parse_bytes(spec.flag, text);
    case OptionType::integer_list: {
      json list = json::array();
      std::size_t from = 0;
      while (true) {
        const std::size_t comma = text.find(',', from);
        const std::string item = text.substr(from, comma - from);
        if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 9) {
          throw UsageError(fmt::format("{} takes whole numbers like 1,2,4, not '{}'", spec.flag, printable_excerpt(text)));
        }
        list.push_back(std::stoi(item));
        if (comma == std::string::npos) return list;
        from = comma + 1;
      }
    }
    default: return text;
  }
}

}  // namespace

json OptionSpec::property() const {
  json p = rules;
  switch (type) {
    case OptionType::integer:
    case OptionType::size: p["type"] = "integer"; break;
    case OptionType::number: p["type"] = "number"; break;
    case OptionType::boolean: p["type"] = "boolean"; break;
    case OptionType::integer_list:
    case OptionType::sizes: {
      json items = rules;
      items["type"] = "integer";
      p = {{"type", "array"}, {"items", items}, {"minItems", 1}};
      if (type == OptionType::sizes) p = {{"anyOf", {items, p}}};
      break;
    }
    case OptionType::text:
      if (!p.contains("enum")) p["type"] = "string";
      break;
    case OptionType::object: break;  // rules is the object's whole schema
  }
  return p;
}

OptionTable::OptionTable(std::vector<OptionSpec> specs, std::map<std::string, std::string> renamed)
    : specs_(std::move(specs)), renamed_(std::move(renamed)) {}

const OptionSpec& OptionTable::at(const std::string& key) const {
  for (const auto& s : specs_) {
    if (s.key == key) return s;
  }
  throw std::logic_error("no option '" + key + "' is declared");
}

json OptionTable::schema(const std::string& drop_family) const {
  json properties = json::object();
  for (const auto& s : specs_) {
    if (drop_family.empty() || s.family != drop_family) properties[s.key] = s.property();
  }
  for (const auto& [old_key, new_key] : renamed_) {
    properties[old_key] = {{"not", json::object()}, {"errorMessage", fmt::format("'{}' is now '{}'", old_key, new_key)}};
  }
  return {{"type", "object"}, {"additionalProperties", false}, {"properties", properties}};
}

std::map<std::string, std::string> OptionTable::flag_of() const {
  std::map<std::string, std::string> out;
  for (const auto& s : specs_) {
    if (!s.flag.empty()) out[s.key] = s.flag;
  }
  return out;
}

OptionFlags::OptionFlags(const OptionTable& table, ArgParser& parser, const std::string& drop_family) : table_(&table) {
  for (const auto& spec : table.specs()) {
    if (spec.flag.empty() || (!drop_family.empty() && spec.family == drop_family)) continue;
    Entry& e = entries_.emplace_back(Entry{&spec, ""});
    if (spec.type == OptionType::boolean) {
      parser.flag(spec.flag, &e.on, spec.help);
    } else {
      parser.option(spec.flag, &e.text, usage_help(spec), spec.metavar.empty() ? default_metavar(spec.type) : spec.metavar);
      if (holds_numbers(spec.type)) {
        // The parser checks the declared range, if any, as it reads the flag, as for any number flag.
        parser.range(spec.rules, [&spec](const std::string& text) {
          const json value = value_of(spec, text);
          return value.is_array() ? value.get<std::vector<double>>() : std::vector<double>{value.get<double>()};
        });
      }
    }
  }
}

json OptionFlags::params(const std::string& program, bool with_defaults) const {
  json params = json::object();
  for (const auto& e : entries_) {
    const OptionSpec& s = *e.spec;
    if (s.type == OptionType::boolean) {
      if (e.on) params[s.key] = !s.fallback.get<bool>();
      else if (with_defaults) params[s.key] = s.fallback;
    } else if (!e.text.empty()) {
      try {
        params[s.key] = value_of(s, e.text);
      } catch (const UsageError& error) {
        throw UsageError(fmt::format("{}: {}", program, error.what()));
      }
    } else if (with_defaults && !s.fallback.is_null()) {
      params[s.key] = s.fallback;
    }
  }
  const auto errors = JsonSchema(table_->schema()).validate(params);
  if (!errors.empty()) {
    const SchemaError& e = errors.front();
    const std::string key = e.pointer.substr(1, e.pointer.find('/', 1) - 1);
    const json::json_pointer at(e.pointer);
    const std::string value = params.contains(at) ? printable_excerpt(params.at(at).dump()) : "";
    throw UsageError(fmt::format("{}: {} {}: {}", program, table_->at(key).flag, value, e.message));
  }
  return params;
}

namespace {

// The flag entry of `key`; nullptr when the table gives it no flag here.
template <typename Entries>
const typename Entries::value_type* entry_of(const Entries& entries, const std::string& key) {
  for (const auto& e : entries) {
    if (e.spec->key == key) return &e;
  }
  return nullptr;
}

}  // namespace

bool OptionFlags::given(const std::string& key) const {
  const auto* e = entry_of(entries_, key);
  return e != nullptr && (e->on || !e->text.empty());
}

std::string OptionFlags::text(const std::string& key) const {
  const auto* e = entry_of(entries_, key);
  return e != nullptr ? e->text : "";
}

}  // namespace rocebench
