#pragma once
// The harness's own pieces, gathered with the modules' into one command table and step list.
#include <vector>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/step.hpp"

namespace rocebench {

// Every step kind of this build: the harness's own and each module's.
const std::vector<StepKind>& all_step_kinds();
// Every subcommand of this build.
std::vector<Subcommand> all_subcommands();

// `rocebench run`: launches ranks (or, with --launcher env, is one).
int run_main(const Args& args);

// `rocebench accept`: cluster acceptance, one verdict per node.
int accept_main(const Args& args);

// `rocebench agent`: starts ranks here for a launcher elsewhere (agent.hpp), or is its relay.
int agent_main(const Args& args);

// Makes run_step_as_plan() launch through run_main (called once, from main).
void install_step_runner();

// The harness's own steps.
StepKind rendezvous_step();

}  // namespace rocebench
