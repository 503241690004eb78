#pragma once
// The NCCL settings a job on a host would run with, and where each came from. NCCL reads
// /etc/nccl.conf and the user's file (NCCL_CONF_FILE, else ~/.nccl.conf); the environment wins over
// both (a file only sets what is not set yet, the user's before the system's).
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "rocebench/common/host_fs.hpp"

namespace rocebench::netcheck {

struct NcclSetting {
  std::string value;
  std::string source;  // "/etc/nccl.conf:3", "environment", "job.env:7"
};

struct NcclSources {
  bool environment = false;  // this process's environment: only when the host judged is this one
  std::string home = "/root";  // whose ~/.nccl.conf, a host path under the root
  std::vector<std::filesystem::path> job_files;  // a job's NCCL_* lines (--nccl-env), over everything else
};

struct NcclEnv {
  std::map<std::string, NcclSetting> settings;  // NCCL_* name -> the value NCCL would use
  std::vector<std::string> read;                // every place looked at, for a check that finds nothing
  const NcclSetting* find(const std::string& name) const {
    const auto it = settings.find(name);
    return it == settings.end() ? nullptr : &it->second;
  }
};

// Bad lines of a job file (not NAME=VALUE, `export` allowed) throw InputError at file:line; the
// host's own files are read as NCCL reads them, skipping what it would skip.
NcclEnv read_nccl_env(const HostFs& fs, const NcclSources& sources);

// NCCL_IB_HCA / NCCL_SOCKET_IFNAME syntax: "^" before the list excludes, "=" before an entry
// matches the whole name (else a prefix), ":PORT" after an HCA entry names its port.
struct NcclNameList {
  bool exclude = false;
  struct Entry {
    std::string name;
    bool exact = false;
    int port = 0;  // 0: any port
    bool matches(const std::string& candidate) const { return exact ? candidate == name : candidate.rfind(name, 0) == 0; }
  };
  std::vector<Entry> entries;
};
NcclNameList parse_nccl_name_list(const std::string& value, bool with_ports);

}  // namespace rocebench::netcheck
