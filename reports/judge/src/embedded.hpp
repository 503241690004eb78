#pragma once
// Files compiled into the library (see reports/CMakeLists.txt).
#include "rocebench/common/schema.hpp"

namespace rocebench::reports {

const JsonSchema& thresholds_schema();  // reports/schema/thresholds.schema.json
const JsonSchema& baseline_schema();    // reports/schema/baseline.schema.json

}  // namespace rocebench::reports
