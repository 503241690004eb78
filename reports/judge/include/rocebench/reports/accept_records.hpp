#pragma once
// An acceptance as `rocebench accept` recorded it: its nodes, its profile's document and each stage
// run with its records, read back from its folder.
#include <filesystem>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/reports/accept_profile.hpp"

namespace rocebench::reports::accept {

// ---- what accept saw -----------------------------------------------------------------------
// `rocebench accept` runs its stages, each a run of its own in <dir>/stages/NN-label/ (results.jsonl),
// and records in <dir>/accept.jsonl (event records) what it ran: the nodes and the profile
// (accept.start), each stage run's group and exit code (accept.stage), and its end (accept.end).
// Every verdict below is a function of those records and a profile alone, so `rocebench report
// --accept DIR` judges a finished acceptance again, under its own profile or another.

inline constexpr const char* kAcceptRecords = "accept.jsonl";

// A node as the operator named it (hostfile line, emulated host) and as its records name it (its row).
struct Node {
  std::string name;
  std::string host;
  bool operator==(const Node&) const = default;
};

// One stage's run on a group of nodes.
struct StageRun {
  std::string stage;   // hosts | links | allreduce | gpu | train
  std::string label;   // its folder's name after the number: hosts, hosts-NODE, links-retry, bisect-4
  std::string folder;  // relative to the acceptance's folder: stages/NN-label
  std::vector<Node> group;
  int exit_code = 0;
  std::string lost;           // the message of a rank it lost (rank.lost), if any
  std::vector<json> records;  // its results.jsonl
  // The run went to its end (exit 0 or 1): its records say what it found (a failed check is a finding).
  bool completed() const;
};

// An acceptance as recorded.
struct Acceptance {
  std::string run;         // the acceptance's run id
  std::vector<Node> nodes;  // every node, in the operator's order (the verdict's rows)
  std::string profile_file;
  json profile = json::object();  // the profile's document it ran under
  std::vector<StageRun> runs;     // in the order they ran
  bool finished = false;          // accept.end was recorded
  std::string time;               // when it started (accept.start's time, RFC 3339)
  bool quick = false;             // accept --quick: its hosts, their ring neighbours' links and GPUs, nothing else
  double elapsed_s = 0;           // from start to accept.end (0 when it did not end)
};

json start_record(const std::string& run, const std::vector<Node>& nodes, const Profile& profile, bool quick = false);
json stage_record(const std::string& run, const StageRun& s);  // without its records (they are in its folder)
json end_record(const std::string& run, std::size_t runs, double elapsed_s);
// Reads <dir>/accept.jsonl and each stage run's results.jsonl. InputError naming the folder or the
// file and line when it is not an acceptance's folder or a record is not what accept writes.
Acceptance load_acceptance(const std::filesystem::path& dir);

}  // namespace rocebench::reports::accept
