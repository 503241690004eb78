#pragma once
// What tests may ask the CPU engine beyond the Engine interface.
#include "rocebench/models/engine.hpp"

namespace rocebench::models {

// How many node outputs of a cpu engine live in a blocked oneDNN layout (0 for another engine).
int cpu_blocked_activations(const Engine& engine);

}  // namespace rocebench::models
