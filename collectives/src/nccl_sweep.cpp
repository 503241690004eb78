#include "rocebench/collectives/nccl_sweep.hpp"

#include <exception>
#include <memory>
#include <span>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

#include "rocebench/collectives/step_mesh.hpp"
#include "rocebench/collectives/sweep.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/host_buffer.hpp"

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

struct CudaFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DeviceBuffer = std::unique_ptr<void, CudaFree>;
DeviceBuffer device_buffer(std::size_t bytes) {
  void* p = nullptr;
  cuda_ok(cudaMalloc(&p, bytes), "cudaMalloc");
  return DeviceBuffer(p);
}
struct StreamDestroy {
  void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
using Stream = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDestroy>;
struct EventDestroy {
  void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};
using Event = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDestroy>;

// The communicator of one step. Left by an error, it is aborted: a destroy would wait for operations
// that peers may never join.
class Communicator {
 public:
  Communicator(int world, const ncclUniqueId& id, int rank) {
    nccl_ok(ncclCommInitRank(&comm_, world, id, rank), "ncclCommInitRank");
  }
  ~Communicator() {
    if (comm_ == nullptr) return;
    if (std::uncaught_exceptions() > unwinding_) abort();
    else ncclCommDestroy(comm_);
  }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  void abort() {
    if (comm_ != nullptr) ncclCommAbort(comm_);
    comm_ = nullptr;
  }
  ncclComm_t get() const { return comm_; }

