#pragma once
// Files compiled into the library (see reports/CMakeLists.txt).

namespace rocebench::reports {

const char* shape_declarations();  // {"<module>/shape.json": its declarations, …} (shapes.hpp reads it)

}  // namespace rocebench::reports
