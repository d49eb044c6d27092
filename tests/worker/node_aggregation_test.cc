// A node's workers meeting in their shared segment (worker/node_aggregation.h): the pusher's
// servers are a recording fake, its members threads of the test, each with its own mapping of
// the segment, as separate processes would have.
#include "worker/node_aggregation.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <limits>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

// The servers of a node's pusher: records what reaches them; a pull returns weights that all
// hold the number of pulls so far, each chunk at that version.
class RecordingServers : public PsClient {
 public:
  explicit RecordingServers(ShardingPlan plan) : plan_(std::move(plan)) {}

  absl::StatusOr<PullResult> PullAll(absl::Span<float> params, const PullWait& wait,
                                     ChunkVersions* versions) override {
    absl::MutexLock lock(&mu_);
    ++pulls;
    waits.push_back(wait);
    std::fill(params.begin(), params.end(), static_cast<float>(pulls));
    if (versions != nullptr) versions->assign(plan_.num_chunks(), pulls);
    return PullResult{static_cast<uint64_t>(pulls), 0};
  }
  absl::StatusOr<PushSummary> PushAll(FiniteGradient gradient, const ChunkVersions&,
                                      const PushOrigin& origin) override {
    absl::MutexLock lock(&mu_);
    pushed.emplace_back(gradient.values().begin(), gradient.values().end());
    sequences.push_back(origin.sequence);
    PushSummary summary;
    summary.mean_staleness = 0.5 * pushed.size();
    return summary;
  }
  absl::StatusOr<PushSummary> PushPullAll(FiniteGradient gradient,
                                          const ChunkVersions& base_versions,
                                          const PushOrigin& origin, PullAfterPush* pull) override {
    MONSOON_ASSIGN_OR_RETURN(PushSummary summary, PushAll(gradient, base_versions, origin));
    MONSOON_ASSIGN_OR_RETURN(pull->result, PullAll(pull->params, {}, pull->versions));
    return summary;
  }
  absl::StatusOr<PushSummary> ExchangeAll(absl::Span<const float>, absl::Span<float>,
                                          ChunkVersions*, const PushOrigin&) override {
    return absl::UnimplementedError("not here");
  }
  absl::StatusOr<ResumePoint> Resume() override { return ResumePoint{7, {7, 1, 3}}; }
  absl::Status Finish() override {
    absl::MutexLock lock(&mu_);
    finished = true;
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<ServerStats>> AllStats() override {
    return std::vector<ServerStats>{};
  }
  TransferCounters counters() const override { return {}; }
  const ShardingPlan& plan() const override { return plan_; }

  absl::Mutex mu_;
  int pulls = 0;
  std::vector<PullWait> waits;
  std::vector<std::vector<float>> pushed;
  std::vector<uint64_t> sequences;
  bool finished = false;

 private:
  const ShardingPlan plan_;
};

// 6 parameters: 5 trained in 2 chunks, and 1 of model state in a chunk of its own.
ShardingPlan Plan() { return *ShardingPlan::Create(6, 1, 3, /*num_state=*/1); }

std::string NodeFile(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name, "-", getpid());
}

NodeOptions Options(int workers) {
  NodeOptions options;
  options.workers = workers;
  options.heartbeat = absl::Milliseconds(20);
  options.peer_timeout = absl::Milliseconds(300);
  options.join_timeout = absl::Seconds(5);
  return options;
}

struct Node {
  Node(const std::string& name, NodeOptions options) : file(NodeFile(name)) {
    auto servers_owned = std::make_unique<RecordingServers>(Plan());
    servers = servers_owned.get();
    pusher = *NodePusher::Start(std::move(servers_owned), options, file);
    for (int m = 1; m < options.workers; ++m) {
      members.push_back(*NodeMember::Join(Plan(), options, options.first_worker + m, file,
                                          absl::Seconds(5), nullptr));
    }
  }
  std::string file;
  RecordingServers* servers = nullptr;
  std::unique_ptr<NodePusher> pusher;
  std::vector<std::unique_ptr<NodeMember>> members;
};

std::vector<float> Filled(float v) { return std::vector<float>(6, v); }

