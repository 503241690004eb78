#include "rocebench/common/declared_rate.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "rocebench/common/errors.hpp"

namespace rocebench {

std::optional<double> units_per_second(std::string_view unit) {
  if (unit == "s") return 1.0;
  if (unit == "ms") return 1e3;
  if (unit == "us") return 1e6;
  if (unit == "ns") return 1e9;
  return std::nullopt;
}

double DeclaredRate::count_of(const nlohmann::json& params) const {
  double n = 1;
  for (const auto& name : count) {
    const auto it = params.find(name);
    if (it != params.end() && it->is_number()) n *= it->get<double>();
  }
  return n;
}

bool DeclaredRate::counted_by(const nlohmann::json& params) const {
  for (const auto& name : count) {
    const auto it = params.find(name);
    if (it == params.end() || !it->is_number() || !(it->get<double>() > 0)) return false;
  }
  return true;
}

double DeclaredRate::of(const nlohmann::json& params, double sample) const {
  return count_of(params) * units_per_second / sample;
}

DeclaredRate declared_rate(const nlohmann::json& step_declaration, std::string_view metric) {
  const auto fail = [&](const std::string& why) {
    return InputError(fmt::format("metric '{}' declares no rate over its step's sampled time: {}", metric, why));
  };
  const nlohmann::json& metrics = step_declaration.at("metrics");
  const auto m = metrics.find(std::string(metric));
  if (m == metrics.end()) throw fail("not declared");
  const auto count = m->find("count");
  if (m->value("samples", "") != "inverse of sampled" || count == m->end() || !count->is_array())
    throw fail("no \"samples\": \"inverse of sampled\" with a \"count\"");
  const std::string sampled = step_declaration.value("sampled", "");
  const auto s = metrics.find(sampled);
  const std::optional<double> per_second = s == metrics.end() ? std::nullopt : units_per_second(s->value("unit", ""));
  if (!per_second) throw fail(fmt::format("the sampled metric '{}' is not a time in s, ms, us or ns", sampled));
  DeclaredRate rate;
  rate.count = count->get<std::vector<std::string>>();
  rate.units_per_second = *per_second;
  return rate;
}

}  // namespace rocebench
