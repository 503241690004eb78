// `--fabric-from`: α and β of the node level fitted to allreduce records through the fabric model's
// own formulas. Records made by a known fabric give it back exactly; with noise, within a tolerance;
// sweeps that cannot tell α from β are refused, naming the flag and the run.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/temp_dir.hpp"
#include "rocebench/models/calibrate.hpp"
#include "rocebench/models/predict.hpp"

namespace rocebench::models {
namespace {

// One rank a node at 1 Gbit/s with 50 us a step: the netns bed's hosts, roughly.
Fabric known_fabric() {
  return parse_fabric(R"({"name": "known", "gpus_per_node": 1, "ps_servers": 2,
    "intra_node": {"bandwidth_GBps": 10, "latency_us": 1, "source": "unused"},
    "inter_node": {"nic_Gbps": 1, "latency_us": 50, "source": "by hand"}})",
                      "known.json");
}

// collectives.allreduce records as the sweep writes them, timed by `fabric` (times `noise`).
std::vector<json> sweep_records(const Fabric& fabric, const std::vector<std::string>& algorithms, const std::vector<int>& worlds,
                                const std::vector<std::size_t>& sizes, const std::function<double()>& noise = [] { return 1.0; }) {
  std::vector<json> records{{{"kind", "run"}, {"hosts", {{{"hostname", "h0"}, {"ranks", {0}}}, {{"hostname", "h1"}, {"ranks", {1}}}}}}};
  for (const std::string& algorithm : algorithms) {
    const SyncMode mode = parse_sync_modes(algorithm, "test").front();
    for (int n : worlds)
      for (std::size_t bytes : sizes) {
        json params = {{"algorithm", algorithm}, {"transport", "tcp"}, {"bytes", bytes}, {"ranks", n}};
        if (algorithm == "ps") params["servers"] = std::min(fabric.ps_servers, n);
        const double us = 1e3 * allreduce_ms(fabric, mode, {n, n, 1}, bytes) * noise();
        records.push_back({{"kind", "result"}, {"step", "collectives.allreduce"}, {"status", "ok"}, {"world", n},
                           {"params", params}, {"metrics", {{"time_us", us}, {"busbw_GBps", 1}}}});
      }
  }
  return records;
}

const std::vector<std::size_t> kSizes{1024, 16384, 262144, 1048576, 4194304};
const double kAlphaMs = 0.05, kBetaMsPerByte = 8e-6;  // 50 us, 1 Gbit/s

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(CalibrateFabric, RecoversAKnownFabricExactlyFromNoiseFreeRecords) {
  const FabricFit fit = fit_records(sweep_records(known_fabric(), {"rd", "ring", "ps"}, {2, 3, 4}, kSizes), {"runA"}, "--fabric-from");
  ASSERT_EQ(fit.fits.size(), 3u);
  EXPECT_EQ(fit.fits.front().algorithm, "ring");
  for (const LevelFit& f : fit.fits) {
    EXPECT_NEAR(f.node.alpha_ms, kAlphaMs, 1e-9 * kAlphaMs) << f.algorithm;
    EXPECT_NEAR(f.node.beta_ms_per_byte, kBetaMsPerByte, 1e-9 * kBetaMsPerByte) << f.algorithm;
    EXPECT_FALSE(f.alpha_clamped);
    EXPECT_LT(f.rms_relative, 1e-9);
    EXPECT_EQ(f.points.size(), 15u);
  }
  EXPECT_EQ(fit.transport, "tcp");
  // The fitted values plug straight into the model: a world size the runs never had costs the same.
  const Fabric known = known_fabric();
  for (SyncMode mode : {SyncMode::ring, SyncMode::ps, SyncMode::rd}) {
    const Fabric fitted = fit.fabric_for(mode);
    EXPECT_EQ(fitted.gpus_per_node, 1);
    const Placement at64{64, 64, 1};
    EXPECT_NEAR(allreduce_ms(fitted, mode, at64, 25 << 20), allreduce_ms(known, mode, at64, 25 << 20),
                1e-9 * allreduce_ms(known, mode, at64, 25 << 20))
        << to_string(mode);
  }
  EXPECT_EQ(fit.fabric_for(SyncMode::ps).ps_servers, 2);
  // hier and tree have no records of their own: the ring's fit.
  EXPECT_EQ(fit.fabric_for(SyncMode::tree).name, fit.fabric_for(SyncMode::ring).name);
  EXPECT_NE(fit.fabric_for(SyncMode::ps).name, fit.fabric_for(SyncMode::ring).name);
}

