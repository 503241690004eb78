// The verbs transport under the collectives: its plan options, the skip on a host without a device,
// and the algorithms on a real device (its device-free parts: transport/tests/test_verbs_ring.cpp).
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "../../harness/tests/process_util.hpp"
#include "local_rendezvous.hpp"
#include "rocebench/collectives/algorithms.hpp"
#include "rocebench/collectives/module.hpp"
#include "rocebench/collectives/step_mesh.hpp"
#include "rocebench/collectives/sweep.hpp"
#include "rocebench/common/record.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/transport/tcp/mesh.hpp"
#include "rocebench/transport/verbs/mesh.hpp"
#include "rocebench/transport/verbs/rc.hpp"

using namespace rocebench;
using namespace rocebench::collectives;
using namespace std::chrono_literals;

TEST(VerbsOptions, FromThePlanAndItsSchema) {
  const json params = {{"device", "rxe0"}, {"ib_port", 2}, {"gid_index", 1}, {"slots", 8}, {"slot_bytes", 4096}};
  const verbs::RingOptions o = verbs::ring_options_from(params);
  EXPECT_EQ(o.device, "rxe0");
  EXPECT_EQ(o.ib_port, 2);
  EXPECT_EQ(o.gid_index, 1);
  EXPECT_EQ(o.slots, 8u);
  EXPECT_EQ(o.slot_bytes, 4096u);
  EXPECT_EQ(verbs::ring_options_from(json::object()).gid_index, -1);  // automatic GID choice

  const JsonSchema schema(sweep_params_schema());
  EXPECT_TRUE(schema.validate({{"transport", "verbs"}, {"verbs", params}}).empty());
  EXPECT_FALSE(schema.validate({{"transport", "ib"}}).empty());
  EXPECT_FALSE(schema.validate({{"verbs", {{"slots", 1}}}}).empty());
  EXPECT_FALSE(schema.validate({{"verbs", {{"port", 1}}}}).empty());  // unknown field
}

// The TCP mesh's options are declared beside it (transport/tcp), as verbs' are, and a collectives
// step takes them at the top level of its params, read only by our own transports.
TEST(TcpOptions, FromThePlanAndItsSchema) {
  const tcp::MeshOptions o = tcp::mesh_options_from({{"sockets_per_peer", 4}, {"spin_us", 0}, {"tcp_congestion", "bbr"}, {"tcp_sndbuf", 0}});
  EXPECT_EQ(o.sockets_per_peer, 4);
  EXPECT_EQ(o.spin.count(), 0);
  EXPECT_EQ(o.congestion, "bbr");
  EXPECT_EQ(o.send_buffer, std::optional<std::size_t>(0));
  const tcp::MeshOptions d = tcp::mesh_options_from(json::object());
  EXPECT_EQ(d.sockets_per_peer, tcp::MeshOptions{}.sockets_per_peer);
  EXPECT_EQ(d.spin, tcp::MeshOptions{}.spin);
  EXPECT_EQ(d.congestion, "");
  EXPECT_FALSE(d.send_buffer) << "unset: the same-host buffer or autotuning, by peer";

  const JsonSchema schema(sweep_params_schema());
  EXPECT_TRUE(schema.validate({{"transport", "tcp"}, {"sockets_per_peer", 4}, {"tcp_sndbuf", 131072}}).empty());
  EXPECT_FALSE(schema.validate({{"sockets_per_peer", 17}}).empty());
  for (const auto& spec : tcp::mesh_option_table().specs())
    EXPECT_EQ(transport_options().at(spec.key).family, kOwnTransportsOnly) << spec.key;
}

