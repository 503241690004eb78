#pragma once
// Ranks as threads of one test process: an in-memory Rendezvous and a Recorder that keeps records.
// Everything else (sockets, transport, algorithms) is the real thing.
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/step.hpp"

namespace rbtest {

using namespace rocebench;

class LocalRendezvous {
 public:
  explicit LocalRendezvous(int world) : world_(world) {}

  class Rank final : public Rendezvous {
   public:
    Rank(LocalRendezvous& shared, int rank) : shared_(shared), rank_(rank) {}
    int rank() const override { return rank_; }
    int world() const override { return shared_.world_; }
    void set(const std::string& key, const std::string& value) override {
      std::lock_guard lock(shared_.mutex_);
      shared_.values_[key] = value;
      shared_.changed_.notify_all();
    }
    std::string get(const std::string& key, std::chrono::milliseconds timeout) override {
      std::unique_lock lock(shared_.mutex_);
      if (!shared_.changed_.wait_for(lock, timeout, [&] { return shared_.values_.count(key) > 0; })) {
        throw DeadlineExceeded("no value for " + key);
      }
      return shared_.values_[key];
    }
    void barrier(const std::string& name, std::chrono::milliseconds timeout) override {
      std::unique_lock lock(shared_.mutex_);
      const std::string key = name + "#" + std::to_string(generation_[name]++);
      ++shared_.arrived_[key];
      shared_.changed_.notify_all();
      if (!shared_.changed_.wait_for(lock, timeout, [&] { return shared_.arrived_[key] == shared_.world_; })) {
        throw DeadlineExceeded("barrier " + name);
      }
    }

    std::vector<std::string> lost_ranks() override {
      std::lock_guard lock(shared_.mutex_);
      return shared_.lost_;
    }

   private:
    LocalRendezvous& shared_;
    int rank_;
    std::map<std::string, int> generation_;
  };

  // Rank r's rendezvous for as long as this object lives: a transport asks its rendezvous while it
  // waits, so a helper that returns a transport hands it this one, not a local.
  Rank& rank(int r) {
    std::lock_guard lock(mutex_);
    auto& slot = ranks_[r];
    if (!slot) slot = std::make_unique<Rank>(*this, r);
    return *slot;
  }

  // From now on the rendezvous reports `rank` (on host "host<rank>") lost, as rank 0's server does once the
  // rank's connection to it closed without a goodbye.
  void lose(int rank) {
    std::lock_guard lock(mutex_);
    lost_.push_back("rank " + std::to_string(rank) + " on host host" + std::to_string(rank) + " was lost: its process died");
  }

 private:
  int world_;
  std::mutex mutex_;
  std::vector<std::string> lost_;
  std::map<int, std::unique_ptr<Rank>> ranks_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
  std::map<std::string, int> arrived_;
};

class KeptRecords final : public Recorder {
 public:
  void emit(const json& record) override {
    std::lock_guard lock(mutex_);
    records.push_back(record);
  }
  void end_step() override {}
  std::vector<json> records;

 private:
  std::mutex mutex_;
};

// Runs body(rank) on `world` threads; returns each rank's exception message ("" when none).
template <typename Body>
std::vector<std::string> on_ranks(int world, Body body) {
  std::vector<std::string> errors(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

// What the harness hands a rank's sweep step, with ranks as threads.
inline rocebench::StepContext sweep_context(int rank, int world, rocebench::Rendezvous& rdv, rocebench::Recorder& kept) {
  rocebench::StepContext ctx;
  ctx.run_id = "t";
  ctx.step = "collectives.allreduce";
  ctx.scope = "step0";
  ctx.host = "host" + std::to_string(rank);
  ctx.rank = rank;
  ctx.world = world;
  ctx.rendezvous = &rdv;
  ctx.recorder = &kept;
  return ctx;
}

}  // namespace rbtest