TEST(CalibrateFabric, RecoversItWithinAToleranceFromNoisyRecords) {
  std::mt19937 random(42);
  std::uniform_real_distribution<double> five_percent(0.95, 1.05);
  const FabricFit fit = fit_records(sweep_records(known_fabric(), {"ring"}, {2, 4, 8}, kSizes, [&] { return five_percent(random); }),
                                    {"runA"}, "--fabric-from");
  const LevelFit& f = fit.fits.front();
  EXPECT_NEAR(f.node.alpha_ms, kAlphaMs, 0.1 * kAlphaMs);
  EXPECT_NEAR(f.node.beta_ms_per_byte, kBetaMsPerByte, 0.05 * kBetaMsPerByte);
  EXPECT_GT(f.rms_relative, 0.005);
  EXPECT_LT(f.rms_relative, 0.05);
  // Each point's residual is recorded, and they are what the relative RMS is made of.
  const json recorded = fit.to_json();
  const json& points = recorded["fits"][0]["points"];
  ASSERT_EQ(points.size(), 15u);
  double squares = 0;
  for (const json& p : points) {
    EXPECT_DOUBLE_EQ(p["residual_us"].get<double>(), p["fitted_us"].get<double>() - p["measured_us"].get<double>());
    squares += std::pow(p["residual_us"].get<double>() / p["measured_us"].get<double>(), 2);
  }
  EXPECT_NEAR(std::sqrt(squares / 15), recorded["fits"][0]["rms_relative"].get<double>(), 1e-12);
  EXPECT_EQ(recorded["level"], "node");
}

TEST(CalibrateFabric, ALinkThatPassesSmallSizesFasterThanItsRateIsFittedByWhatItCarriesInBulk) {
  // A shaper's burst (or a switch's buffer) lets the small sizes through at twice the rate: β is
  // still the rate of the large ones, and so is the time of a bucket the fit never saw.
  std::vector<json> records = sweep_records(known_fabric(), {"ring", "ps"}, {2, 4}, kSizes);
  for (json& r : records)
    if (r.value("kind", "") == "result" && r["params"]["bytes"].get<std::size_t>() <= 16384)
      r["metrics"]["time_us"] = r["metrics"]["time_us"].get<double>() / 2;
  const FabricFit fit = fit_records(records, {"runA"}, "--fabric-from");
  const Fabric known = known_fabric();
  for (const LevelFit& f : fit.fits) {
    EXPECT_NEAR(f.node.beta_ms_per_byte, kBetaMsPerByte, 0.01 * kBetaMsPerByte) << f.algorithm;
    const SyncMode mode = parse_sync_modes(f.algorithm, "test").front();
    const double bucket_ms = allreduce_ms(known, mode, {8, 8, 1}, 2 << 20);
    EXPECT_NEAR(allreduce_ms(fit.fabric_for(mode), mode, {8, 8, 1}, 2 << 20), bucket_ms, 0.02 * bucket_ms) << f.algorithm;
  }
}

TEST(CalibrateFabric, AStartUpCostBelowZeroIsRefittedWithoutOneAndSaysSo) {
  // Times of a fabric whose step starts 50 us early: no latency_us can be negative, so alpha is 0.
  std::vector<json> records = sweep_records(known_fabric(), {"ring"}, {2, 4}, {16384, 262144, 1048576});
  for (json& r : records)
    if (r.value("kind", "") == "result")
      r["metrics"]["time_us"] = r["metrics"]["time_us"].get<double>() - 2 * (r["world"].get<int>() - 1) * 100.0;
  const LevelFit f = fit_records(records, {"runA"}, "--fabric-from").fits.front();
  EXPECT_TRUE(f.alpha_clamped);
  EXPECT_EQ(f.node.alpha_ms, 0);
  EXPECT_GT(f.node.beta_ms_per_byte, 0);
  EXPECT_GT(f.rms_relative, 0);
  EXPECT_EQ(fit_records(records, {"runA"}, "--fabric-from").fabric_for(SyncMode::ring).inter_latency_us, 0);
}

