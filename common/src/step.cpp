#include "rocebench/common/step.hpp"

namespace rocebench {

void StepContext::record(ResultRecord r) const {
  r.step = step;
  r.host = host;
  r.rank = rank;
  r.world = world;
  recorder->emit(to_json(r, run_id));
}

}  // namespace rocebench
