// The parts of a parameter server on their own: the exactly-once ledger, a synchronous round,
// the wait queue, membership under a clock the test moves, and the checkpoint's field list.
#include <catch2/catch.hpp>

#include "server/chunk_ledger.h"
#include "server/membership.h"
#include "server/server_checkpoint.h"
#include "server/sync_round.h"
#include "server/wait_queue.h"

namespace monsoon {
namespace {

PushOrigin Nth(uint64_t sequence) {
  PushOrigin origin;
  origin.sequence = sequence;
  origin.position.step = static_cast<int64_t>(sequence) * 10;
  return origin;
}

TEST_CASE("ChunkLedger: each push is processed once, in order", "[server][ledger]") {
  ChunkLedger ledger(2);
  CHECK(ledger.IsDuplicate(7, 1, Nth(1)).value() == false);
  ledger.Book(1, Nth(1), /*was_applied=*/true);
  CHECK(ledger.IsDuplicate(7, 1, Nth(1)).value() == true);  // a retry
  const absl::StatusOr<bool> gap = ledger.IsDuplicate(7, 1, Nth(3));
  CHECK(absl::IsOutOfRange(gap.status()));
  CHECK(gap.status().message() == "push 3 of worker 1 for chunk 7: push 2 has not arrived");
  ledger.Book(1, Nth(2), /*was_applied=*/false);  // dropped: processed, not applied
  CHECK(ledger.clock[1] == 2);
  CHECK(ledger.applied[1] == 1);
  CHECK(ledger.sequence_sum[1] == 1);
  CHECK(ledger.duplicates[1] == 1);
  CHECK(ledger.position[1].step == 20);
  CHECK(ledger.clock[0] == 0);
  CHECK(ledger.IsDuplicate(7, 0, PushOrigin{}).value() == false);  // unsequenced
}

TEST_CASE("SyncRound: closes with the weighted mean and its furthest epoch, then is empty",
          "[server][sync]") {
  SyncRound round;
  round.Allocate(2, 3);
  round.Add(std::vector<float>{1, 2}, 1.0f, 0.5);
  round.Add(std::vector<float>{4, 8}, 0.5f, 0.25);
  std::vector<float> mean;
  double epoch = -1;
  round.Close([&](absl::Span<const float> m, double e) {
    mean.assign(m.begin(), m.end());
    epoch = e;
  });
  CHECK(mean[0] == Approx((1 + 2) / 1.5));
  CHECK(mean[1] == Approx((2 + 4) / 1.5));
  CHECK(epoch == 0.5);
  CHECK(round.sum == std::vector<float>{0, 0});
  CHECK(round.weight == 0);
  CHECK(round.fresh == 0);
}

TEST_CASE("WaitQueue: releases what holds, expires what is overdue, keeps the rest",
          "[server][wait]") {
  WaitQueue queue;
  std::vector<std::string> calls;
  const absl::Time t0 = absl::UnixEpoch();
  for (uint64_t v : {1, 5, 9}) {
    queue.Add({v, 0}, t0 + absl::Seconds(v), [&calls, v](absl::Status s) {
      calls.push_back(absl::StrCat(v, ":", s.ok() ? "ok" : s.message()));
    });
  }
  std::vector<Release> released;
  const auto holds = [](const PullCondition& c) { return c.min_version <= 1; };
  const auto expired = [](const PullCondition& c) {
    return absl::DeadlineExceededError(absl::StrCat("late for ", c.min_version));
  };
  CHECK(queue.Collect(t0 + absl::Seconds(6), holds, expired, &released) == 2);
  RunReleases(&released);
  std::sort(calls.begin(), calls.end());
  CHECK(calls == std::vector<std::string>{"1:ok", "5:late for 5"});
  CHECK(!queue.empty());
  CHECK(queue.TakeAll(absl::CancelledError("closing"), &released) == 1);
  RunReleases(&released);
  CHECK(calls.back() == "9:closing");
  CHECK(queue.empty());
}

TEST_CASE("Membership: silence past the peer timeout loses a worker; hearing it brings it back",
          "[server][reliability]") {
  ServerRules rules;
  rules.peer_timeout = absl::Seconds(10);
  rules.join_timeout = absl::Seconds(60);
  const absl::Time t0 = absl::UnixEpoch();
  Membership members(3, /*workers=*/2, /*evaluator=*/false, rules, t0);
  REQUIRE(members.HeardWorker(0, 1, t0 + absl::Seconds(1), "ipv4:10.0.0.1:5").ok());
  CHECK(absl::IsInvalidArgument(members.CheckWorker("push", 2)));
  CHECK(!members.CheckPeers(t0 + absl::Seconds(11)));  // 10 s silent: not yet
  CHECK(members.CheckPeers(t0 + absl::Seconds(12)));
  CHECK(members.Gone(0));
  CHECK(!members.Gone(1));  // never heard, within the join timeout
  CHECK(members.SlowestClock(std::vector<uint64_t>{3, 7}) == 7);
  std::vector<std::string> events = members.TakeEvents();
  REQUIRE(events.size() == 1);
  CHECK(events[0].rfind("server 3: worker 0 (ipv4:10.0.0.1:5) lost: nothing heard for 11s", 0) ==
        0);
  REQUIRE(members.HeardWorker(0, 1, t0 + absl::Seconds(13)).ok());
  CHECK(!members.Gone(0));
  CHECK(absl::IsFailedPrecondition(members.HeardWorker(0, 0, t0 + absl::Seconds(14))));
  for (int s = 13; s <= 60; ++s) members.CheckPeers(t0 + absl::Seconds(s));  // worker 0 again
  CHECK(!members.Gone(1));
  CHECK(members.CheckPeers(t0 + absl::Seconds(61)));  // worker 1 never joined
  CHECK(members.LiveWorkers() == 0);
  CHECK(members.AllFinished());
}

TEST_CASE("Membership: a server that was itself stalled does not blame its peers",
          "[server][reliability]") {
  ServerRules rules;
  rules.peer_timeout = absl::Seconds(10);
  rules.join_timeout = absl::Seconds(20);
  const absl::Time t0 = absl::UnixEpoch();
  Membership members(0, /*workers=*/2, /*evaluator=*/true, rules, t0);
  REQUIRE(members.HeardWorker(0, 1, t0 + absl::Seconds(1)).ok());
  members.HeardEvaluator(t0 + absl::Seconds(1));
  CHECK(!members.CheckPeers(t0 + absl::Seconds(2)));
  // SIGSTOP for 13 s: worker 0 and the evaluator were silent 1 s before it, worker 1 (never
  // heard) 2 s into its join timeout.
  CHECK(!members.CheckPeers(t0 + absl::Seconds(15)));
  CHECK(members.LiveWorkers() == 2);
  std::vector<std::string> events = members.TakeEvents();
  REQUIRE(events.size() == 1);
  CHECK(events[0] ==
        "server 0: this server did not run for 13s (stopped, or its machine stalled): that "
        "silence does not count against its peers");
  // Silence after the stall counts: worker 0 is lost once 10 s of it have run.
  absl::Time now = t0 + absl::Seconds(15);
  while (now < t0 + absl::Seconds(23)) {
    now += absl::Milliseconds(250);
    members.HeardEvaluator(now);
    CHECK(!members.CheckPeers(now));
  }
  for (int i = 0; i < 8; ++i) {
    now += absl::Milliseconds(250);
    members.HeardEvaluator(now);
    members.CheckPeers(now);
  }
  CHECK(members.Gone(0));
  events = members.TakeEvents();
  REQUIRE(!events.empty());
  CHECK(events[0].find("worker 0 (address unknown) lost: nothing heard for 10") !=
        std::string::npos);
}

TEST_CASE("Server checkpoint: one field list saves and loads a chunk", "[server][checkpoint]") {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/parts_checkpoint";
  uint64_t version = 12;
  std::vector<float> values = {1, 2, 3}, state = {4, 5, 6};
  ChunkLedger ledger(2);
  ledger.Book(1, Nth(1), true);
  SyncRound round;
  round.Allocate(3, 2);
  round.Add(std::vector<float>{1, 1, 1}, 1.0f, 2.0);
  round.from[1] = true;
  {
    auto out = CheckpointWriter::Begin(dir);
    REQUIRE(out.ok());
    SaveArchive archive(out->get());
    ChunkRecord record{4, &version, &values, &state, &ledger, &round};
    REQUIRE(VisitChunk(archive, record, {}).ok());
    REQUIRE((*out)->Commit(2).ok());
  }
  std::vector<std::string> skipped;
  auto in = OpenNewestCheckpoint(dir, &skipped);
  REQUIRE(in.ok());
  uint64_t version2 = 0;
  std::vector<float> values2, state2(3);
  ChunkLedger ledger2(2);
  SyncRound round2;
  round2.Allocate(3, 2);
  LoadArchive archive(in->get());
  ChunkRecord record{-1, &version2, &values2, &state2, &ledger2, &round2};
  REQUIRE(VisitChunk(archive, record, {3, 2, 3, 3, 2}).ok());
  REQUIRE((*in)->Finish().ok());
  CHECK(record.id == 4);
  CHECK(version2 == 12);
  CHECK(values2 == values);
  CHECK(state2 == state);
  CHECK(ledger2.clock == ledger.clock);
  CHECK(ledger2.position[1].step == 10);
  CHECK(round2.sum == round.sum);
  CHECK(round2.epoch == 2.0);
  CHECK(round2.from == std::vector<bool>{false, true});
}

}  // namespace
}  // namespace monsoon
