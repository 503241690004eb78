// Profiles: the built-in one, user overrides, and errors that name file, line and field.
#include <gtest/gtest.h>

#include "fixture_host.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/netcheck/profile.hpp"

using namespace rocebench;
using namespace rocebench::netcheck;

namespace {

std::string error_of(const std::string& text, const std::string& file = "site.json") {
  try {
    parse_profile(text, file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(Profile, BuiltInLosslessRoce) {
  const Profile p = load_profile("lossless-roce");
  EXPECT_EQ(p.name, "lossless-roce");
  EXPECT_EQ(p.file, "built-in");
  EXPECT_EQ(p.at("/roce/pfc_priorities"), json::array({3}));
  EXPECT_EQ(p.at("/roce/trust"), "dscp");
  EXPECT_EQ(p.at("/roce/traffic_dscp"), 26);
  EXPECT_EQ(p.at("/roce/cnp_dscp"), 48);
  EXPECT_EQ(p.at("/roce/cnp_priority"), 6);
  EXPECT_EQ(p.at("/link/min_mtu"), 4200);
  EXPECT_EQ(p.at("/link/active_mtu"), 4096);
  EXPECT_EQ(builtin_profile_names(), std::vector<std::string>{"lossless-roce"});
}

TEST(Profile, CompiledInMatchesTheFile) {
  const auto file = fixture::read_file(fixture::fs::path(ROCEBENCH_SOURCE_DIR) / "netcheck/profiles/lossless-roce.json");
  EXPECT_EQ(load_profile("lossless-roce").values, json::parse(file));
}

TEST(Profile, UserProfileOverridesAnyValue) {
  const Profile p = parse_profile(R"({
  "name": "pfc-on-4",
  "roce": {"pfc_priorities": [4], "ecn_np_priorities": [4], "dscp_to_priority": {"34": 4}},
  "link": {"rate_gbps": 400}
})",
                                  "site.json");
  EXPECT_EQ(p.name, "pfc-on-4");
  EXPECT_EQ(p.at("/roce/pfc_priorities"), json::array({4}));
  EXPECT_EQ(p.at("/roce/dscp_to_priority"), json({{"34", 4}}));  // a table is a value: replaced whole
  EXPECT_EQ(p.at("/roce/trust"), "dscp");                        // the rest comes from lossless-roce
  EXPECT_EQ(p.at("/link/rate_gbps"), 400);
  EXPECT_FALSE(p.values.contains("extends"));
}

TEST(Profile, UnknownKeyNamesFileLineAndField) {
  EXPECT_EQ(error_of("{\n  \"roce\": {\n    \"pfc_prioritys\": [3]\n  }\n}"),
            "site.json:3: field 'roce.pfc_prioritys': is not a known field");
  EXPECT_EQ(error_of("{\"name\": \"x\",\n\"lnk\": {}}"), "site.json:2: field 'lnk': is not a known field");
}

TEST(Profile, BadValuesNameTheirLine) {
  const std::string e = error_of("{\n\"roce\": {\n\"pfc_priorities\": [3, 9]}}");
  EXPECT_EQ(e.rfind("site.json:3: field 'roce.pfc_priorities[1]':", 0), 0u) << e;
  EXPECT_EQ(error_of("{\"roce\": {\"cnp_dscp\": \"48\"}}").rfind("site.json:1: field 'roce.cnp_dscp':", 0), 0u);
  EXPECT_EQ(error_of("{\n\"extends\": \"lossy\"}"), "site.json:2: field 'extends': no built-in profile named 'lossy'");
  EXPECT_EQ(error_of("[1]"), "site.json:1: a profile is a JSON object");
  EXPECT_NE(error_of("{\"roce\": }").find("site.json:1"), std::string::npos);
}

TEST(Profile, FilesAndNames) {
  fixture::TempDir dir;
  const auto file = dir.path() / "p.json";
  fixture::write_file(file, "{\n  \"host\": {\"iommu\": [\"translated\"]},\n  \"gpudirect\": {\"acs\": true}\n}\n");
  try {
    load_profile(file.string());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), file.string() + ":3: field 'gpudirect.acs': is not a known field");
  }
  try {
    load_profile("lossles-roce");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("built-in: lossless-roce"), std::string::npos) << e.what();
  }
}
