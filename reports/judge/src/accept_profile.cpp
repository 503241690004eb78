#include "rocebench/reports/accept_profile.hpp"

#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/located_json.hpp"
#include "rocebench/common/schema.hpp"

namespace rocebench::reports::accept {

namespace {

// Every key a profile may have, with its range: the one declaration load_profile checks against.
const json& profile_schema() {
  static const json schema = json::parse(R"schema({
    "type": "object",
    "additionalProperties": false,
    "properties": {
      "name": {"type": "string", "minLength": 1},
      "description": {"type": "string"},
      "netcheck_profile": {"type": "string", "minLength": 1},
      "rdma_required": {"type": "boolean"},
      "transport": {"enum": ["tcp", "verbs"]},
      "link": {"type": "object", "additionalProperties": false, "properties": {
        "test": {"enum": ["bw", "lat"]},
        "duration_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 600},
        "bytes": {"type": "integer", "minimum": 1, "maximum": 1073741824},
        "fraction_of_best": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}},
      "lossless": {"type": "object", "additionalProperties": false, "properties": {
        "duration_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 600},
        "bytes": {"type": "integer", "minimum": 1, "maximum": 1073741824},
        "retransmit_share": {"type": "number", "minimum": 0, "maximum": 1},
        "stall_share": {"type": "number", "minimum": 0, "maximum": 1},
        "pause_share": {"type": "number", "minimum": 0, "maximum": 1},
        "off_pfc_share": {"type": "number", "minimum": 0, "maximum": 1}}},
      "allreduce": {"type": "object", "additionalProperties": false, "properties": {
        "bytes": {"type": "integer", "minimum": 8, "maximum": 17179869184},
        "iters": {"type": "integer", "minimum": 1, "maximum": 100000},
        "busbw_fraction_of_median_pair": {"type": "number", "exclusiveMinimum": 0, "maximum": 2},
        "rated_link_Gbps": {"type": "number", "exclusiveMinimum": 0},
        "busbw_fraction_of_rated": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}},
      "gpu": {"type": "object", "additionalProperties": false, "properties": {
        "required": {"type": "boolean"},
        "gemm_type": {"type": "string", "minLength": 1},
        "gemm_tflops": {"type": "number", "exclusiveMinimum": 0},
        "h2d_GBps": {"type": "number", "exclusiveMinimum": 0},
        "fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}},
      "train": {"type": "object", "additionalProperties": false, "properties": {
        "model": {"type": "string", "minLength": 1},
        "engine": {"enum": ["replay", "cpu", "gpu"]},
        "timeline": {"type": "string", "minLength": 1},
        "precision": {"enum": ["fp32", "tf32", "bf16", "fp16"]},
        "batch": {"type": "integer", "minimum": 1, "maximum": 65536},
        "iters": {"type": "integer", "minimum": 1, "maximum": 100000},
        "steps": {"not": {}, "errorMessage": "'steps' is now 'iters'"},
        "fraction_of_median": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}},
      "sources": {"type": "object", "additionalProperties": {"type": "string"}}
    }
  })schema");
  return schema;
}

const char* const kAutoProfile = R"json({
  "name": "auto",
  "description": "Each node against the fleet's own figures: no rated number, so any hardware can be judged.",
  "netcheck_profile": "lossless-roce",
  "rdma_required": false,
  "transport": "tcp",
  "link": {"test": "bw", "duration_s": 1, "bytes": 131072, "fraction_of_best": 0.8},
  "allreduce": {"bytes": 1048576, "iters": 5, "busbw_fraction_of_median_pair": 0.7},
  "gpu": {"required": false, "gemm_type": "bf16", "fraction": 0.9},
  "train": {"model": "resnet20_cifar", "engine": "replay", "timeline": "cpu-resnet20_cifar-fp32-b16", "batch": 16, "iters": 10, "fraction_of_median": 0.8},
  "sources": {
    "gpu.fraction": "a GPU below 90% of the fleet's median GEMM or host-to-device copy is slow",
    "train.timeline": "measured by rocebench train --profile on the dev VM (AMD EPYC, 2 vCPUs, 1 oneDNN thread); replayed, it needs no GPU, and resnet20's 1 MiB of gradients keep 8 emulated hosts' run short (resnet50's 98 MiB would take seconds per step at 200 Mbit/s)",
    "train.fraction_of_median": "a node whose own compute delivers below 80% of the fleet's median images/s is slow, chosen, not yet measured against a fleet",
    "link.fraction_of_best": "a pair below 80% of the fleet's best pair, also when retested alone, is a bad link",
    "allreduce.busbw_fraction_of_median_pair": "a ring allreduce moves every byte over every link: its busbw is bounded by the slowest pair; 70% of the median pair is a margin for the ring's own overhead, chosen, not yet measured against NCCL"
  }
})json";

// A node type with its datasheet ratings: NVIDIA HGX H100 SXM5 with a 400 Gb/s RoCE NIC per GPU.
const char* const kH100Profile = R"json({
  "name": "h100-sxm-400g",
  "description": "HGX H100 SXM5 nodes, one 400 Gb/s ConnectX-7 RoCE v2 NIC per GPU, lossless fabric.",
  "netcheck_profile": "lossless-roce",
  "rdma_required": true,
  "transport": "verbs",
  "link": {"test": "bw", "duration_s": 2, "bytes": 1048576, "fraction_of_best": 0.93},
  "lossless": {"duration_s": 2, "bytes": 1048576},
  "allreduce": {"bytes": 268435456, "iters": 20, "rated_link_Gbps": 400, "busbw_fraction_of_rated": 0.85},
  "gpu": {"required": true, "gemm_type": "bf16", "gemm_tflops": 989, "h2d_GBps": 64, "fraction": 0.6},
  "train": {"model": "resnet50", "engine": "gpu", "precision": "bf16", "batch": 64, "iters": 20, "fraction_of_median": 0.9},
  "sources": {
    "train.fraction_of_median": "a node 10% below the fleet's median images/s from its own compute, chosen; not yet measured by rocebench on an H100 fleet",
    "allreduce.rated_link_Gbps": "NVIDIA ConnectX-7 datasheet: 400 Gb/s per port",
    "allreduce.busbw_fraction_of_rated": "a margin below the link rate, chosen; not yet measured by rocebench on a 400G fabric",
    "gpu.gemm_tflops": "NVIDIA H100 Tensor Core GPU datasheet, SXM5: BF16 Tensor Core 1,979 TFLOPS with sparsity, 989 dense",
    "gpu.h2d_GBps": "PCIe Gen5 x16: 64 GB/s per direction (32 GT/s x 16 lanes, 128b/130b)",
    "gpu.fraction": "a margin below the datasheet peaks, chosen; not yet measured by rocebench on an H100",
    "link.fraction_of_best": "a pair 7% below the best pair, also when retested alone",
    "transport": "the fabric is accepted for RDMA: links, allreduce and training over RC queue pairs, as NCCL would use them",
    "lossless": "RoCE needs a fabric lossless under many-to-one load (DSCP-based PFC plus ECN/DCQCN end to end, as Alibaba's PAISoar runs it); the shares are the verdict's own (reports/judge lossless_verdict.hpp)"
  }
})json";

