#pragma once
// Files compiled into the library (see reports/CMakeLists.txt).

namespace rocebench::reports {

const char* trends_py_source();  // reports/trends.py

}  // namespace rocebench::reports
