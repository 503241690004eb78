#include "rocebench/collectives/nccl_sweep.hpp"

#include <cmath>
#include <iostream>

#include <fmt/format.h>

#include "rocebench/collectives/step_mesh.hpp"
#include "rocebench/collectives/sweep.hpp"
#include "rocebench/common/bus_bandwidth.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/stats.hpp"

#ifdef ROCEBENCH_HAVE_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

namespace rocebench::collectives {

namespace {

const std::vector<std::string> kNcclCollectives = {"allreduce", "allgather", "reduce_scatter", "broadcast", "alltoall"};

// Every rank learns whether all can run; if one cannot, all record its reason and skip together
// (a rank entering NCCL init alone would wait for the others forever).
std::string agreed_skip_reason(StepContext& ctx, const std::string& mine) {
  ctx.rendezvous->set(fmt::format("{}/ready/{}", ctx.scope, ctx.rank), mine);
  for (int r = 0; r < ctx.world; ++r) {
    const std::string theirs = ctx.rendezvous->get(fmt::format("{}/ready/{}", ctx.scope, r), ctx.deadline);
    if (!theirs.empty()) return r == ctx.rank ? theirs : fmt::format("rank {}: {}", r, theirs);
  }
  return "";
}

void record_skip(StepContext& ctx, const json& params, const std::string& reason) {
  ResultRecord r;
  r.params = params;
  r.params["transport"] = "nccl";
  r.status = Status::skip;
  r.reason = reason;
  r.samples = {{"n", 0}};
  StepContext rc = ctx;
  rc.step = "collectives." + params.value("collective", "allreduce");
  rc.record(r);
}

#ifdef ROCEBENCH_HAVE_NCCL

void cuda_ok(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw InfraError(fmt::format("{}: {}", what, cudaGetErrorString(rc)));
}
void nccl_ok(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess) throw InfraError(fmt::format("{}: {}", what, ncclGetErrorString(rc)));
}

ncclDataType_t nccl_type(DataType t) {
  switch (t) {
    case DataType::float16: return ncclFloat16;
    case DataType::bfloat16: return ncclBfloat16;
    case DataType::float64: return ncclFloat64;
    default: return ncclFloat32;
  }
}
ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::max ? ncclMax : op == ReduceOp::avg ? ncclAvg : ncclSum; }

// Input of rank r at element i, and what element i of rank r's output must be.
double input_of(int r, std::size_t i) { return 1.0 + static_cast<double>((static_cast<std::size_t>(r) + i) % 2); }

double expected_of(const std::string& c, int r, int n, std::size_t i, std::size_t count, ReduceOp op) {
  const std::size_t block = count / static_cast<std::size_t>(n);
  if (c == "broadcast") return input_of(0, i);
  if (c == "allgather") return input_of(static_cast<int>(i / block), i);
  if (c == "alltoall") {
    const int source = static_cast<int>(i / block);
    return input_of(source, static_cast<std::size_t>(r) * block + i % block);
  }
  const std::size_t at = c == "reduce_scatter" ? static_cast<std::size_t>(r) * block + i : i;
  double sum = 0, max = 0;
  for (int k = 0; k < n; ++k) {
    sum += input_of(k, at);
    max = std::max(max, input_of(k, at));
  }
  return op == ReduceOp::max ? max : op == ReduceOp::avg ? sum / n : sum;
}

