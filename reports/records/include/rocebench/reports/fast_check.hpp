#pragma once
// A fast proof that a record satisfies common/schema/result.schema.json, for the record shapes
// that make up almost all of a results file. The general validator costs ~0.2 ms a record, which
// would make a million records take minutes; this check costs well under a microsecond. It is
// conservative: false means "not proven", and the caller then asks the general validator, which
// also gives the located message.
#include <string_view>

#include <nlohmann/json.hpp>

namespace rocebench::reports {

bool surely_valid(const nlohmann::json& record);

// The schema's patterns, without a regex engine.
bool rfc3339(std::string_view s);    // "time"
bool dotted_id(std::string_view s);  // "step" and "check": ^[a-z0-9_]+(\.[a-z0-9_]+)+$

}  // namespace rocebench::reports
