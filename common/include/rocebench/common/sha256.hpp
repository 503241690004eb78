#pragma once
#include <string>
#include <string_view>

namespace rocebench {

// SHA-256 of `data` as 64 lowercase hex digits (plan hashes in run records).
std::string sha256_hex(std::string_view data);

}  // namespace rocebench
