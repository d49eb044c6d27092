// One push per node (cluster.aggregate_per_node): the workers of a node, all on one host, meet in
// a shared segment that the node's first worker (its pusher) makes. Every step each other
// worker (a member) writes its gradient into a slot of the segment; the pusher adds them to its
// own and pushes the sum, as the node's one client of the servers, then publishes the weights
// it pulls to the segment, where the members copy them. Each side is a PsClient to its
// training loop: NodePusher wraps the pusher's real client, NodeMember reaches only the segment.
//
// What the node's push is: downpour and ssp push the sum of the node's gradients (as if each
// had pushed its own on the same weights), sync their mean (a round averages over the nodes);
// the model state (the vector's last plan.num_state() values) is their mean. A member that
// ends early is left out of the later rounds; one that ends late is served by the pusher after
// its own loop has ended (its Finish). A side whose process is gone, or silent for
// peer_timeout, is lost: the pusher carries on without a lost member (or fails the node's
// pushes when the job stops on a lost worker), a member fails when the pusher is lost.
#ifndef MONSOON_WORKER_NODE_AGGREGATION_H_
#define MONSOON_WORKER_NODE_AGGREGATION_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/process/shared_segment.h"
#include "worker/ps_client.h"

namespace monsoon {

class NodeSegment;  // the segment's layout (node_aggregation.cc)

struct NodeOptions {
  int node = 0;               // the node's index: the pusher's client index at the servers
  int first_worker = 0;       // the pusher's worker index; member m is worker first_worker + m
  int workers = 1;            // the node's workers, the pusher included
  bool mean = false;          // push the mean of the node's gradients (sync), not their sum
  bool stop_on_loss = false;  // a lost member fails the pusher's pushes
  absl::Duration heartbeat = absl::Seconds(1);      // how often each side says it is alive
  absl::Duration peer_timeout = absl::Seconds(30);  // a silent side is lost after this long
  absl::Duration join_timeout = absl::Seconds(60);  // the pusher waits this long for a member
};

// Says a side is alive: writes the monotonic clock into the segment every `interval`.
class NodeHeartbeat {
 public:
  NodeHeartbeat(std::atomic<int64_t>* beat, absl::Duration interval);
  ~NodeHeartbeat();

 private:
  absl::Notification done_;
  std::thread thread_;
};

class NodePusher : public PsClient {
 public:
  // Makes the node's segment for `servers`' plan, writes where it is to the file
  // `published_at` (atomically) and asks the servers where the node resumes.
  static absl::StatusOr<std::unique_ptr<NodePusher>> Start(std::unique_ptr<PsClient> servers,
                                                           const NodeOptions& options,
                                                           const std::string& published_at);
  ~NodePusher() override;

  absl::StatusOr<PullResult> PullAll(absl::Span<float> params, const PullWait& wait,
                                     ChunkVersions* versions) override;
  absl::StatusOr<PushSummary> PushAll(FiniteGradient gradient, const ChunkVersions& base_versions,
                                      const PushOrigin& origin) override;
  absl::StatusOr<PushSummary> PushPullAll(FiniteGradient gradient,
                                          const ChunkVersions& base_versions,
                                          const PushOrigin& origin, PullAfterPush* pull) override;
  // Unimplemented: nodes are refused for the elastic algorithms.
  absl::StatusOr<PushSummary> ExchangeAll(absl::Span<const float> weights,
                                          absl::Span<float> difference, ChunkVersions* versions,
                                          const PushOrigin& origin) override;
  absl::StatusOr<ResumePoint> Resume() override { return resume_; }
  // Serves the members' remaining rounds and pulls until each has finished or is lost, then
  // tells the servers the node is done.
  absl::Status Finish() override;
  absl::StatusOr<std::vector<ServerStats>> AllStats() override { return servers_->AllStats(); }
  TransferCounters counters() const override { return servers_->counters(); }
  const ShardingPlan& plan() const override { return servers_->plan(); }

 private:
  NodePusher(std::unique_ptr<PsClient> servers, const NodeOptions& options,
             std::unique_ptr<SharedSegment> segment);