FiniteGradient Finite(const std::vector<float>& v) { return *FiniteGradient::Check(v); }

TEST_CASE("a node pushes its workers' summed gradients once, their state averaged") {
  Node node("sum", Options(3));
  const std::vector<float> a = Filled(1), b = Filled(2), c = Filled(6);
  std::vector<absl::StatusOr<PushSummary>> got(2);
  std::thread t1([&] { got[0] = node.members[0]->PushAll(Finite(b), {}, {}); });
  std::thread t2([&] { got[1] = node.members[1]->PushAll(Finite(c), {}, {}); });
  const absl::StatusOr<PushSummary> own = node.pusher->PushAll(Finite(a), {}, {});
  t1.join();
  t2.join();
  REQUIRE(own.ok());
  REQUIRE(node.servers->pushed.size() == 1);
  const std::vector<float> expected = {9, 9, 9, 9, 9, 3};  // sums; the state's mean
  CHECK(node.servers->pushed[0] == expected);
  for (const auto& summary : got) {
    REQUIRE(summary.ok());
    CHECK(summary->mean_staleness == own->mean_staleness);
  }
}

TEST_CASE("a sync node pushes the mean of its gradients") {
  NodeOptions options = Options(2);
  options.mean = true;
  Node node("mean", options);
  const std::vector<float> a = Filled(1), b = Filled(3);
  std::thread t([&] { REQUIRE(node.members[0]->PushAll(Finite(b), {}, {}).ok()); });
  REQUIRE(node.pusher->PushAll(Finite(a), {}, {}).ok());
  t.join();
  CHECK(node.servers->pushed.at(0) == Filled(2));
}

TEST_CASE("members get the weights and versions of the pusher's pulls and push-pulls") {
  Node node("pull", Options(2));
  std::vector<float> weights(6), mine(6);
  ChunkVersions versions, my_versions;
  std::thread t([&] {
    REQUIRE(node.members[0]->PullAll(absl::MakeSpan(mine), {}, &my_versions).ok());
    CHECK(mine == Filled(1));
    CHECK(my_versions == ChunkVersions{1, 1, 1});  // two chunks of weights, one of state
    const std::vector<float> g = Filled(1);
    PullAfterPush after{absl::MakeSpan(mine), &my_versions, {}};
    REQUIRE(node.members[0]->PushPullAll(Finite(g), {}, {}, &after).ok());
    CHECK(mine == Filled(2));
    CHECK(after.result.min_version == 2);
  });
  REQUIRE(node.pusher->PullAll(absl::MakeSpan(weights), {}, &versions).ok());
  const std::vector<float> g = Filled(1);
  PullAfterPush after{absl::MakeSpan(weights), &versions, {}};
  REQUIRE(node.pusher->PushPullAll(Finite(g), {}, {}, &after).ok());
  t.join();
  CHECK(node.servers->pulls == 2);
}

TEST_CASE("the pusher's Finish serves a member's remaining rounds and pulls") {
  Node node("finish", Options(2));
  const std::vector<float> one = Filled(1), two = Filled(2);
  std::thread t([&] {
    REQUIRE(node.members[0]->PushAll(Finite(one), {}, {}).ok());
    // Rounds past the pusher's own loop: pushed alone, numbered on from its last push.
    std::vector<float> mine(6);
    PullWait wait;
    wait.min_clock = 4;
    REQUIRE(node.members[0]->PullAll(absl::MakeSpan(mine), wait, nullptr).ok());
    CHECK(mine == Filled(1));
    REQUIRE(node.members[0]->PushAll(Finite(two), {}, {}).ok());
    REQUIRE(node.members[0]->Finish().ok());
  });
  PushOrigin origin;
  origin.sequence = 8;
  REQUIRE(node.pusher->PushAll(Finite(one), {}, origin).ok());
  REQUIRE(node.pusher->Finish().ok());
  t.join();
  const std::vector<float> both = {2, 2, 2, 2, 2, 1};  // the state: the mean of 1 and 1
  CHECK(node.servers->pushed == std::vector<std::vector<float>>{both, Filled(2)});
  CHECK(node.servers->sequences == std::vector<uint64_t>{8, 9});
  REQUIRE(node.servers->waits.size() == 1);
  CHECK(node.servers->waits[0].min_clock == 4);
  CHECK(node.servers->finished);
}

