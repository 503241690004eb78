// The verbs transport's device-free parts: the ring protocol (fragments, credits, matching), the QP
// attributes published through the rendezvous, the options, and the skip on a host without a device.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "../../harness/tests/process_util.hpp"
#include "local_rendezvous.hpp"
#include "rocebench/collectives/algorithms.hpp"
#include "rocebench/collectives/module.hpp"
#include "rocebench/collectives/sweep.hpp"
#include "rocebench/collectives/verbs_flow.hpp"
#include "rocebench/collectives/verbs_transport.hpp"
#include "rocebench/common/record.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/common/verbs_rc.hpp"

using namespace rocebench;
using namespace rocebench::collectives;
using namespace std::chrono_literals;

namespace {

// One direction between two ranks with the NIC replaced by what an RDMA write with immediate does:
// the staging slot's bytes land in the same slot of the receiver's ring, in posting order.
struct Wire {
  Wire(std::uint32_t slots, std::size_t slot_bytes)
      : staging(slots * slot_bytes), ring(slots * slot_bytes), slot_bytes_(slot_bytes),
        sender(slots, slot_bytes, staging.data(), ring.data()),  // the sender's ring is unused here
        receiver(slots, slot_bytes, staging.data(), ring.data()) {}

  // Moves at most `budget` fragments; hands credits back when the receiver offers them.
  std::size_t pump(std::size_t budget = SIZE_MAX) {
    std::size_t moved = 0;
    while (moved < budget) {
      const auto f = sender.next_fragment(sends_done);
      if (!f) break;
      std::memcpy(ring.data() + f->slot * slot_bytes_, staging.data() + f->slot * slot_bytes_, f->bytes);
      std::memset(staging.data() + f->slot * slot_bytes_, 0xee, slot_bytes_);  // staging is reused at once
      receiver.fragment_arrived(f->bytes);
      ++moved;
    }
    receiver.deliver(recvs_done);
    if (const auto credits = receiver.take_credits()) sender.credits_returned(credits);
    return moved;
  }

  std::vector<char> staging, ring;
  std::size_t slot_bytes_;
  RingFlow sender, receiver;
  std::vector<Request> sends_done, recvs_done;
};

std::vector<char> pattern(std::size_t bytes, int seed) {
  std::vector<char> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = static_cast<char>((i * 131 + static_cast<std::size_t>(seed) * 7) % 251);
  return v;
}

}  // namespace

TEST(VerbsFlow, MessagesOfEverySizeArriveWholeAndInOrder) {
  Wire wire(4, 64);
  // 0 bytes, 1 byte, odd, exactly a slot, a slot and one, more than the whole ring (needs credits back).
  const std::vector<std::size_t> sizes{0, 1, 63, 64, 65, 1000, 0, 7};
  std::vector<std::vector<char>> sent, received;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    sent.push_back(pattern(sizes[k], static_cast<int>(k)));
    received.emplace_back(sizes[k], 0);
  }
  for (std::size_t k = 0; k < sizes.size(); ++k) wire.sender.post_send(100 + k, sent[k].data(), sizes[k]);
  for (std::size_t k = 0; k < sizes.size(); ++k) wire.receiver.post_recv(200 + k, received[k].data(), sizes[k]);
  for (int i = 0; i < 100 && wire.recvs_done.size() < sizes.size(); ++i) wire.pump();
  ASSERT_EQ(wire.recvs_done.size(), sizes.size());
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    EXPECT_EQ(wire.sends_done[k], 100 + k);
    EXPECT_EQ(wire.recvs_done[k], 200 + k);
    EXPECT_EQ(received[k], sent[k]) << "message " << k << " of " << sizes[k] << " bytes";
  }
  EXPECT_EQ(wire.sender.credits(), 4u);  // every credit came back
}

TEST(VerbsFlow, SenderStopsWhenTheRingIsFullAndDataWaitsForItsReceive) {
  Wire wire(4, 16);
  const auto message = pattern(16 * 10, 3);
  wire.sender.post_send(1, message.data(), message.size());
  EXPECT_EQ(wire.pump(), 4u);  // one fragment per slot, then no credit
  EXPECT_EQ(wire.sender.credits(), 0u);
  EXPECT_EQ(wire.pump(), 0u);  // no receive posted: the fragments stay in the ring, no credit returns
  EXPECT_TRUE(wire.sends_done.empty());
  std::vector<char> got(message.size());
  wire.receiver.post_recv(2, got.data(), got.size());
  for (int i = 0; i < 10 && wire.recvs_done.empty(); ++i) wire.pump();
  EXPECT_EQ(got, message);
  EXPECT_EQ(wire.sends_done, std::vector<Request>{1});
}

TEST(VerbsFlow, CreditsGoBackInBatchesButNeverWhileTheSenderCouldStarve) {
  char staging[8 * 8], ring[8 * 8] = {};
  RingFlow receiver(8, 8, staging, ring);
  std::vector<char> out(8);
  std::vector<Request> done;
  receiver.post_recv(1, out.data(), 8);
  receiver.fragment_arrived(8);
  receiver.fragment_arrived(8);  // waits for a receive not yet posted
  receiver.deliver(done);
  EXPECT_EQ(receiver.take_credits(), 0u);  // 1 freed, below a quarter ring, data still waiting
  receiver.post_recv(2, out.data(), 8);
  receiver.deliver(done);
  EXPECT_EQ(receiver.take_credits(), 2u);  // the ring is drained: everything owed goes back
  EXPECT_EQ(receiver.take_credits(), 0u);
}

