// The ring transport's device-free parts: the ring protocol (fragments, credits, matching), the QP
// attributes published through the rendezvous, and the MTU in bytes and as libibverbs' enum.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "rocebench/common/errors.hpp"
#include "rocebench/transport/verbs/flow.hpp"
#include "rocebench/transport/verbs/mesh.hpp"
#include "rocebench/transport/verbs/rc.hpp"

using namespace rocebench;
using namespace rocebench::verbs;
using transport::Request;

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

TEST(VerbsMtu, BytesAndEnumRoundTrip) {
  EXPECT_EQ(mtu_bytes(IBV_MTU_256), 256);
  EXPECT_EQ(mtu_bytes(IBV_MTU_4096), 4096);
  for (int bytes : {256, 512, 1024, 2048, 4096}) EXPECT_EQ(mtu_bytes(mtu_of_bytes(bytes)), bytes);
  EXPECT_EQ(mtu_of_bytes(1500), IBV_MTU_1024);  // an Ethernet MTU is no path MTU: the safe default
}
