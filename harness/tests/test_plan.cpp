#include <gtest/gtest.h>

#include "commands.hpp"
#include "plan.hpp"
#include "rocebench/common/errors.hpp"

using namespace rocebench;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_plan(text, "p.json", all_step_kinds());
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(Plan, BuiltinLocalPlanIsValid) {
  const Plan p = load_plan(kBuiltinLocalPlan, all_step_kinds());
  EXPECT_EQ(p.name, "local");
  EXPECT_EQ(p.launcher.type, "local");
  EXPECT_EQ(p.launcher.ranks, 4);
  ASSERT_FALSE(p.steps.empty());
  EXPECT_EQ(p.steps[0].kind->name, "harness.rendezvous");
  EXPECT_EQ(p.sha256.size(), 64u);
}

TEST(Plan, ErrorsNameFileLineAndField) {
  EXPECT_EQ(error_of("{\n \"name\": \"x\",\n \"steps\": [\n  {\"step\": \"harness.rendezvous\",\n   \"params\": {\"rounds\": -3}}\n ]\n}"),
            "p.json:5: field 'steps[0].params.rounds': must be >= 0");
  EXPECT_EQ(error_of("{\n \"name\": \"x\",\n \"stepz\": []\n}").rfind("p.json:1: field 'steps': is required", 0), 0u)
      << error_of("{\n \"name\": \"x\",\n \"stepz\": []\n}");
  EXPECT_EQ(error_of("{\"name\": \"x\",\n \"steps\": [{\"step\": \"harness.rendezvous\"}],\n \"colour\": 1}"),
            "p.json:3: field 'colour': is not a known field");
  EXPECT_EQ(error_of("{\"name\": \"x\",\n \"steps\": [{\"step\": \"harness.rendezvous\", \"params\": {\"round\": 1}}]}"),
            "p.json:2: field 'steps[0].params.round': is not a known field");
  EXPECT_EQ(error_of("{\"name\": \"x\", \"launcher\": {\"type\": \"mpirun\"},\n \"steps\": [{\"step\": \"harness.rendezvous\"}]}"),
            "p.json:1: field 'launcher.hostfile': the mpirun launcher needs a hostfile");
  EXPECT_EQ(error_of("{\"name\": \"x\", \"launcher\": {\"type\": \"ssh\"}, \"steps\": []}").find("p.json:1: field 'launcher.type'"), 0u);
}

TEST(Plan, AnOldSpellingNamesTheNewOne) {
  EXPECT_EQ(error_of("{\"name\": \"x\",\n \"steps\": [{\"step\": \"microbench.probe\", \"params\": {\"iterations\": 5}}]}"),
            "p.json:2: field 'steps[0].params.iterations': 'iterations' is now 'iters'");
  EXPECT_EQ(error_of("{\"name\": \"x\",\n \"steps\": [{\"step\": \"models.train\", \"params\": {\"model\": \"alexnet\", "
                     "\"steps\": 5}}]}"),
            "p.json:2: field 'steps[0].params.steps': 'steps' is now 'iters'");
}

TEST(Plan, UnknownStepListsWhatExists) {
  const std::string e = error_of("{\"name\": \"x\",\n\n \"steps\": [{\"step\": \"collectives.alreduce\"}]}");
  EXPECT_EQ(e.rfind("p.json:3: field 'steps[0].step': unknown step 'collectives.alreduce'; this build has: harness.rendezvous", 0), 0u) << e;
}

TEST(Plan, SyntaxErrorNamesLine) {
  const std::string e = error_of("{\"name\": \"x\",\n \"steps\": [\n  {\"step\": \"harness.rendezvous\"},,\n ]}");
  EXPECT_EQ(e.rfind("p.json:3:", 0), 0u) << e;
}

TEST(Plan, MissingFileIsInputError) { EXPECT_THROW(load_plan("/nonexistent/plan.json", all_step_kinds()), InputError); }

TEST(Plan, BuiltinNightlyPlanIsValidAndPinsItsCounts) {
  const Plan p = load_plan(kBuiltinNightlyPlan, all_step_kinds());
  EXPECT_EQ(p.name, "nightly");
  for (const auto& s : p.steps) {
    if (s.kind->name == "collectives.allreduce") {
      EXPECT_TRUE(s.params.contains("iters") && s.params.contains("warmup") && s.params.contains("tcp_congestion")) << s.params;
    }
  }
}

// A module command's world sizes are bounded by kMaxRanks, so that `train --world-sizes 100000` names
// --world-sizes: the launcher's --ranks must admit exactly as many, or the flag blamed is --ranks again.
TEST(Plan, LauncherRanksAdmitAsManyAsAModuleMayAskFor) {
  EXPECT_EQ(plan_field_schema("/launcher/ranks").at("maximum").get<int>(), kMaxRanks);
}