// On a host without an RDMA device (as CI): every rank learns it and none falls back to TCP.
TEST(VerbsTransport, NoDeviceMakesEveryRankSkipNamingTheHost) {
  if (!verbs::device_names().empty()) GTEST_SKIP() << "this host has an RDMA device";
  rbtest::LocalRendezvous shared(3);
  std::vector<std::string> reasons(3);
  const auto errors = rbtest::on_ranks(3, [&](int r) {
    rbtest::LocalRendezvous::Rank rdv(shared, r);
    try {
      verbs::connect_mesh(rdv, r, 3, "127.0.0.1", "host" + std::to_string(r), verbs::RingOptions{}, Deadline(10s));
    } catch (const Unavailable& e) {
      reasons[r] = e.what();
    }
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    EXPECT_NE(reasons[r].find("no RDMA device on host host"), std::string::npos) << "rank " << r << ": " << reasons[r];
  }
}

TEST(VerbsTransport, AnUnknownDeviceIsBadInputListingTheDevices) {
  rbtest::LocalRendezvous shared(1);
  rbtest::LocalRendezvous::Rank rdv(shared, 0);
  verbs::RingOptions o;
  o.device = "mlx9_9";
  try {
    verbs::connect_mesh(rdv, 0, 1, "127.0.0.1", "h", o, Deadline(5s));
    FAIL() << "opened mlx9_9";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown RDMA device 'mlx9_9'"), std::string::npos) << e.what();
  }
}

// The plan step on 2 ranks: a skip record with the reason, no made-up measurement.
TEST(VerbsTransport, TheSweepStepRecordsASkipWithoutADevice) {
  if (!verbs::device_names().empty()) GTEST_SKIP() << "this host has an RDMA device";
  const auto all = steps({});
  const auto kind = std::find_if(all.begin(), all.end(), [](const StepKind& k) { return k.name == "collectives.allreduce"; });
  ASSERT_NE(kind, all.end());
  rbtest::LocalRendezvous shared(2);
  rbtest::KeptRecords kept;
  const auto errors = rbtest::on_ranks(2, [&](int r) {
    rbtest::LocalRendezvous::Rank rdv(shared, r);
    StepContext ctx = rbtest::sweep_context(r, 2, rdv, kept);
    ctx.address = "127.0.0.1";
    ctx.deadline = 10s;
    ctx.params = {{"transport", "verbs"}, {"min_bytes", 1024}, {"max_bytes", 1024}};
    kind->run(ctx);
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  ASSERT_EQ(kept.records.size(), 1u);
  const json& rec = kept.records[0];
  EXPECT_EQ(rec["status"], "skip");
  EXPECT_EQ(rec["params"]["transport"], "verbs");
  EXPECT_EQ(rec["params"]["ranks"], 2);
  EXPECT_NE(rec["reason"].get<std::string>().find("no RDMA device"), std::string::npos) << rec.dump();
  EXPECT_TRUE(result_schema().validate(rec).empty()) << rec.dump();
}

TEST(VerbsTransport, AllreduceCommandSelectsVerbsAndRefusesOtherTransports) {
  RBTEST_NEEDS_ROCEBENCH();
  const auto dir = rbtest::temp_dir("verbscli");
  EXPECT_EQ(rbtest::run({ROCEBENCH_BINARY, "allreduce", "--transport", "ib", "-e", "1K"}, dir, "bad"), 2);
  EXPECT_NE(rbtest::slurp(dir / "bad.err").find("rocebench allreduce: --transport \"ib\": must be one of"), std::string::npos)
      << rbtest::slurp(dir / "bad.err");
  if (!verbs::device_names().empty()) GTEST_SKIP() << "this host has an RDMA device";
  const int rc = rbtest::run({ROCEBENCH_BINARY, "allreduce", "--transport", "verbs", "--ranks", "2", "-b", "1K", "-e",
                              "4K", "--results-dir", (dir / "out").string()},
                             dir, "run");
  ASSERT_EQ(rc, 0) << rbtest::slurp(dir / "run.err");
  const RecordFile f = read_records(dir / "out" / "results.jsonl", &result_schema());
  EXPECT_TRUE(f.issues.empty());
  int skips = 0;
  for (const auto& r : f.records) {
    if (r.value("step", "") != "collectives.allreduce") continue;
    EXPECT_EQ(r["status"], "skip") << r.dump();
    ++skips;
  }
  EXPECT_EQ(skips, 1);
}

// The transport for real, ranks as threads each with its own device context: runs wherever an RDMA
// device is up (the soft-RoCE guest's rxe0, a RoCE NIC), skipped elsewhere.
TEST(VerbsTransport, EveryAlgorithmSumsExactlyOnARealDevice) {
  if (verbs::device_names().empty()) GTEST_SKIP() << "no RDMA device on this host";
  for (const int world : {2, 4}) {
    for (const Algorithm algorithm : {Algorithm::ring, Algorithm::ps, Algorithm::rd}) {
      rbtest::LocalRendezvous shared(world);
      const auto errors = rbtest::on_ranks(world, [&](int r) {
        rbtest::LocalRendezvous::Rank rdv(shared, r);
        verbs::RingOptions o;
        o.slots = 4;
        o.slot_bytes = 4096;  // messages of up to 1.5 MiB span the 16 KiB ring many times over
        const auto t = verbs::connect_mesh(rdv, r, world, "127.0.0.1", "host" + std::to_string(r), o, Deadline(30s));
        CollectiveOptions options;
        options.chunk_bytes = 10000;
        for (const std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1001}, std::size_t{393217}}) {
          std::vector<float> data(count);
          for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<float>((r * 7 + i) % 5);
          allreduce(*t, algorithm, data.data(), count, DataType::float32, ReduceOp::sum, options, Deadline(60s));
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < count; ++i) {
            float want = 0;
            for (int k = 0; k < world; ++k) want += static_cast<float>((k * 7 + i) % 5);
            wrong += data[i] != want;
          }
          if (wrong) throw std::runtime_error(fmt::format("{} of {} elements wrong", wrong, count));
        }
        const std::vector<char> none;
        t->wait(t->send((r + 1) % world, none.data(), 0), Deadline(10s));  // 0 bytes keep their place
        std::vector<char> got(3);
        const transport::Request a = t->recv((r + world - 1) % world, nullptr, 0);
        const transport::Request b = t->recv((r + world - 1) % world, got.data(), 3);
        const char hello[3] = {'h', 'i', static_cast<char>(r)};
        t->wait(t->send((r + 1) % world, hello, 3), Deadline(10s));
        t->wait(std::vector<transport::Request>{a, b}, Deadline(10s));
        if (got[2] != static_cast<char>((r + world - 1) % world)) throw std::runtime_error("3-byte message garbled");
      });
      for (int r = 0; r < world; ++r) EXPECT_EQ(errors[r], "") << world << " ranks, " << to_string(algorithm) << ", rank " << r;
    }
  }
}

