#pragma once
// Record fixtures in the shape the measuring modules emit (DESIGN.md, record contract).
#include <filesystem>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"

namespace rocebench::reports::testing {

// A fresh folder; all of them are removed when the test process exits.
std::filesystem::path temp_dir();
std::string read_file(const std::filesystem::path& file);
void write_file(const std::filesystem::path& file, const std::string& text);
// Writes records as results.jsonl lines.
std::filesystem::path write_records(const std::filesystem::path& file, const std::vector<json>& records);

json train(const std::string& run, const std::string& model, const std::string& mode, int gpus, double images_per_s);
// A run that measured ring allreduce training (models.scaling, replay, tcp) at 1, 2 and 4 ranks and
// predicted (models.predict on 25g-roce) ring and ps at 1, 8 and 128 GPUs: efficiency 0.9 measured,
// 0.8 and 0.2 predicted, and ring's what-if at 128 (needs 38.2 Gbit/s per node or 50 MiB buckets for 90%).
std::vector<json> measured_and_predicted_run(const std::string& run);
json collective(const std::string& run, const std::string& op, int world, double bytes, double time_us, double busbw,
                const std::string& transport = "verbs");
json probe(const std::string& run, const std::string& transport, const std::string& test, double bytes, double value,
           const std::string& host = "node01", const std::string& peer = "node02");
json pair(const std::string& run, const std::string& src, const std::string& dst, double gbps, bool flagged);
json check(const std::string& run, const std::string& host, const std::string& id, const json& observed, bool ok);
// A check that could not look (status skip) on `host`, with its reason.
json skipped_check(const std::string& run, const std::string& host, const std::string& id, const std::string& reason);
// A step skipped before it measured anything: no size, no metrics, just the reason.
json skipped_result(const std::string& run, const std::string& step, const std::string& host, int world, const json& params,
                    const std::string& reason);

// The run record harness/src/run.cpp writes first, for hosts given with their link speed in Mb/s
// (0: no netdev reported one); host i holds ranks 2i and 2i+1.
json run_record(const std::string& run, const std::string& time, const std::vector<std::pair<std::string, int>>& hosts);

// full_run() measured again: every metric and sample drawn with 1% noise (seeded), raw samples kept.
std::vector<json> noisy_run(const std::string& run, unsigned seed);

// A run with every kind of record: 1..8 GPU training, an allreduce sweep at 2 and 4 ranks,
// probes on verbs and TCP, a 3-host all-pairs matrix with a bad host, netcheck on two hosts.
std::vector<json> full_run(const std::string& run);

std::filesystem::path source_dir();  // reports/tests/data

}  // namespace rocebench::reports::testing