void run_nccl(StepContext& ctx, const std::string& collective, const SweepConfig& config) {
  int devices = 0;
  cuda_ok(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  cuda_ok(cudaSetDevice(ctx.local_rank % devices), "cudaSetDevice");
  ncclUniqueId id;
  if (ctx.rank == 0) {
    nccl_ok(ncclGetUniqueId(&id), "ncclGetUniqueId");
    ctx.rendezvous->set(ctx.scope + "/nccl_id", std::string(id.internal, sizeof id.internal));
  } else {
    const std::string bytes = ctx.rendezvous->get(ctx.scope + "/nccl_id", ctx.deadline);
    std::copy(bytes.begin(), bytes.end(), id.internal);
  }
  ncclComm_t comm;
  nccl_ok(ncclCommInitRank(&comm, ctx.world, id, ctx.rank), "ncclCommInitRank");
  cudaStream_t stream;
  cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate");
  const int n = ctx.world;
  const std::size_t esize = size_of(config.dtype);
  StepContext rc = ctx;
  rc.step = "collectives." + collective;

  for (const std::size_t bytes : sweep_sizes(config, n)) {
    const std::size_t count = bytes / esize, block = count / static_cast<std::size_t>(n);
    // nccl-tests' sizes: the whole buffer; allgather sends a block, reduce_scatter receives one.
    const std::size_t send_count = collective == "allgather" ? block : count;
    const std::size_t recv_count = collective == "reduce_scatter" ? block : count;
    std::vector<char> host(send_count * esize);
    const std::size_t offset = collective == "allgather" ? static_cast<std::size_t>(ctx.rank) * block : 0;
    for (std::size_t i = 0; i < send_count; ++i) store(config.dtype, host.data(), i, input_of(ctx.rank, offset + i));
    void *send = nullptr, *recv = nullptr;
    cuda_ok(cudaMalloc(&send, send_count * esize), "cudaMalloc");
    cuda_ok(cudaMalloc(&recv, recv_count * esize), "cudaMalloc");
    cuda_ok(cudaMemcpy(send, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy");

    auto launch = [&] {
      const auto t = nccl_type(config.dtype);
      if (collective == "allreduce") nccl_ok(ncclAllReduce(send, recv, count, t, nccl_op(config.op), comm, stream), "ncclAllReduce");
      else if (collective == "allgather") nccl_ok(ncclAllGather(send, recv, block, t, comm, stream), "ncclAllGather");
      else if (collective == "reduce_scatter") nccl_ok(ncclReduceScatter(send, recv, block, t, nccl_op(config.op), comm, stream), "ncclReduceScatter");
      else if (collective == "broadcast") nccl_ok(ncclBroadcast(send, recv, count, t, 0, comm, stream), "ncclBroadcast");
      else {
        nccl_ok(ncclGroupStart(), "ncclGroupStart");
        for (int peer = 0; peer < n; ++peer) {
          nccl_ok(ncclSend(static_cast<char*>(send) + peer * block * esize, block, t, peer, comm, stream), "ncclSend");
          nccl_ok(ncclRecv(static_cast<char*>(recv) + peer * block * esize, block, t, peer, comm, stream), "ncclRecv");
        }
        nccl_ok(ncclGroupEnd(), "ncclGroupEnd");
      }
    };
    for (int i = 0; i < config.warmup; ++i) launch();
    std::vector<cudaEvent_t> events(static_cast<std::size_t>(config.iters) + 1);
    for (auto& e : events) cuda_ok(cudaEventCreate(&e), "cudaEventCreate");
    cuda_ok(cudaEventRecord(events[0], stream), "cudaEventRecord");
    for (int i = 0; i < config.iters; ++i) {
      launch();
      cuda_ok(cudaEventRecord(events[static_cast<std::size_t>(i) + 1], stream), "cudaEventRecord");
    }
    cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    std::vector<double> times_us;
    for (int i = 0; i < config.iters; ++i) {
      float ms = 0;
      cuda_ok(cudaEventElapsedTime(&ms, events[static_cast<std::size_t>(i)], events[static_cast<std::size_t>(i) + 1]), "cudaEventElapsedTime");
      times_us.push_back(ms * 1e3);
    }
    for (auto& e : events) cudaEventDestroy(e);
    // Max-reduced on the GPUs themselves (see SweepTiming).
    times_us = with_loop_total(std::move(times_us));
    double* dev_times = nullptr;
    cuda_ok(cudaMalloc(&dev_times, times_us.size() * sizeof(double)), "cudaMalloc");
    cuda_ok(cudaMemcpy(dev_times, times_us.data(), times_us.size() * sizeof(double), cudaMemcpyHostToDevice), "cudaMemcpy");
    nccl_ok(ncclAllReduce(dev_times, dev_times, times_us.size(), ncclFloat64, ncclMax, comm, stream), "ncclAllReduce");
    cuda_ok(cudaMemcpyAsync(times_us.data(), dev_times, times_us.size() * sizeof(double), cudaMemcpyDeviceToHost, stream), "cudaMemcpy");
    cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    cudaFree(dev_times);

    double wrong = 0;
    if (config.check) {
      std::vector<char> out(recv_count * esize);
      cuda_ok(cudaMemcpy(out.data(), recv, out.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
      const double tolerance = config.op == ReduceOp::avg ? (esize == 2 ? 1e-2 : 1e-6) : 0.0;
      for (std::size_t i = 0; i < recv_count; ++i) {
        const double want = expected_of(collective, ctx.rank, n, i, count, config.op);
        if (std::fabs(load(config.dtype, out.data(), i) - want) > tolerance * std::fabs(want)) ++wrong;
      }
    }
    cudaFree(send);
    cudaFree(recv);
    const SweepTiming timing = sweep_timing(times_us);
    ResultRecord r;
    r.params = {{"algorithm", "nccl"}, {"transport", "nccl"}, {"bytes", bytes}, {"count", count},
                {"dtype", to_string(config.dtype)}, {"op", to_string(config.op)}, {"inplace", false}, {"ranks", n},
                {"collective", collective}};
    r.metrics = timing.metrics(bytes, bus_factor(collective, n));
    r.metrics["wrong"] = wrong;
    r.samples = to_json(timing.slowest_per_iteration);
    if (wrong > 0) {
      r.status = Status::fail;
      r.reason = fmt::format("rank {} on host {}: {} wrong elements", ctx.rank, ctx.host, wrong);
    }
    if (ctx.rank == 0 || wrong > 0) rc.record(r);
    if (ctx.rank == 0) {
      std::cout << fmt::format("  {:>12} {:>12} {:>10.1f} {:>9.3f} {:>9.3f} {:>7}\n", bytes, count, timing.per_op_us,
                               r.metrics["algbw_GBps"].get<double>(), r.metrics["busbw_GBps"].get<double>(), wrong)
                << std::flush;
    }
  }
  cudaStreamDestroy(stream);
  ncclCommDestroy(comm);
}

std::string local_skip_reason(int ranks_on_host) {
  int devices = 0;
  const cudaError_t rc = cudaGetDeviceCount(&devices);
  if (rc != cudaSuccess) return fmt::format("no GPU: cudaGetDeviceCount: {}", cudaGetErrorString(rc));
  if (devices == 0) return "no GPU: cudaGetDeviceCount found none";
  if (devices < ranks_on_host) {
    return fmt::format("{} ranks on this host but {} GPUs: NCCL needs a GPU per rank", ranks_on_host, devices);
  }
  return "";
}

#else

std::string local_skip_reason(int) { return "built without NCCL (no CUDA toolkit with NCCL was found at build time)"; }
void run_nccl(StepContext&, const std::string&, const SweepConfig&) {}

#endif

void run_nccl_step(StepContext& ctx) {
  const std::string collective = ctx.params.value("collective", "allreduce");
  json params = ctx.params;
  params["collective"] = collective;
  ctx.rendezvous->set(fmt::format("{}/host/{}", ctx.scope, ctx.rank), ctx.host);
  int ranks_on_host = 0;
  for (int r = 0; r < ctx.world; ++r) ranks_on_host += ctx.rendezvous->get(fmt::format("{}/host/{}", ctx.scope, r), ctx.deadline) == ctx.host;
  const std::string reason = agreed_skip_reason(ctx, local_skip_reason(ranks_on_host));
  if (!reason.empty()) return record_skip(ctx, params, reason);
  json sweep_params = ctx.params;
  sweep_params.erase("collective");
  run_nccl(ctx, collective, sweep_config_from(sweep_params));
}

}  // namespace

StepKind nccl_step() {
  json schema = sweep_options().schema(kOwnTransportsOnly);
  schema["properties"]["collective"] = {{"enum", kNcclCollectives}};
  return {"collectives.nccl", "NCCL collective sweeps on GPUs, one rank per GPU (skips without a GPU)", schema,
          run_nccl_step};
}

}  // namespace rocebench::collectives
