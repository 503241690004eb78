#include "shape.hpp"

#include <nlohmann/json.hpp>

namespace rocebench::models {

namespace {

// images_per_s as the declaration of `step` declares it.
DeclaredRate images_rate_of(const std::string& step) {
  for (const nlohmann::json& declaration : nlohmann::json::parse(shape_declarations())) {
    for (const auto& declared : declaration.at("steps"))
      if (declared == step) return declared_rate(declaration, "images_per_s");
  }
  throw std::logic_error("models/shape.json declares no " + step);
}

}  // namespace

const DeclaredRate& images_rate() {
  static const DeclaredRate rate = images_rate_of("models.scaling");
  return rate;
}

const DeclaredRate& predicted_images_rate() {
  static const DeclaredRate rate = images_rate_of("models.predict");
  return rate;
}

}  // namespace rocebench::models