  // Waits until every member still in the node has written round `rounds_`'s gradient (or
  // ends), then sums them with `own` (none: the pusher's loop has ended) into sum_, and scales
  // it (NodeOptions::mean). Fails when a member is lost and options_.stop_on_loss.
  absl::StatusOr<FiniteGradient> GatherRound(absl::Span<const float> own);
  // One round: GatherRound(own), send(the node's gradient) unless that failed, then
  // CompleteRound with the outcome; `origin` is the push's.
  template <class Send>
  absl::StatusOr<PushSummary> Round(absl::Span<const float> own, const PushOrigin& origin,
                                    Send send);
  // Tells the members the round is over, with its outcome.
  void CompleteRound(const absl::StatusOr<PushSummary>& outcome);
  // Copies the pulled weights into the segment for the members.
  void Publish(absl::Span<const float> params, const ChunkVersions& versions,
               const absl::StatusOr<PullResult>& result);
  // Marks members gone or silent as lost; an error when one is and options_.stop_on_loss.
  absl::Status CheckMembers();
  // Whether member m takes part in rounds (joined, not done, not lost).
  bool Active(int m) const;

  const std::unique_ptr<PsClient> servers_;
  const NodeOptions options_;
  const std::unique_ptr<SharedSegment> segment_;
  std::unique_ptr<NodeSegment> layout_;
  std::unique_ptr<NodeHeartbeat> heartbeat_;
  const absl::Time started_;
  ResumePoint resume_;
  uint32_t rounds_ = 0;               // rounds completed
  std::vector<float> sum_;            // the round's node gradient
  PushOrigin last_origin_;  // the pusher's last push: a served round continues its numbering
};

class NodeMember : public PsClient {
 public:
  // Waits for the file `published_at` of the pusher of `options`' node (up to `timeout`;
  // Cancelled once *stop is true), maps its segment and joins it as worker `worker`.
  // FailedPrecondition, naming both hosts, when the pusher runs on another host.
  static absl::StatusOr<std::unique_ptr<NodeMember>> Join(const ShardingPlan& plan,
                                                          const NodeOptions& options, int worker,
                                                          const std::string& published_at,
                                                          absl::Duration timeout,
                                                          const std::atomic<bool>* stop);
  ~NodeMember() override;

  // The weights of the pusher's pull that matches this one (or a later one); `wait` is served
  // only once the pusher's own loop has ended.
  absl::StatusOr<PullResult> PullAll(absl::Span<float> params, const PullWait& wait,
                                     ChunkVersions* versions) override;
  // Writes the gradient to this member's slot and returns the node's push's outcome.
  absl::StatusOr<PushSummary> PushAll(FiniteGradient gradient, const ChunkVersions& base_versions,
                                      const PushOrigin& origin) override;
  absl::StatusOr<PushSummary> PushPullAll(FiniteGradient gradient,
                                          const ChunkVersions& base_versions,
                                          const PushOrigin& origin, PullAfterPush* pull) override;
  absl::StatusOr<PushSummary> ExchangeAll(absl::Span<const float> weights,
                                          absl::Span<float> difference, ChunkVersions* versions,
                                          const PushOrigin& origin) override;
  // The node's resume point, as the pusher got it from the servers.
  absl::StatusOr<ResumePoint> Resume() override;
  // Leaves the node's rounds.
  absl::Status Finish() override;
  // Unimplemented: a member does not reach the servers.
  absl::StatusOr<std::vector<ServerStats>> AllStats() override;
  // No bytes to or from the servers: the node's are the pusher's.
  TransferCounters counters() const override { return {}; }
  const ShardingPlan& plan() const override { return plan_; }

 private:
  NodeMember(const ShardingPlan& plan, const NodeOptions& options, int slot,
             std::unique_ptr<SharedSegment> segment, const std::atomic<bool>* stop);

  // Writes the gradient as this member's next round and waits for the round to complete.
  absl::StatusOr<PushSummary> SendRound(FiniteGradient gradient);
  // Asks for this member's next pull, with `wait`: served by the pusher only once its own loop
  // has ended (its Finish); the caller rings the doorbell.
  void AskForPull(const PullWait& wait);
  // Waits for publication `want`, then copies the newest one out.
  absl::StatusOr<PullResult> CopyPublished(uint32_t want, absl::Span<float> params,
                                           ChunkVersions* versions);
  // Waits until *word reaches `target`; Unavailable when the pusher is lost, Cancelled on stop.
  absl::Status WaitFor(const std::atomic<uint32_t>& word, uint32_t target, const char* what);

  const ShardingPlan plan_;
  const NodeOptions options_;
  const int slot_;
  const std::unique_ptr<SharedSegment> segment_;
  std::unique_ptr<NodeSegment> layout_;
  std::unique_ptr<NodeHeartbeat> heartbeat_;
  const std::atomic<bool>* const stop_;
  uint32_t rounds_ = 0;  // rounds this member has written
  uint32_t pulls_ = 0;   // pulls this member has made
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_NODE_AGGREGATION_H_
