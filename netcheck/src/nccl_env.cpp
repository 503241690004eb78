#include "rocebench/netcheck/nccl_env.hpp"

#include <cstdlib>
#include <sstream>

#include "rocebench/common/bounded_read.hpp"
#include "rocebench/common/errors.hpp"

extern char** environ;

namespace rocebench::netcheck {

namespace {

constexpr InputLimits kJobFileLimits{"NCCL environment file", 1 * kMiB, 64 * 1024};

std::string trimmed(std::string s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

// Sets what is not set yet, as NCCL's setenv(..., 0) does.
void offer(NcclEnv& env, const std::string& name, const std::string& value, const std::string& source) {
  if (name.rfind("NCCL_", 0) == 0) env.settings.emplace(name, NcclSetting{value, source});
}

// NAME=VALUE lines. `strict`: a job file the user named, whose other lines are refused.
void read_lines(NcclEnv& env, const std::string& text, const std::string& file, bool strict) {
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    line = trimmed(line);
    if (line.empty() || line[0] == '#') continue;
    if (strict && line.rfind("export ", 0) == 0) line = trimmed(line.substr(7));
    const auto eq = line.find('=');
    if (eq == std::string::npos || eq == 0) {
      if (strict) throw InputError(file, number, "", "expected NAME=VALUE (as `env | grep NCCL_` prints it), found '" + printable_excerpt(line, 60) + "'");
      continue;
    }
    std::string value = trimmed(line.substr(eq + 1));
    if (strict && value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    offer(env, trimmed(line.substr(0, eq)), value, file + ":" + std::to_string(number));
  }
}

void read_host_file(NcclEnv& env, const HostFs& fs, const std::string& host_path) {
  env.read.push_back(host_path);
  if (const auto text = fs.read(host_path)) read_lines(env, *text, host_path, false);
}

}  // namespace

NcclEnv read_nccl_env(const HostFs& fs, const NcclSources& sources) {
  NcclEnv env;
  // Highest precedence first: each later source only fills what is still unset.
  for (auto it = sources.job_files.rbegin(); it != sources.job_files.rend(); ++it) {
    env.read.push_back(it->string());
    read_lines(env, read_input(*it, kJobFileLimits), it->string(), true);
  }
  if (sources.environment) {
    env.read.push_back("the environment");
    for (char** e = environ; e && *e; ++e) {
      const std::string entry(*e);
      const auto eq = entry.find('=');
      if (eq != std::string::npos) offer(env, entry.substr(0, eq), entry.substr(eq + 1), "environment");
    }
  }
  const NcclSetting* conf = env.find("NCCL_CONF_FILE");
  read_host_file(env, fs, conf ? conf->value : sources.home + "/.nccl.conf");
  read_host_file(env, fs, "/etc/nccl.conf");
  return env;
}

NcclNameList parse_nccl_name_list(const std::string& value, bool with_ports) {
  NcclNameList list;
  std::string rest = trimmed(value);
  if (!rest.empty() && rest[0] == '^') {
    list.exclude = true;
    rest = rest.substr(1);
  }
  std::istringstream items(rest);
  for (std::string item; std::getline(items, item, ',');) {
    item = trimmed(item);
    if (item.empty()) continue;
    NcclNameList::Entry e;
    if (item[0] == '=') {
      e.exact = true;
      item = item.substr(1);
    }
    const auto colon = with_ports ? item.find(':') : std::string::npos;
    if (colon != std::string::npos) {
      e.port = std::atoi(item.substr(colon + 1).c_str());
      item = item.substr(0, colon);
    }
    e.name = item;
    list.entries.push_back(e);
  }
  return list;
}

}  // namespace rocebench::netcheck
