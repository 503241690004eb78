#pragma once
// What an acceptance's hardware should deliver: its profile (built in, or a JSON file), read and
// validated once.
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/reports/lossless_verdict.hpp"

namespace rocebench::reports::accept {

// A profile names what each stage must reach, relative to the fleet's own measurements, and where
// every rated number comes from. Built-in: "auto"; a JSON file adds its own (unknown keys are errors).
struct Profile {
  std::string name;
  std::string file;  // "builtin:auto" or the path
  std::string netcheck_profile = "lossless-roce";
  bool rdma_required = false;      // false: a host without an RDMA device skips netcheck's RoCE checks
  // What the link matrix, the allreduce and the training run go over: tcp, or verbs (RC queue pairs on
  // each node's first RDMA device; a node without one records a skip, never a pass).
  std::string transport = "tcp";
  std::string link_test = "bw";    // microbench.allpairs: bw or lat, over the transport (link_probe_test)
  double link_duration_s = 1;
  std::size_t link_bytes = 131072;
  double link_fraction = 0.8;      // a pair below this fraction of the best pair is bad
  // Lossless under load (microbench.incast, after the links): judged when the profile has a "lossless"
  // section. TCP recovers lost segments itself; RoCE without PFC and ECN end to end does not.
  bool lossless = false;
  std::size_t lossless_bytes = 65536;
  double lossless_duration_s = 1;
  LosslessRule lossless_rule;
  std::size_t allreduce_bytes = 1 << 20;
  int allreduce_iters = 5;
  double busbw_fraction = 0.7;     // of the median pair bandwidth: below it the group is slow
  double rated_link_Gbps = 0;      // a datasheet link rate: when set, busbw is judged against it instead
  double busbw_fraction_of_rated = 0.85;
  bool gpu_required = false;       // true: a node without a usable GPU is UNVERIFIED
  std::string gemm_type = "bf16";  // the GEMM judged (microbench.host's gpu_gemm)
  double gemm_tflops = 0;          // rated peak; 0: judged against the fleet's median instead
  double h2d_GBps = 0;             // rated host-to-device copy; 0: the fleet's median
  double gpu_fraction = 0.9;       // of the rated figure, or of the fleet's median
  // The short data-parallel training run (models.scaling at the full world): each node's images/s
  // from its own compute (not its wait for the others) against the fleet's median.
  std::string train_model = "resnet20_cifar";
  std::string train_engine = "replay";  // replay needs no GPU; gpu when the node type has one
  std::string train_timeline = "cpu-resnet20_cifar-fp32-b16";  // replay only
  std::string train_precision = "fp32";
  int train_batch = 16;
  int train_steps = 10;
  double train_fraction = 0.8;     // of the fleet's median images/s
  json sources = json::object();   // rated number -> where it comes from
  json document = json::object();  // the profile as written (what accept records it ran under)
};

// A built-in name or a JSON file; throws InputError naming file, line and field.
Profile load_profile(const std::string& name_or_file);
std::string builtin_profile_text(const std::string& name);  // empty when there is no such profile
std::vector<std::string> builtin_profiles();
// The all-pairs probe test of the profile's link kind over its transport: bw or lat over tcp,
// perftest's write_bw or write_lat over verbs.
std::string link_probe_test(const Profile& p);
// The profile a recorded acceptance ran under (accept.jsonl's accept.start record).
Profile profile_from_document(const json& document, const std::string& file);

}  // namespace rocebench::reports::accept
