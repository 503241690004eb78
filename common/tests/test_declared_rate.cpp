#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "rocebench/common/declared_rate.hpp"
#include "rocebench/common/errors.hpp"

using namespace rocebench;
using json = nlohmann::json;

namespace {

const json kTraining = json::parse(R"({"steps": ["lab.train"], "x": "world", "sampled": "step_ms",
  "metrics": {"images_per_s": {"unit": "images/s", "better": "higher", "samples": "inverse of sampled", "count": ["batch", "ranks"]},
              "step_ms": {"unit": "ms", "better": "lower"},
              "loss": {"unit": "loss", "better": "none"}}})");

}  // namespace

// images/s = batch × ranks / the step time in seconds, read from the declaration.
TEST(DeclaredRate, ImagesPerSecondOfAStepTime) {
  const DeclaredRate rate = declared_rate(kTraining, "images_per_s");
  EXPECT_EQ(rate.count, (std::vector<std::string>{"batch", "ranks"}));
  EXPECT_DOUBLE_EQ(rate.units_per_second, 1e3);
  EXPECT_DOUBLE_EQ(rate.of({{"batch", 16}, {"ranks", 4}}, 200), 320);  // 64 images in 0.2 s
  EXPECT_EQ(rate.of({{"batch", 16}, {"ranks", 4}}, 200), 16.0 * 4 * 1e3 / 200) << "as the figure was written by hand";
  // A rank alone records no ranks: its batch a step.
  EXPECT_DOUBLE_EQ(rate.of({{"batch", 16}}, 200), 80);
  EXPECT_TRUE(rate.counted_by({{"batch", 16}, {"ranks", 1}}));
  EXPECT_FALSE(rate.counted_by({{"batch", 16}}));
  EXPECT_FALSE(rate.counted_by({{"batch", "16"}, {"ranks", 1}}));
}

TEST(DeclaredRate, TimeUnits) {
  EXPECT_EQ(units_per_second("s"), 1.0);
  EXPECT_EQ(units_per_second("ms"), 1e3);
  EXPECT_EQ(units_per_second("us"), 1e6);
  EXPECT_EQ(units_per_second("ns"), 1e9);
  EXPECT_FALSE(units_per_second("GBps"));
}

TEST(DeclaredRate, AMetricThatDeclaresNoneIsAnInputErrorNamingIt) {
  for (const char* metric : {"loss", "step_ms", "fan_rpm"}) {
    try {
      declared_rate(kTraining, metric);
      ADD_FAILURE() << metric;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("metric '") + metric + "' declares no rate"), std::string::npos) << e.what();
    }
  }
  json untimed = kTraining;
  untimed["metrics"]["step_ms"]["unit"] = "steps";
  try {
    declared_rate(untimed, "images_per_s");
    ADD_FAILURE() << "a rate over steps";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the sampled metric 'step_ms' is not a time"), std::string::npos) << e.what();
  }
}
