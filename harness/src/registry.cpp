// The one place that knows every module: the arrows of DESIGN.md end here.
#include "commands.hpp"
#include "rocebench/collectives/dtype.hpp"
#include "rocebench/collectives/module.hpp"
#include "rocebench/microbench/module.hpp"
#include "rocebench/models/data_parallel.hpp"
#include "rocebench/models/module.hpp"
#include "rocebench/models/zoo.hpp"
#include "rocebench/netcheck/module.hpp"
#include "rocebench/reports/module.hpp"

namespace rocebench {

namespace {

// microbench measures the collectives' own sum kernels next to memcpy without depending on collectives.
std::vector<microbench::SumKernel> sum_kernels() {
  std::vector<microbench::SumKernel> out;
  for (auto t : {collectives::DataType::float32, collectives::DataType::float16, collectives::DataType::bfloat16}) {
    out.push_back({collectives::to_string(t), collectives::size_of(t), [t](void* dst, const void* src, std::size_t n) {
                     collectives::reduce_into(t, collectives::ReduceOp::sum, dst, src, n);
                   }});
  }
  return out;
}

// collectives' bucket step times the gradients of any zoo model without depending on models.
std::vector<std::size_t> gradient_sizes(const std::string& model) {
  return models::gradient_sizes(models::build_model(model));
}

}  // namespace

const std::vector<StepKind>& all_step_kinds() {
  static const std::vector<StepKind> kinds = [] {
    std::vector<StepKind> out{rendezvous_step()};
    for (auto&& more : {microbench::steps(sum_kernels()), collectives::steps(gradient_sizes), models::steps(), netcheck::steps()}) {
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }();
  return kinds;
}

std::vector<Subcommand> all_subcommands() {
  std::vector<Subcommand> out{{"run", "run a plan: launch the ranks, run its steps, record results", run_main},
                              {"accept", "cluster acceptance: every node PASS or FAIL, with reason codes and evidence", accept_main},
                              {"agent", "start ranks on this host for a launcher on another (a hosts file's agent=PORT)", agent_main}};
  for (auto&& more : {microbench::subcommands(), collectives::subcommands(), models::subcommands(),
                      netcheck::subcommands(), reports::subcommands()}) {
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

}  // namespace rocebench
