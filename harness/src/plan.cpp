#include "plan.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/common/bounded_read.hpp"
#include "rocebench/common/cli.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/common/sha256.hpp"

namespace rocebench {

std::string plan_schema_text();  // generated from harness/plans/plan.schema.json

namespace {

// Reports the first schema error at its line: the one a user fixes first.
void validate_at(const JsonSchema& schema, const LocatedJson& doc, const json& value, const std::string& base) {
  const auto errors = schema.validate(value);
  if (!errors.empty()) doc.fail(base + errors.front().pointer, errors.front().message);
}

}  // namespace

const json& plan_field_schema(const std::string& field) {
  static const json schema = json::parse(plan_schema_text());
  std::string pointer;
  std::stringstream keys(field.substr(1));
  for (std::string key; std::getline(keys, key, '/');) pointer += "/properties/" + key;
  return schema.at(json::json_pointer(pointer));
}

Plan parse_plan(const std::string& text, const std::string& file, const std::vector<StepKind>& kinds) {
  static const JsonSchema plan_schema(json::parse(plan_schema_text()));
  const LocatedJson doc = parse_located(text, file);
  validate_at(plan_schema, doc, doc.value, "");

  Plan plan;
  plan.file = file;
  plan.text = text;
  plan.sha256 = sha256_hex(text);
  plan.document = doc.value;
  plan.name = doc.value.at("name");
  plan.deadline_s = doc.value.value("deadline_s", plan.deadline_s);
  plan.run_timeout_s = doc.value.value("run_timeout_s", plan.run_timeout_s);
  plan.history = doc.value.value("history", "");
  plan.history_reruns = doc.value.value("history_reruns", 0);
  if (doc.value.contains("launcher")) {
    const json& l = doc.value["launcher"];
    plan.launcher.type = l.at("type");
    plan.launcher.ranks = l.value("ranks", 1);
    plan.launcher.hostfile = l.value("hostfile", "");
    plan.launcher.ranks_per_host = l.value("ranks_per_host", 0);
    plan.launcher.extra_args = l.value("extra_args", std::vector<std::string>{});
    if (l.contains("emulated_hosts")) {
      plan.launcher.emulated_link_rate = l["emulated_hosts"].at("link_rate");
      if (plan.launcher.type != "local") doc.fail("/launcher/emulated_hosts", "emulated hosts are for the local launcher only");
    }
    plan.launcher.pin_cpus = l.value("pin_cpus", false);
    if (plan.launcher.type != "local" && plan.launcher.hostfile.empty()) {
      doc.fail("/launcher/hostfile", "the " + plan.launcher.type + " launcher needs a hostfile");
    }
  }

  const json& steps = doc.value.at("steps");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const std::string at = fmt::format("/steps/{}", i);
    const std::string name = steps[i].at("step");
    auto kind = std::find_if(kinds.begin(), kinds.end(), [&](const StepKind& k) { return k.name == name; });
    if (kind == kinds.end()) {
      std::vector<std::string> known;
      for (const auto& k : kinds) known.push_back(k.name);
      doc.fail(at + "/step", fmt::format("unknown step '{}'; this build has: {}", name, fmt::join(known, ", ")));
    }
    PlanStep step{&*kind, steps[i].value("label", name), steps[i].value("params", json::object())};
    validate_at(JsonSchema(kind->params_schema), doc, step.params, at + "/params");
    plan.steps.push_back(std::move(step));
  }
  return plan;
}

Plan keep_steps(const Plan& plan, const std::vector<std::string>& step_kinds, const std::vector<StepKind>& kinds) {
  if (step_kinds.empty()) return plan;
  std::set<std::string> has;
  for (const auto& s : plan.steps) has.insert(s.kind->name);
  for (const auto& k : step_kinds) {
    if (!has.count(k)) {
      throw UsageError(fmt::format("rocebench run: --steps {}: the plan '{}' has no step of that kind (it has: {})", printable_excerpt(k),
                                   plan.name, fmt::join(has, ", ")));
    }
  }
  json doc = plan.document;
  json kept = json::array();
  for (const auto& s : doc["steps"]) {
    if (std::find(step_kinds.begin(), step_kinds.end(), s.value("step", "")) != step_kinds.end()) kept.push_back(s);
  }
  doc["steps"] = kept;
  return parse_plan(doc.dump(2) + "\n", plan.file, kinds);
}

Plan load_plan(const std::string& path, const std::vector<StepKind>& kinds) {
  if (path == kBuiltinLocalPlan) return parse_plan(builtin_local_plan_text(), path, kinds);
  if (path == kBuiltinNightlyPlan) return parse_plan(builtin_nightly_plan_text(), path, kinds);
  static constexpr InputLimits kPlanLimits{"plan", 16 * kMiB};  // hand-written, a few KB
  return parse_plan(read_input(path, kPlanLimits), path, kinds);
}

}  // namespace rocebench