Profile profile_from(const LocatedJson& doc) {
  const auto errors = JsonSchema(profile_schema()).validate(doc.value);
  if (!errors.empty()) doc.fail(errors.front().pointer, errors.front().message);
  const json& j = doc.value;
  Profile p;
  p.file = doc.file;
  p.document = j;
  p.name = j.value("name", doc.file);
  p.netcheck_profile = j.value("netcheck_profile", p.netcheck_profile);
  p.rdma_required = j.value("rdma_required", p.rdma_required);
  p.transport = j.value("transport", p.transport);
  const json link = j.value("link", json::object());
  p.link_test = link.value("test", p.link_test);
  p.link_duration_s = link.value("duration_s", p.link_duration_s);
  p.link_bytes = link.value("bytes", p.link_bytes);
  p.link_fraction = link.value("fraction_of_best", p.link_fraction);
  p.lossless = j.contains("lossless");
  const json lossless = j.value("lossless", json::object());
  p.lossless_bytes = lossless.value("bytes", p.lossless_bytes);
  p.lossless_duration_s = lossless.value("duration_s", p.lossless_duration_s);
  p.lossless_rule.retransmit_share = lossless.value("retransmit_share", p.lossless_rule.retransmit_share);
  p.lossless_rule.stall_share = lossless.value("stall_share", p.lossless_rule.stall_share);
  p.lossless_rule.pause_share = lossless.value("pause_share", p.lossless_rule.pause_share);
  p.lossless_rule.off_pfc_share = lossless.value("off_pfc_share", p.lossless_rule.off_pfc_share);
  const json allreduce = j.value("allreduce", json::object());
  p.allreduce_bytes = allreduce.value("bytes", p.allreduce_bytes);
  p.allreduce_iters = allreduce.value("iters", p.allreduce_iters);
  p.busbw_fraction = allreduce.value("busbw_fraction_of_median_pair", p.busbw_fraction);
  p.rated_link_Gbps = allreduce.value("rated_link_Gbps", p.rated_link_Gbps);
  p.busbw_fraction_of_rated = allreduce.value("busbw_fraction_of_rated", p.busbw_fraction_of_rated);
  const json gpu = j.value("gpu", json::object());
  p.gpu_required = gpu.value("required", p.gpu_required);
  p.gemm_type = gpu.value("gemm_type", p.gemm_type);
  p.gemm_tflops = gpu.value("gemm_tflops", p.gemm_tflops);
  p.h2d_GBps = gpu.value("h2d_GBps", p.h2d_GBps);
  p.gpu_fraction = gpu.value("fraction", p.gpu_fraction);
  const json train = j.value("train", json::object());
  p.train_model = train.value("model", p.train_model);
  p.train_engine = train.value("engine", p.train_engine);
  p.train_timeline = train.value("timeline", p.train_timeline);
  p.train_precision = train.value("precision", p.train_precision);
  p.train_batch = train.value("batch", p.train_batch);
  p.train_steps = train.value("iters", p.train_steps);
  p.train_fraction = train.value("fraction_of_median", p.train_fraction);
  p.sources = j.value("sources", json::object());
  return p;
}

}  // namespace

std::string builtin_profile_text(const std::string& name) {
  if (name == "auto") return kAutoProfile;
  if (name == "h100-sxm-400g") return kH100Profile;
  return "";
}

std::string link_probe_test(const Profile& p) { return p.transport == "verbs" ? "write_" + p.link_test : p.link_test; }

std::vector<std::string> builtin_profiles() { return {"auto", "h100-sxm-400g"}; }

Profile load_profile(const std::string& name_or_file) {
  const std::string builtin = builtin_profile_text(name_or_file);
  if (!builtin.empty()) return profile_from(parse_located(builtin, "builtin:" + name_or_file));
  if (!std::filesystem::exists(name_or_file)) {
    throw InputError(fmt::format("profile '{}' is neither built in ({}) nor a file", printable_excerpt(name_or_file),
                                 fmt::join(builtin_profiles(), ", ")));
  }
  return profile_from(load_located(name_or_file));
}

Profile profile_from_document(const json& document, const std::string& file) {
  return profile_from(parse_located(document.dump(2), file));
}

}  // namespace rocebench::reports::accept
