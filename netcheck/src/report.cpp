#include "rocebench/netcheck/report.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace rocebench::netcheck {

namespace {

// Where a record belongs in the table: "host" for host-wide checks, else the RDMA device.
std::string group_of(const std::string& subject) { return subject.substr(0, subject.find('/')); }

std::string brief(const json& value) {
  if (value.is_null()) return "-";
  std::string text = value.is_string() ? value.get<std::string>() : value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 48) text.replace(45, std::string::npos, "...");
  return text;
}

std::string label(const std::string& status) {
  if (status == "fail") return "FAIL";
  if (status == "warn") return "WARN";
  if (status == "unverified") return "UNVER";  // not a pass: the setting could not be read
  return status;
}

template <typename T>
void add_unique(std::vector<T>& items, const T& item) {
  if (std::find(items.begin(), items.end(), item) == items.end()) items.push_back(item);
}

}  // namespace

void print_table(std::ostream& out, const std::vector<json>& records) {
  std::vector<std::string> hosts;
  for (const auto& r : records) add_unique(hosts, r.value("host", std::string()));
  for (const auto& host : hosts) {
    std::vector<std::string> groups;
    std::map<std::string, int> counts;
    for (const auto& r : records) {
      if (r.value("host", std::string()) == host) add_unique(groups, group_of(r.value("subject", std::string())));
    }
    out << "== " << host << " ==\n";
    for (const auto& group : groups) {
      out << group << "\n";
      for (const auto& r : records) {
        const std::string subject = r.value("subject", std::string());
        if (r.value("host", std::string()) != host || group_of(subject) != group) continue;
        const std::string status = r.value("status", std::string());
        ++counts[status];
        out << fmt::format("  {:<5} {:<28} {:<16} expected {:<22} observed {}\n", label(status), r.value("check", std::string()),
                           subject, brief(r.value("expected", json())), brief(r.value("observed", json())));
        if (status == "ok") continue;
        if (const auto reason = r.value("reason", std::string()); !reason.empty()) out << "        why: " << reason << "\n";
        if (const auto hint = r.value("hint", std::string()); !hint.empty()) {
          out << (status == "unverified" ? "        to verify: " : "        fix: ") << hint << "\n";
        }
      }
    }
    int total = 0;
    for (const auto& [_, n] : counts) total += n;
    out << fmt::format("{}: {} checks, {} ok, {} fail, {} warn, {} skip, {} unverified\n\n", host, total, counts["ok"],
                       counts["fail"], counts["warn"], counts["skip"], counts["unverified"]);
  }
}

void print_differences(std::ostream& out, const std::vector<Difference>& diffs, std::size_t host_count) {
  if (diffs.empty()) {
    out << "all " << host_count << " hosts have the same settings\n";
    return;
  }
  out << diffs.size() << " settings differ between the " << host_count << " hosts:\n";
  for (const auto& d : diffs) {
    out << "  " << d.check << "  " << d.subject << "\n";
    for (const auto& [value, hosts] : d.values) {
      std::string names;
      for (const auto& h : hosts) names += (names.empty() ? "" : ", ") + h;
      out << fmt::format("    {:<40} {} host{}: {}\n", value.is_null() ? "(absent)" : brief(value), hosts.size(),
                         hosts.size() == 1 ? "" : "s", names);
    }
  }
}

std::vector<CheckRecord> difference_records(const std::vector<Difference>& diffs) {
  std::vector<CheckRecord> out;
  for (const auto& d : diffs) {
    const auto& [common, common_hosts] = d.values.front();
    for (std::size_t i = 1; i < d.values.size(); ++i) {
      for (const auto& host : d.values[i].second) {
        CheckRecord r;
        r.check = "cluster.same_setting";
        r.host = host;
        r.subject = d.subject.empty() ? d.check : d.subject + " " + d.check;
        r.expected = common;
        r.observed = d.values[i].first;
        r.status = Status::fail;
        r.reason = fmt::format("{} of the hosts have the expected value; this one differs", common_hosts.size());
        out.push_back(std::move(r));
      }
    }
  }
  return out;
}

}  // namespace rocebench::netcheck
