#pragma once
// A bound on how deeply JSON input may nest, checked before parsing on every input path (plans,
// profiles, thresholds, baselines, results files, rendezvous messages): nlohmann's json copies,
// compares, dumps and frees values recursively, and a file nested 50,000 levels deep overflowed the
// stack (exit 139).
#include <cstddef>
#include <string_view>

namespace rocebench {

inline constexpr int kMaxJsonDepth = 256;

// The byte offset of the bracket that first opens level kMaxJsonDepth + 1 (brackets inside strings
// do not count); std::string_view::npos when the text nests no deeper than that.
std::size_t json_too_deep_at(std::string_view text);

}  // namespace rocebench
