#pragma once
// The run's rendezvous: rank 0 serves a key-value store over TCP that every rank (rank 0 too)
// joins as a client. It exchanges endpoints, runs barriers, carries every rank's records to the
// single results file, and notices lost ranks: a connection that closes without a goodbye.
#include <condition_variable>
#include <functional>
#include <memory>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "rocebench/common/clock.hpp"
#include "rocebench/common/step.hpp"

namespace rocebench {

struct RendezvousAddress {
  std::string host;  // the address rank 0 binds to and the others connect to
  int port = 0;
};

class StoreServer {
 public:
  // `write_record` receives every record sent by a rank, and the server's own events;
  // `end_step` makes them durable.
  struct Sink {
    std::function<void(const json&)> write_record;
    std::function<void()> end_step;
  };
  StoreServer(RendezvousAddress address, std::string token, int world, std::string run_id, Sink sink);
  ~StoreServer();

  // Binds and starts serving on a thread; throws InfraError when the address cannot be bound.
  void start();
  // Waits until every rank has said goodbye or was lost, or the deadline passes (returns false).
  bool wait_finished(const Deadline& deadline);
  // Ranks lost during the run, with their hosts.
  std::vector<std::string> lost_ranks() const;

 private:
  struct Connection;
  struct Waiter;
  void serve();
  void accept_one();
  void handle(Connection& c, const json& message);
  void drop(Connection& c, const std::string& why);
  void settle_waiters();
  void expire_waiters();
  void reply(Connection& c, const json& message);
  void record_refusal(const Connection& c, const std::string& why);  // a client that never joined, with its address
  std::string describe_missing(const std::set<int>& present) const;
  std::string rank_name(int rank) const;
  void event(const std::string& name, const std::string& message, json details);

  RendezvousAddress address_;
  std::string token_;
  int world_;
  std::string run_id_;
  Sink sink_;
  int listen_fd_ = -1;
  int wake_fd_[2] = {-1, -1};
  std::thread thread_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<Waiter> waiters_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::set<int>> barriers_;
  std::map<int, std::string> hosts_;  // rank -> host, from hello
  std::set<int> finished_;
  mutable std::mutex mutex_;  // guards lost_ and done_ for the other threads
  std::map<int, std::string> lost_;  // rank -> why
  bool done_ = false;
  std::condition_variable done_cv_;
};

// One rank's connection to the store; it is the rank's Rendezvous and its Recorder.
class StoreClient final : public Rendezvous, public Recorder {
 public:
  StoreClient(const RendezvousAddress& address, const std::string& token, int rank, int world,
              const std::string& host, const Deadline& connect_deadline);
  ~StoreClient() override;

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  void barrier(const std::string& name, std::chrono::milliseconds timeout) override;
  void emit(const json& record) override;
  void end_step() override;
  // Tells the server this rank finished on purpose; after this the connection may close.
  void goodbye();
  // What the server knows of ranks lost so far, to name the real culprit when a peer connection fails
  // or a transport's wait makes no progress.
  std::vector<std::string> lost_ranks() override;
  // The local IP address of the connection to rank 0: this rank's address on the run's network.
  std::string local_address() const;

 private:
  json request(json message, std::chrono::milliseconds timeout);
  RendezvousAddress address_;
  int rank_, world_;
  int fd_ = -1;
  std::map<std::string, int> barrier_generation_;
  std::mutex mutex_;
};

}  // namespace rocebench
