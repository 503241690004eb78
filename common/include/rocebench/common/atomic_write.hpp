#pragma once
// Every file rocebench writes is written beside its name and renamed over it: a reader never sees
// half of it, and a failure leaves neither an empty file where a good one was nor a temp file.
#include <filesystem>
#include <string>
#include <string_view>

namespace rocebench {

// Writes `text` to `file` (its folder must exist). InputError naming the path and the reason.
void write_file_atomically(const std::filesystem::path& file, std::string_view text);

// Why `file` could not be written ("" when it could). Checked before the work whose result it holds,
// so that an output path's typo is found before a verdict, not after it, turning its exit code.
std::string why_unwritable(const std::filesystem::path& file);

// UsageError naming `flag` and the path when why_unwritable says something.
void require_writable(const std::filesystem::path& file, const std::string& flag);

}  // namespace rocebench