TEST_CASE("a member that finished early is left out of later rounds") {
  Node node("early", Options(2));
  REQUIRE(node.members[0]->Finish().ok());
  const std::vector<float> g = Filled(1);
  REQUIRE(node.pusher->PushAll(Finite(g), {}, {}).ok());
  CHECK(node.servers->pushed.at(0) == Filled(1));
}

TEST_CASE("a silent member is lost: the node pushes without it, or fails naming it") {
  for (const bool stop_on_loss : {false, true}) {
    NodeOptions options = Options(2);
    options.first_worker = 4;
    options.node = 2;
    options.stop_on_loss = stop_on_loss;
    Node node(absl::StrCat("silent", stop_on_loss), options);
    node.members.clear();  // its heartbeat stops, without a Finish
    const std::vector<float> g = Filled(1);
    const absl::StatusOr<PushSummary> pushed = node.pusher->PushAll(Finite(g), {}, {});
    if (stop_on_loss) {
      REQUIRE(absl::IsFailedPrecondition(pushed.status()));
      CHECK_THAT(std::string(pushed.status().message()),
                 Catch::Contains("worker 5 of node 2 was lost") &&
                     Catch::Contains("reliability.worker_loss"));
      CHECK(node.servers->pushed.empty());
    } else {
      REQUIRE(pushed.ok());
      CHECK(node.servers->pushed.at(0) == Filled(1));
    }
  }
}

TEST_CASE("a member whose pusher is gone fails by name instead of waiting") {
  Node node("gone", Options(2));
  node.pusher.reset();
  const std::vector<float> g = Filled(1);
  const absl::StatusOr<PushSummary> pushed = node.members[0]->PushAll(Finite(g), {}, {});
  REQUIRE(absl::IsUnavailable(pushed.status()));
  CHECK_THAT(std::string(pushed.status().message()),
             Catch::Contains("worker 0, which pushes for node 0, is gone"));
}

TEST_CASE("a node's non-finite sum is refused whole, and its members hear so") {
  Node node("overflow", Options(2));
  const std::vector<float> big = Filled(3e38f);
  absl::StatusOr<PushSummary> member;
  std::thread t([&] { member = node.members[0]->PushAll(Finite(big), {}, {}); });
  const absl::StatusOr<PushSummary> own = node.pusher->PushAll(Finite(big), {}, {});
  t.join();
  CHECK(IsNonFiniteRefusal(own.status()));
  CHECK(absl::IsInvalidArgument(member.status()));
  CHECK(node.servers->pushed.empty());
}

TEST_CASE("members resume where the servers put the node") {
  Node node("resume", Options(2));
  const absl::StatusOr<ResumePoint> resume = node.members[0]->Resume();
  REQUIRE(resume.ok());
  CHECK(resume->sequence == 7);
  CHECK(resume->position.step == 7);
  CHECK(resume->position.cursor == 3);
}

TEST_CASE("joining a node checks its host and gives up after its deadline") {
  const NodeOptions options = Options(2);
  const std::string missing = NodeFile("missing");
  const absl::StatusOr<std::unique_ptr<NodeMember>> late =
      NodeMember::Join(Plan(), options, 1, missing, absl::Milliseconds(100), nullptr);
  REQUIRE(absl::IsDeadlineExceeded(late.status()));
  CHECK_THAT(std::string(late.status().message()), Catch::Contains("did not publish"));

  const std::string elsewhere = NodeFile("elsewhere");
  std::ofstream(elsewhere) << getpid() << " 3 4096 another-host\n";
  const absl::StatusOr<std::unique_ptr<NodeMember>> far =
      NodeMember::Join(Plan(), options, 1, elsewhere, absl::Seconds(1), nullptr);
  REQUIRE(absl::IsFailedPrecondition(far.status()));
  CHECK_THAT(std::string(far.status().message()),
             Catch::Contains("runs on another host") && Catch::Contains("another-host"));
}

}  // namespace
}  // namespace monsoon
