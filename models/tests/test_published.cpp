// Published scale-out tables (issue #42): the shipped files parse against their schema, every point
// is predicted and its error computed; a bad file is named by file, line and field.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "rocebench/common/errors.hpp"
#include "rocebench/models/published.hpp"

namespace rocebench::models {
namespace {

TEST(Published, ShippedTablesParseAndEveryPointGetsAnError) {
  const std::vector<std::string> names = shipped_published();
  ASSERT_GE(names.size(), 2u);
  std::size_t points = 0;
  for (const std::string& name : names) {
    const PublishedTable t = load_published(name);
    EXPECT_FALSE(t.source.value("url", "").empty()) << name;
    EXPECT_FALSE(t.source.value("stated", "").empty()) << name;
    const std::vector<PublishedError> errors = predict_published(t);
    std::size_t expected = 0;
    for (const PublishedSeries& s : t.series) {
      EXPECT_FALSE(s.assumed.empty()) << name;
      expected += s.points.size();
    }
    ASSERT_EQ(errors.size(), expected) << name;
    for (const PublishedError& e : errors) {
      EXPECT_GT(e.predicted, 0) << name << " " << e.model;
      EXPECT_LE(e.predicted, 1 + 1e-9) << name << " " << e.model;  // more GPUs never beat the base's per-GPU rate here
      EXPECT_NEAR(e.error_pct, 100 * (e.predicted - e.published) / e.published, 1e-9);
    }
    points += errors.size();
    EXPECT_NE(published_report(t, errors).find("# assumed for "), std::string::npos);
  }
  EXPECT_GE(points, 3u);
}

TEST(Published, TheErrorIsTheEfficiencyAgainstTheBase) {
  // VGG16 moves 528 MB of gradients a step: on 25 Gbit/s its efficiency at 512 GPUs is well under Inception's.
  const std::vector<PublishedError> errors = predict_published(load_published("horovod-2018"));
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].model, "inception3");
  EXPECT_EQ(errors[1].model, "vgg16");
  EXPECT_GT(errors[0].predicted, errors[1].predicted);
  EXPECT_EQ(errors[1].timeline, "derived for p100 (fp32) scaled to 154 images/s");
}

TEST(Published, BadFileIsNamedByFileLineAndField) {
  const std::string file = ::testing::TempDir() + "published_bad.json";
  const auto error_of = [&](const std::string& text) {
    std::ofstream(file) << text;
    try {
      predict_published(load_published(file));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  const std::string fabric =
      R"("fabric": {"name": "f", "gpus_per_node": 4, "intra_node": {"bandwidth_GBps": 10, "latency_us": 1, "source": "s"},)"
      R"( "inter_node": {"nic_Gbps": 25, "latency_us": 5, "source": "s"}})";
  const std::string source = R"("source": {"citation": "c", "url": "u", "where": "w", "stated": "s"})";
  const auto table = [&](const std::string& series) {
    return "{\"name\": \"t\",\n" + source + ",\n" + fabric + ",\n\"series\": [\n" + series + "\n]}\n";
  };
  const std::string good =
      R"({"model": "vgg16", "device": "h100", "batch": 32, "images_per_s_one_gpu": 500, "sync": "ring", "bucket_mb": 25, )"
      R"("base_gpus": 1, "points": [{"gpus": 8, "efficiency": 0.8}], "assumed": "a")";
  EXPECT_EQ(error_of(table(good + "}")), "(accepted)");
  EXPECT_NE(error_of(table(good + ", \"colour\": 1}")).find(file + ":5: field 'series[0].colour'"), std::string::npos)
      << error_of(table(good + ", \"colour\": 1}"));
  std::string other_device = good;
  other_device.replace(other_device.find("h100"), 4, "h900");
  EXPECT_NE(error_of(table(other_device + "}")).find("field 'series[0].device': unknown device 'h900'"), std::string::npos)
      << error_of(table(other_device + "}"));
  std::string not_whole_nodes = good;
  not_whole_nodes.replace(not_whole_nodes.find("\"gpus\": 8"), 9, "\"gpus\": 6");
  EXPECT_NE(error_of(table(not_whole_nodes + "}")).find("field 'series[0].points'"), std::string::npos)
      << error_of(table(not_whole_nodes + "}"));
}

}  // namespace
}  // namespace rocebench::models