TEST(CalibrateFabric, SweepsThatCannotTellAlphaFromBetaAreRefused) {
  const Fabric known = known_fabric();
  EXPECT_EQ(error_of([&] { fit_records(sweep_records(known, {"ring"}, {4}, kSizes), {"runA"}, "--fabric-from"); }),
            "--fabric-from: ring allreduce at one world size only (4 ranks): alpha and beta per step need sweeps at two or more "
            "world sizes above one rank");
  // One rank reduces nothing: it does not count as a world size.
  EXPECT_EQ(error_of([&] { fit_records(sweep_records(known, {"ring"}, {1, 4}, kSizes), {"runA"}, "--fabric-from"); })
                .rfind("--fabric-from: ring allreduce at one world size only (4 ranks)", 0),
            0u);
  EXPECT_EQ(error_of([&] { fit_records(sweep_records(known, {"ring"}, {2, 4}, {65536}), {"runA"}, "--fabric-from"); }),
            "--fabric-from: ring allreduce of one size only (65536 bytes): alpha and beta need sweeps of two or more sizes");
  EXPECT_EQ(error_of([&] { fit_records(sweep_records(known, {}, {2, 4}, kSizes), {"runA", "runB"}, "--fabric-from"); }),
            "--fabric-from: no collectives.allreduce records of ring, ps or rd over more than one rank in runA, runB");
  // ring identified, ps not: the whole fit is refused, naming the algorithm.
  std::vector<json> mixed = sweep_records(known, {"ring"}, {2, 4}, kSizes);
  for (const json& r : sweep_records(known, {"ps"}, {4}, kSizes)) mixed.push_back(r);
  EXPECT_EQ(error_of([&] { fit_records(mixed, {"runA"}, "--fabric-from"); }).rfind("--fabric-from: ps allreduce at one world size only", 0), 0u);
  std::vector<json> two_transports = sweep_records(known, {"ring"}, {2, 4}, kSizes);
  two_transports.back()["params"]["transport"] = "verbs";
  EXPECT_EQ(error_of([&] { fit_records(two_transports, {"runA"}, "--fabric-from"); }),
            "--fabric-from: the runs' allreduce records are over tcp and verbs: give runs of one transport");
}

TEST(CalibrateFabric, RunsAreReadFromTheirFoldersAndARunWithoutAllreduceIsNamed) {
  const std::filesystem::path dir = make_temp_dir("calibrate");
  std::filesystem::create_directories(dir / "sweep");
  {
    std::ofstream out(dir / "sweep" / "results.jsonl");
    for (const json& r : sweep_records(known_fabric(), {"ring"}, {2, 4}, kSizes)) out << r.dump() << "\n";
    std::ofstream other(dir / "train.jsonl");
    other << json{{"kind", "result"}, {"step", "models.scaling"}, {"status", "ok"}}.dump() << "\n";
  }
  const FabricFit fit = fit_runs({(dir / "sweep").string()}, "--fabric-from");
  EXPECT_NEAR(fit.fits.front().node.alpha_ms, kAlphaMs, 1e-9);
  const std::string train = (dir / "train.jsonl").string();
  EXPECT_EQ(error_of([&] { fit_runs({(dir / "sweep").string(), train}, "--fabric-from"); }),
            fmt::format("--fabric-from: run '{}' holds no collectives.allreduce records of ring, ps or rd over more than one "
                        "rank (rocebench allreduce makes them)",
                        train));
  EXPECT_EQ(error_of([&] { fit_runs({(dir / "nowhere").string()}, "--fabric-from"); }),
            fmt::format("--fabric-from: run '{}': no such results file or folder with a results.jsonl", (dir / "nowhere").string()));

  // Through models.predict: the fit's fabric per sync mode, and the fit with its residuals in every record.
  const auto flag_of = [](const std::string& key) { return predict_options().at(key).flag; };
  const json params = {{"model", "resnet50"}, {"timeline", "cpu-resnet50-fp32-b2"}, {"fabric_from", (dir / "sweep").string()},
                       {"world_sizes", {1, 8}}, {"sync", "ring,hier"}};
  const PredictInputs in = predict_inputs(params, flag_of);
  const std::vector<ResultRecord> records = predict_records(in);
  ASSERT_EQ(records.size(), 4u);
  for (const ResultRecord& r : records) {
    EXPECT_EQ(r.params["fabric"], "fitted");
    EXPECT_EQ(r.samples["predicted_from"]["fabric_fit"]["fits"][0]["points"].size(), 10u);
    EXPECT_EQ(r.samples["predicted_from"]["fabric"]["gpus_per_node"], 1);
  }
  EXPECT_EQ(records[1].metrics["nodes"], 8);
  json both = params;
  both["fabric"] = "25g-roce";
  EXPECT_EQ(error_of([&] { predict_inputs(both, flag_of); }), "give one of --fabric and --fabric-from");
}

}  // namespace
}  // namespace rocebench::models