TEST(VerbsFlow, ProtocolViolationsAreRefused) {
  Wire wire(2, 8);
  EXPECT_THROW(wire.sender.credits_returned(1), std::logic_error);  // more credits than slots
  EXPECT_THROW(wire.receiver.fragment_arrived(9), std::logic_error);  // larger than a slot
  const auto message = pattern(8, 1);
  std::vector<char> small(4);
  wire.sender.post_send(1, message.data(), 8);
  wire.receiver.post_recv(2, small.data(), 4);
  try {
    wire.pump();
    FAIL() << "an 8-byte fragment was accepted by a 4-byte receive";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("disagree on a message size"), std::string::npos) << e.what();
  }
}

TEST(VerbsAttributes, RoundTripThroughTheRendezvousText) {
  VerbsRankInfo info;
  info.host = "node7";
  info.gid = "00000000000000000000ffffc0a8010a";
  info.mtu = 4096;
  info.slots = 16;
  info.slot_bytes = 262144;
  info.peers.resize(3);
  info.peers[0] = {0x11, 0xabcdef, 0x7f0012345000, 0x1234};
  info.peers[2] = {0x12, 7, 0x7f0012346000, 0x99};
  const VerbsRankInfo back = decode_rank_info(encode_rank_info(info), 1, 3);
  EXPECT_EQ(back.host, "node7");
  EXPECT_EQ(back.gid, info.gid);
  EXPECT_EQ(back.mtu, 4096);
  EXPECT_EQ(back.slots, 16u);
  EXPECT_EQ(back.slot_bytes, 262144u);
  ASSERT_EQ(back.peers.size(), 3u);
  for (int r : {0, 2}) {
    EXPECT_EQ(back.peers[r].qpn, info.peers[r].qpn);
    EXPECT_EQ(back.peers[r].psn, info.peers[r].psn);
    EXPECT_EQ(back.peers[r].ring_addr, info.peers[r].ring_addr);
    EXPECT_EQ(back.peers[r].ring_rkey, info.peers[r].ring_rkey);
  }
}

TEST(VerbsAttributes, MalformedTextNamesTheRankAndTheField) {
  const std::string good = "host=h gid=00000000000000000000ffffc0a8010a lid=0 mtu=1024 slots=4 slot_bytes=64";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"host=h gid=xyz lid=0 mtu=1024 slots=4 slot_bytes=64 0:1:2:3:4", "gid is not 32 hex digits"},
      {good + " 0:1:2:zz:4", "addr 'zz' is not a number"},
      {good + " 0:1:2", "is not rank:qpn:psn:addr:rkey"},
      {good + " 5:1:2:3:4", "peer rank 5 is outside the 2 ranks"},
      {good, "no QP for rank 0"},
      {"gid=0 host=h", "no host"},
  };
  for (const auto& [text, wanted] : cases) {
    try {
      decode_rank_info(text, 1, 2);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InfraError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("rank 1 published malformed QP attributes"), std::string::npos) << what;
      EXPECT_NE(what.find(wanted), std::string::npos) << what;
    }
  }
}

TEST(VerbsOptions, FromThePlanAndItsSchema) {
  const json params = {{"device", "rxe0"}, {"ib_port", 2}, {"gid_index", 1}, {"slots", 8}, {"slot_bytes", 4096}};
  const VerbsOptions o = verbs_options_from(params);
  EXPECT_EQ(o.device, "rxe0");
  EXPECT_EQ(o.ib_port, 2);
  EXPECT_EQ(o.gid_index, 1);
  EXPECT_EQ(o.slots, 8u);
  EXPECT_EQ(o.slot_bytes, 4096u);
  EXPECT_EQ(verbs_options_from(json::object()).gid_index, -1);  // automatic GID choice

  const JsonSchema schema(sweep_params_schema());
  EXPECT_TRUE(schema.validate({{"transport", "verbs"}, {"verbs", params}}).empty());
  EXPECT_FALSE(schema.validate({{"transport", "ib"}}).empty());
  EXPECT_FALSE(schema.validate({{"verbs", {{"slots", 1}}}}).empty());
  EXPECT_FALSE(schema.validate({{"verbs", {{"port", 1}}}}).empty());  // unknown field
}

// On a host without an RDMA device (as CI): every rank learns it and none falls back to TCP.
TEST(VerbsTransport, NoDeviceMakesEveryRankSkipNamingTheHost) {
  if (!verbs::device_names().empty()) GTEST_SKIP() << "this host has an RDMA device";
  rbtest::LocalRendezvous shared(3);
  std::vector<std::string> reasons(3);
  const auto errors = rbtest::on_ranks(3, [&](int r) {
    rbtest::LocalRendezvous::Rank rdv(shared, r);
    try {
      connect_verbs_mesh(rdv, r, 3, "127.0.0.1", "host" + std::to_string(r), VerbsOptions{}, Deadline(10s));
    } catch (const TransportUnavailable& e) {
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
  VerbsOptions o;
  o.device = "mlx9_9";
  try {
    connect_verbs_mesh(rdv, 0, 1, "127.0.0.1", "h", o, Deadline(5s));
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
        VerbsOptions o;
        o.slots = 4;
        o.slot_bytes = 4096;  // messages of up to 1.5 MiB span the 16 KiB ring many times over
        const auto t = connect_verbs_mesh(rdv, r, world, "127.0.0.1", "host" + std::to_string(r), o, Deadline(30s));
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
        const Request a = t->recv((r + world - 1) % world, nullptr, 0);
        const Request b = t->recv((r + world - 1) % world, got.data(), 3);
        const char hello[3] = {'h', 'i', static_cast<char>(r)};
        t->wait(t->send((r + 1) % world, hello, 3), Deadline(10s));
        t->wait(std::vector<Request>{a, b}, Deadline(10s));
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
    const auto t = connect_verbs_mesh(rdv, r, 2, "127.0.0.1", "host" + std::to_string(r), VerbsOptions{}, Deadline(30s));
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
