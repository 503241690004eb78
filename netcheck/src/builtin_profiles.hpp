#pragma once
// The profile files and their schema, compiled in so the binary works away from the source tree.
#include <string>
#include <vector>

namespace rocebench::netcheck {

struct BuiltinText {
  std::string name;
  const char* text;
};

const std::vector<BuiltinText>& builtin_profile_texts();
const char* profile_schema_text();

}  // namespace rocebench::netcheck
