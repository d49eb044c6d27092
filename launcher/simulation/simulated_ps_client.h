// A simulated worker's PsClient: the same ParameterServer objects a real server role serves,
// called at the virtual times the messages arrive. Each call hands the worker's turn back to
// the event loop and returns once its last reply has arrived in virtual time.
#ifndef MONSOON_LAUNCHER_SIMULATION_SIMULATED_PS_CLIENT_H_
#define MONSOON_LAUNCHER_SIMULATION_SIMULATED_PS_CLIENT_H_

#include <functional>
#include <memory>
#include <vector>

#include "launcher/simulation/event_loop.h"
#include "launcher/simulation/serial_processor.h"
#include "launcher/simulation/shared_link.h"
#include "launcher/simulation/turns.h"
#include "server/parameter_server.h"
#include "worker/ps_client.h"

namespace monsoon {

// What every simulated client shares (all borrowed).
struct SimulatedNetwork {
  EventLoop* loop = nullptr;
  Turns* turns = nullptr;
  std::vector<ParameterServer*> servers;
  std::vector<SharedLink>* to_servers = nullptr;    // each server's link, inbound
  std::vector<SharedLink>* from_servers = nullptr;  // and outbound
  // Each server's processor, which applies the pushes and exchanges that reach it.
  std::vector<SerialProcessor>* processors = nullptr;
  // Set once the simulation is being torn down: replies are dropped, nobody is resumed.
  bool closed = false;
};

class SimulatedPsClient final : public PsClient {
 public:
  // Worker `worker`, running as participant `worker` of network.turns, on `clock` (borrowed):
  // each call's messages leave after the compute the clock has counted since the last.
  SimulatedPsClient(const SimulatedNetwork* network, int worker, SimulatedClock* clock);

  absl::StatusOr<PullResult> PullAll(absl::Span<float> params, const PullWait& wait,
                                     ChunkVersions* versions) override;
  absl::StatusOr<PushSummary> PushAll(FiniteGradient gradient, const ChunkVersions& base_versions,
                                      const PushOrigin& origin) override;
  absl::StatusOr<PushSummary> PushPullAll(FiniteGradient gradient,
                                          const ChunkVersions& base_versions,
                                          const PushOrigin& origin, PullAfterPush* pull) override;
  absl::StatusOr<PushSummary> ExchangeAll(absl::Span<const float> weights,
                                          absl::Span<float> difference, ChunkVersions* versions,
                                          const PushOrigin& origin) override;
  absl::StatusOr<ResumePoint> Resume() override;
  absl::Status Finish() override;
  absl::StatusOr<std::vector<ServerStats>> AllStats() override;
  TransferCounters counters() const override { return {bytes_sent_, bytes_received_}; }
  const ShardingPlan& plan() const override { return network_->servers.front()->plan(); }

 private:
  // One chunk's update at its server: a push (of a gradient) or an exchange (of weights, the
  // difference written back).
  using Apply = std::function<absl::StatusOr<PushResult>(const Chunk& c)>;

  // Sends every chunk after the worker's compute since its last call, applies it at its
  // server once that server's processor gets to it, and waits for the replies (each carrying the chunk back when
  // `reply_chunks`). Fills summary and, with reply_chunks, pulled_.
  absl::StatusOr<PushSummary> Update(bool reply_chunks, const Apply& apply);
  // One chunk's update on its arrival at its server, and the reply.
  void ApplyChunk(const Chunk& c, bool reply_chunk, const Apply& apply, PushSummary* summary);
  // Asks chunk c's server for it once `condition` holds; the reply carries it back.
  void RequestChunk(const Chunk& c, const PullCondition& condition);
  // Keeps a chunk a reply brought (pulled_), or the call's first failure.
  void Keep(const Chunk& c, absl::StatusOr<ChunkSnapshot> snapshot);
  void Fail(const absl::Status& status);
  // PushAll, and with `pull_after` each chunk's reply carries its weights back (pulled_).
  absl::StatusOr<PushSummary> Push(absl::Span<const float> gradient,
                                   const ChunkVersions& base_versions, const PushOrigin& origin,
                                   bool pull_after);
  // Reply to a chunk's message: `bytes` back over its server's link, then one fewer pending.
  void Reply(const Chunk& c, double bytes);
  // Hands the turn back until every pending reply has arrived; Cancelled when torn down,
  // else the first error a server answered.
  absl::Status AwaitReplies();
  // Copies pulled_ into `params` and `versions` (nullable) and returns their minima.
  PullResult TakePulled(absl::Span<float> params, ChunkVersions* versions);

  const SimulatedNetwork* const network_;
  const int worker_;
  SimulatedClock* const clock_;
  int pending_ = 0;
  absl::Status failure_;
  std::vector<ChunkSnapshot> pulled_;  // by chunk id, until TakePulled
  uint64_t bytes_sent_ = 0;
  uint64_t bytes_received_ = 0;
};

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_SIMULATION_SIMULATED_PS_CLIENT_H_