// A peer that stops answering: the wait ends at its deadline naming that peer by rank and host.
TEST(VerbsTransport, ASilentPeerIsNamedAtTheDeadline) {
  if (verbs::device_names().empty()) GTEST_SKIP() << "no RDMA device on this host";
  rbtest::LocalRendezvous shared(2);
  std::string message;
  const auto errors = rbtest::on_ranks(2, [&](int r) {
    rbtest::LocalRendezvous::Rank rdv(shared, r);
    const auto t = verbs::connect_mesh(rdv, r, 2, "127.0.0.1", "host" + std::to_string(r), verbs::RingOptions{}, Deadline(30s));
    if (r == 1) return;  // posts nothing
    std::vector<char> buf(64);
    try {
      t->wait(t->recv(1, buf.data(), buf.size()), Deadline(500ms));
    } catch (const DeadlineExceeded& e) {
      message = e.what();
    }
  });
  EXPECT_NE(message.find("rank 1 on host host1"), std::string::npos) << message;
}

// A peer whose process died without a word (a queue pair to it hears nothing until its retries run out):
// the rendezvous reports it lost, and the wait ends on that within seconds, not at its deadline.
TEST(VerbsTransport, ALostRankEndsAWaitBeforeTheDeadline) {
  if (verbs::device_names().empty()) GTEST_SKIP() << "no RDMA device on this host";
  rbtest::LocalRendezvous shared(2);
  std::string message;
  std::chrono::steady_clock::duration took{};
  rbtest::on_ranks(2, [&](int r) {
    rbtest::LocalRendezvous::Rank rdv(shared, r);
    const auto t = verbs::connect_mesh(rdv, r, 2, "127.0.0.1", "host" + std::to_string(r), verbs::RingOptions{}, Deadline(30s));
    if (r == 1) return;  // posts nothing, and its queue pair goes
    shared.lose(1);
    std::vector<char> buf(64);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      t->wait(t->recv(1, buf.data(), buf.size()), Deadline(30s));
    } catch (const InfraError& e) {
      message = e.what();
    }
    took = std::chrono::steady_clock::now() - t0;
  });
  EXPECT_LT(took, 5s);
  EXPECT_NE(message.find("rank 0: verbs transport: transfers pending to/from rank 1 on host host1, and the run lost a "
                         "rank: rank 1 on host host1 was lost"),
            std::string::npos)
      << message;
}
