#pragma once
// Errors and the exit codes of DESIGN.md. Each error class maps to exactly one exit code.
#include <stdexcept>
#include <string>
#include <string_view>

namespace rocebench {

enum ExitCode : int {
  kExitOk = 0,
  kExitCheckFailed = 1,  // a check or threshold failed
  kExitBadInput = 2,     // bad usage or bad input
  kExitInfra = 3,        // peer lost, device error, timeout
};

// What the user gave, as an error message quotes it: bytes that are not printable ASCII as \xNN, cut
// after about `max_chars` characters ("…" and the full length after a cut), so that a 10 MB value or a
// binary file gives a short, safe line.
std::string printable_excerpt(std::string_view text, std::size_t max_chars = 80);

// nlohmann::json's parse error message, with what it quotes ("last read: '…'") cut to a printable
// excerpt: an unterminated 10 MB string is not echoed whole.
std::string json_parse_message(std::string_view what);

// Bad usage or bad input (exit 2). `where` names the file and line when there is one.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
  InputError(const std::string& file, int line, const std::string& field, const std::string& message);
};

// The infrastructure failed us: a peer vanished, a deadline passed, a device errored (exit 3).
class InfraError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The same as InfraError, for a wait whose deadline passed.
class DeadlineExceeded : public InfraError {
 public:
  using InfraError::InfraError;
};

// A device or library the step needs is missing here (no RDMA device, no GPU, built without CUDA):
// not an exit code but a skip. Whoever runs the step records `status: "skip"` with this reason; it
// never falls back to something else or pretends.
class Unavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "file:line: field 'x': message", leaving out the parts that are unknown (line 0, empty field).
std::string located_message(const std::string& file, int line, const std::string& field, const std::string& message);

}  // namespace rocebench