 private:
  ncclComm_t comm_ = nullptr;
  int unwinding_ = std::uncaught_exceptions();
};

ncclUniqueId shared_id(StepContext& ctx) {
  ncclUniqueId id;
  if (ctx.rank == 0) {
    nccl_ok(ncclGetUniqueId(&id), "ncclGetUniqueId");
    ctx.rendezvous->set(ctx.scope + "/nccl_id", std::string(id.internal, sizeof id.internal));
  } else {
    const std::string bytes = ctx.rendezvous->get(ctx.scope + "/nccl_id", ctx.deadline);
    std::copy(bytes.begin(), bytes.end(), id.internal);
  }
  return id;
}

int select_device(int local_rank) {
  int devices = 0;
  cuda_ok(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  cuda_ok(cudaSetDevice(local_rank % devices), "cudaSetDevice");
  return local_rank % devices;
}

// NCCL as a sweep backend: one GPU per rank, send and receive buffers on the device (out of place),
// CUDA events on the step's stream for timing, and NCCL itself for the reductions across ranks.
// NCCL's calls only enqueue; the stream is synchronised where the host reads (times, reductions, output).
class NcclBackend final : public SweepBackend {
 public:
  NcclBackend(StepContext& ctx, std::string collective, const SweepConfig& config)
      : rank_(ctx.rank), world_(ctx.world), collective_(std::move(collective)), config_(config),
        esize_(size_of(config.dtype)), device_(select_device(ctx.local_rank)), comm_(ctx.world, shared_id(ctx), ctx.rank),
        stream_(new_stream()), reduce_capacity_(static_cast<std::size_t>(config.iters) + 1),
        reduce_buffer_(device_buffer(reduce_capacity_ * sizeof(double))) {
    for (int i = 0; i <= config.iters; ++i) {
      cudaEvent_t e = nullptr;
      cuda_ok(cudaEventCreate(&e), "cudaEventCreate");
      events_.emplace_back(e);
    }
  }
  ~NcclBackend() override {
    if (std::uncaught_exceptions() > unwinding_) comm_.abort();  // before the frees, which would wait for the stream
  }

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  json params() const override { return {{"algorithm", "nccl"}, {"transport", "nccl"}, {"collective", collective_}}; }
  bool runs_in_place() const override { return false; }
  void allocate(std::size_t max_bytes) override {
    send_ = device_buffer(max_bytes);
    recv_ = device_buffer(max_bytes);
    host_in_ = HostBuffer(max_bytes);
    host_out_ = HostBuffer(max_bytes);
  }
  std::span<char> input(const Layout& l) override { return {host_in_.data(), l.send.count * esize_}; }
  void commit_input(const Layout& l) override {
    cuda_ok(cudaMemcpy(send_.get(), host_in_.data(), l.send.count * esize_, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  void start(const Layout&, bool) override {}
  void run(const Layout& l, bool, const Deadline&) override {
    void* send = send_.get();
    void* recv = recv_.get();
    const auto t = nccl_type(config_.dtype);
    ncclComm_t comm = comm_.get();
    cudaStream_t stream = stream_.get();
    if (collective_ == "allreduce") nccl_ok(ncclAllReduce(send, recv, l.count, t, nccl_op(config_.op), comm, stream), "ncclAllReduce");
    else if (collective_ == "allgather") nccl_ok(ncclAllGather(send, recv, l.send.count, t, comm, stream), "ncclAllGather");
    else if (collective_ == "reduce_scatter") nccl_ok(ncclReduceScatter(send, recv, l.recv.count, t, nccl_op(config_.op), comm, stream), "ncclReduceScatter");
    else if (collective_ == "broadcast") nccl_ok(ncclBroadcast(send, recv, l.count, t, 0, comm, stream), "ncclBroadcast");
    else {
      nccl_ok(ncclGroupStart(), "ncclGroupStart");
      for (int peer = 0; peer < world_; ++peer) {
        const std::size_t at = static_cast<std::size_t>(peer) * l.block * esize_;
        nccl_ok(ncclSend(static_cast<char*>(send) + at, l.block, t, peer, comm, stream), "ncclSend");
        nccl_ok(ncclRecv(static_cast<char*>(recv) + at, l.block, t, peer, comm, stream), "ncclRecv");
      }
      nccl_ok(ncclGroupEnd(), "ncclGroupEnd");
    }
  }
  void mark() override {
    if (marked_ == events_.size()) throw std::logic_error("NcclBackend: more marks than timed iterations + 1");
    cuda_ok(cudaEventRecord(events_[marked_++].get(), stream_.get()), "cudaEventRecord");
  }
  std::vector<double> iteration_us() override {
    cuda_ok(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
    std::vector<double> times_us;
    for (std::size_t i = 1; i < marked_; ++i) {
      float ms = 0;
      cuda_ok(cudaEventElapsedTime(&ms, events_[i - 1].get(), events_[i].get()), "cudaEventElapsedTime");
      times_us.push_back(ms * 1e3);
    }
    marked_ = 0;
    return times_us;
  }
  // On the GPUs themselves, through NCCL.
  void reduce(std::span<double> values, ReduceOp op, const Deadline&) override {
    if (values.size() > reduce_capacity_) throw std::logic_error("NcclBackend: more values to reduce than timed iterations + 1");
    const std::size_t bytes = values.size_bytes();
    cuda_ok(cudaMemcpy(reduce_buffer_.get(), values.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    nccl_ok(ncclAllReduce(reduce_buffer_.get(), reduce_buffer_.get(), values.size(), ncclFloat64, nccl_op(op), comm_.get(), stream_.get()),
            "ncclAllReduce");
    cuda_ok(cudaMemcpyAsync(values.data(), reduce_buffer_.get(), bytes, cudaMemcpyDeviceToHost, stream_.get()), "cudaMemcpy");
    cuda_ok(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
  }
  std::span<const char> output(const Layout& l) override {
    cuda_ok(cudaMemcpy(host_out_.data(), recv_.get(), l.recv.count * esize_, cudaMemcpyDeviceToHost), "cudaMemcpy");
    return {host_out_.data(), l.recv.count * esize_};
  }

 private:
  static Stream new_stream() {
    cudaStream_t s = nullptr;
    cuda_ok(cudaStreamCreate(&s), "cudaStreamCreate");
    return {s, StreamDestroy{}};
  }

  const int unwinding_ = std::uncaught_exceptions();
  const int rank_, world_;
  const std::string collective_;
  const SweepConfig& config_;
  const std::size_t esize_;
  const int device_;  // chosen before the communicator, stream and buffers, which live on it
  // Destroyed in reverse: events and buffers, then the stream, then the communicator (as before #20).
  Communicator comm_;
  Stream stream_;
  const std::size_t reduce_capacity_;  // the most values reduce() is given: the timed iterations and their total
  DeviceBuffer reduce_buffer_;
  std::vector<Event> events_;  // the marks: one before the first timed operation and one after each
  std::size_t marked_ = 0;
  DeviceBuffer send_, recv_;
  HostBuffer host_in_, host_out_;
};

void run_nccl(StepContext& ctx, const std::string& collective, SweepConfig config) {
  config.in_place = false;  // NCCL's operations write a receive buffer of their own
  StepContext step_ctx = ctx;
  step_ctx.step = "collectives." + collective;
  NcclBackend backend(ctx, collective, config);
  run_sweep(step_ctx, backend, collective_shape(collective), config);
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
void run_nccl(StepContext&, const std::string&, SweepConfig) {}

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
