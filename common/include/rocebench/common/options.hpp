#pragma once
// Every option of a plan step declared once: its plan field, flag, type, default, range and help.
// The command-line flag (help showing default and range), the step's JSON Schema property and the
// typed reader of the step's params all come from that one declaration, so they cannot drift apart.
// Kept on our ArgParser (not CLI11): a flag here feeds a plan field, and both are checked by the
// same JSON Schema, so that one error text serves the plan and the flag.
#include <deque>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rocebench/common/cli.hpp"

namespace rocebench {

// How a flag's text becomes the plan's value.
enum class OptionType {
  integer,       // "-4"
  number,        // "0.5"
  text,          // as typed
  boolean,       // a flag without a value: sets the opposite of the default (--no-check, --bidirectional)
  size,          // "64K" -> 65536 (parse_bytes)
  sizes,         // the flag: one size; the plan: one or a list
  integer_list,  // "1,2,4" -> [1, 2, 4]
  object,        // the plan only (a nested object, e.g. "verbs")
};

struct OptionSpec {
  std::string key = {};       // the plan field, e.g. "spin_us"
  std::string flag = {};      // e.g. "--spin-us"; empty: the plan only
  OptionType type = OptionType::integer;
  nlohmann::json rules = nlohmann::json::object();  // the field's JSON Schema beyond its type: range, enum …
  nlohmann::json fallback = {};  // the default; null: the field stays absent unless given
  std::string help = {};      // without default and range: the usage adds them
  std::string family = {};    // read only by some backends (e.g. our own transports, not NCCL)
  std::string metavar = {};   // empty: by type (N, X, VALUE, SIZE, LIST)

  nlohmann::json property() const;  // the field's JSON Schema
};

class OptionTable {
 public:
  // `renamed`: old plan field -> new one; the old one is refused with a hint naming the new.
  explicit OptionTable(std::vector<OptionSpec> specs, std::map<std::string, std::string> renamed = {});

  const OptionSpec& at(const std::string& key) const;  // std::logic_error for an undeclared key
  const std::vector<OptionSpec>& specs() const { return specs_; }

  // The step's params: an object of the declared fields and no other, less those of `drop_family`.
  nlohmann::json schema(const std::string& drop_family = "") const;

  // The value of `key` in params (validated against schema()), else its declared default.
  template <typename T>
  T get(const nlohmann::json& params, const std::string& key) const {
    if (auto it = params.find(key); it != params.end()) return it->get<T>();
    const OptionSpec& spec = at(key);
    if (spec.fallback.is_null()) throw std::logic_error("option '" + key + "' has no default: read it with find()");
    return spec.fallback.get<T>();
  }
  // Options without a default: the value, if the params give one.
  template <typename T>
  std::optional<T> find(const nlohmann::json& params, const std::string& key) const {
    at(key);
    if (auto it = params.find(key); it != params.end()) return it->get<T>();
    return std::nullopt;
  }

  // Plan field -> flag, for errors about a value the user typed (CommandOrigin).
  std::map<std::string, std::string> flag_of() const;

 private:
  std::vector<OptionSpec> specs_;
  std::map<std::string, std::string> renamed_;
};

// The flags of a table on one command line: added to the parser, read back as the step's params.
class OptionFlags {
 public:
  // Adds a flag for each declared option that has one and is not of `drop_family`.
  OptionFlags(const OptionTable& table, ArgParser& parser, const std::string& drop_family = "");
  // The parser refuses a number outside the declared range as it reads the flag (ArgParser::range).
  // After ArgParser::parse: the params the flags say: each flag given, and each other option's
  // default (with_defaults) when it has one. A value the table's schema refuses throws UsageError
  // naming `program`, the flag, the value and the schema's complaint.
  nlohmann::json params(const std::string& program, bool with_defaults = true) const;
  bool given(const std::string& key) const;
  std::string text(const std::string& key) const;  // as typed ("" if not given)

 private:
  struct Entry {
    const OptionSpec* spec;
    std::string text;
    bool on = false;  // a boolean flag given
  };
  const OptionTable* table_;
  std::deque<Entry> entries_;  // stable addresses: the parser writes into them
};

}  // namespace rocebench
