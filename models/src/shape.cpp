#include "shape.hpp"

#include <nlohmann/json.hpp>

namespace rocebench::models {

const DeclaredRate& images_rate() {
  static const DeclaredRate rate = [] {
    for (const nlohmann::json& declaration : nlohmann::json::parse(shape_declarations())) {
      for (const auto& step : declaration.at("steps"))
        if (step == "models.scaling") return declared_rate(declaration, "images_per_s");
    }
    throw std::logic_error("models/shape.json declares no models.scaling");
  }();
  return rate;
}

}  // namespace rocebench::models
