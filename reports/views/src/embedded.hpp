#pragma once
// Files compiled into the library (see reports/CMakeLists.txt).

namespace rocebench::reports {

const char* plot_py_source();  // reports/plot.py

}  // namespace rocebench::reports
