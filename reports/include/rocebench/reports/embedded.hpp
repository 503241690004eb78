#pragma once
// Files compiled into the library (see reports/CMakeLists.txt).
#include "rocebench/common/schema.hpp"

namespace rocebench::reports {

const char* plot_py_source();         // reports/plot.py
const char* trends_py_source();       // reports/trends.py
const JsonSchema& thresholds_schema();  // reports/schema/thresholds.schema.json
const JsonSchema& baseline_schema();    // reports/schema/baseline.schema.json
const char* shape_declarations();       // {"<module>/shape.json": its declarations, …} (shapes.hpp reads it)

}  // namespace rocebench::reports
