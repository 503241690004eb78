#pragma once
// Base64 (RFC 4648, padded): bytes inside JSON text (a report's images, the files an agent carries).
#include <optional>
#include <string>
#include <string_view>

namespace rocebench {

std::string base64_encode(std::string_view data);
// The bytes, or nullopt when `text` is not padded base64 (a character outside the alphabet, a length
// that is not a multiple of 4, padding anywhere but at the end).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace rocebench
