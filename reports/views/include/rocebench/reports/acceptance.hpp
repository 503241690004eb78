#pragma once
// Cluster acceptance: what the hardware should deliver (a profile), the search for the node that
// slows a collective (bisection), and one verdict per node, with reason codes and evidence, built from
// the records of the stages `rocebench accept` runs.
// Each part has its own header; this one includes them all.
#include "rocebench/reports/accept_bisection.hpp"
#include "rocebench/reports/accept_judges.hpp"
#include "rocebench/reports/accept_profile.hpp"
#include "rocebench/reports/accept_records.hpp"
#include "rocebench/reports/accept_render.hpp"
#include "rocebench/reports/accept_verdicts.hpp"
#include "rocebench/reports/exit_code.hpp"
