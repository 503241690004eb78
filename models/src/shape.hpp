#pragma once
// models/shape.json, compiled in: what the training steps declare about their records, read here
// for the figures the steps derive by a declared relation (images/s from a step time), so that the
// step and the report that reads its records compute them alike.
#include "rocebench/common/declared_rate.hpp"

namespace rocebench::models {

// The file's text: the declarations of models.train, models.scaling and models.predict.
const char* shape_declarations();

// images/s of a step time in ms, as images_per_s declares it: batch × ranks images a step (a record
// without ranks: one rank's own, its batch).
const DeclaredRate& images_rate();
// The same of a predicted step (models.predict): batch × ranks images a step.
const DeclaredRate& predicted_images_rate();

}  // namespace rocebench::models
