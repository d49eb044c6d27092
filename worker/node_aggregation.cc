#include "worker/node_aggregation.h"

#include <glog/logging.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <new>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/file_util.h"
#include "core/finite.h"
#include "core/process/futex.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

constexpr uint64_t kNodeMagic = 0x65646f4e6e6f6f4dULL;  // "MoonNode"
constexpr size_t kMessageBytes = 480;
// How often a wait looks at its peers' liveness (and the stop flag) while nothing changes.
constexpr absl::Duration kLivenessPoll = absl::Milliseconds(100);

enum SlotState : uint32_t { kAbsent = 0, kActive = 1, kDone = 2, kLost = 3 };

int64_t MonotonicNanos() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

// True when process `pid` has ended (or is a zombie waiting to be reaped).
bool ProcessGone(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t end = stat.rfind(')');
  if (end == std::string::npos || end + 2 >= stat.size()) return true;
  const char state = stat[end + 2];
  return state == 'Z' || state == 'X';
}

// A status in plain bytes, written by one process and read by another.
struct Outcome {
  int32_t code = 0;
  char message[kMessageBytes] = {};

  void Set(const absl::Status& s) {
    code = static_cast<int32_t>(s.code());
    const size_t n = std::min(s.message().size(), kMessageBytes - 1);
    std::memcpy(message, s.message().data(), n);
    message[n] = '\0';
  }
  absl::Status Get() const {
    return absl::Status(static_cast<absl::StatusCode>(code), std::string(message));
  }
};

}  // namespace

// The segment: a header, one slot per worker of the node (slot 0 is the pusher's), the
// published weights and their chunk versions, each member's pull wait, and each member's
// gradient.
class NodeSegment {
 public:
  struct alignas(64) Slot {
    std::atomic<uint32_t> state{kAbsent};
    std::atomic<uint32_t> written{0};      // rounds whose gradient it has written
    std::atomic<uint32_t> pull_wanted{0};  // pulls it has asked for
    std::atomic<int64_t> heartbeat_ns{0};  // CLOCK_MONOTONIC of its last heartbeat
    int32_t pid = 0;
    uint64_t pull_min_clock = 0;  // its last pull's wait (with wait_versions)
  };
  struct alignas(64) Header {
    uint64_t magic = 0;
    uint64_t num_params = 0;
    uint32_t workers = 0;
    uint32_t num_chunks = 0;
    alignas(64) std::atomic<uint32_t> rounds{0};     // rounds completed
    alignas(64) std::atomic<uint32_t> published{0};  // publications completed
    std::atomic<uint32_t> publishing{0};             // publications begun
    alignas(64) std::atomic<uint32_t> doorbell{0};   // rung by a member after each change
    // The last round's outcome.
    double mean_staleness = 0;
    int32_t chunks_dropped = 0;
    int32_t chunks_duplicate = 0;
    Outcome round;
    // The last publication's.
    uint64_t min_version = 0;
    uint64_t slowest_clock = 0;
    Outcome pull;
    // Where the node resumes.
    uint64_t resume_sequence = 0;
    DataPosition resume_position;
  };

  static size_t Bytes(int workers, size_t num_params, int num_chunks) {
    return NodeSegment(nullptr, workers, num_params, num_chunks).end_;
  }
  NodeSegment(uint8_t* base, int workers, size_t num_params, int num_chunks)
      : base_(base), workers_(workers), num_params_(num_params), num_chunks_(num_chunks) {
    slots_ = Aligned(sizeof(Header));
    versions_ = Aligned(slots_ + workers * sizeof(Slot));
    waits_ = Aligned(versions_ + num_chunks * sizeof(uint64_t));
    weights_ = Aligned(waits_ + workers * num_chunks * sizeof(uint64_t));
    gradients_ = Aligned(weights_ + num_params * sizeof(float));
    end_ = Aligned(gradients_ + workers * Aligned(num_params * sizeof(float)));
  }

  // Constructs the header and slots in a fresh (zero-filled) segment.
  void Initialize() {
    new (base_) Header();
    for (int m = 0; m < workers_; ++m) new (&slot(m)) Slot();
    header().magic = kNodeMagic;
    header().num_params = num_params_;
    header().workers = static_cast<uint32_t>(workers_);
    header().num_chunks = static_cast<uint32_t>(num_chunks_);
  }
  bool Matches() const {
    const Header& h = *reinterpret_cast<const Header*>(base_);
    return h.magic == kNodeMagic && h.num_params == num_params_ &&
           h.workers == static_cast<uint32_t>(workers_) &&
           h.num_chunks == static_cast<uint32_t>(num_chunks_);
  }

  Header& header() const { return *reinterpret_cast<Header*>(base_); }
  Slot& slot(int m) const { return reinterpret_cast<Slot*>(base_ + slots_)[m]; }
  uint64_t* versions() const { return reinterpret_cast<uint64_t*>(base_ + versions_); }
  uint64_t* wait_versions(int m) const {
    return reinterpret_cast<uint64_t*>(base_ + waits_) + m * num_chunks_;
  }
  float* weights() const { return reinterpret_cast<float*>(base_ + weights_); }
  float* gradient(int m) const {
    return reinterpret_cast<float*>(base_ + gradients_ + m * Aligned(num_params_ * sizeof(float)));
  }
  int workers() const { return workers_; }
  size_t num_params() const { return num_params_; }
  int num_chunks() const { return num_chunks_; }

  // Wakes the pusher after a member changed its slot.
  void RingDoorbell() const {
    Ring(header().doorbell);
  }
  // Whether the process of slot m is gone, or silent for `timeout`.
  bool Lost(int m, absl::Duration timeout) const {
    const Slot& s = slot(m);
    const int64_t silent = MonotonicNanos() - s.heartbeat_ns.load(std::memory_order_relaxed);
    return ProcessGone(s.pid) || silent > absl::ToInt64Nanoseconds(timeout);
  }

 private:
  static size_t Aligned(size_t offset) { return (offset + 63) / 64 * 64; }

  uint8_t* const base_;
  const int workers_;
  const size_t num_params_;
  const int num_chunks_;
  size_t slots_ = 0, versions_ = 0, waits_ = 0, weights_ = 0, gradients_ = 0, end_ = 0;
};

NodeHeartbeat::NodeHeartbeat(std::atomic<int64_t>* beat, absl::Duration interval) {
  beat->store(MonotonicNanos(), std::memory_order_relaxed);
  thread_ = std::thread([this, beat, interval] {
    while (!done_.WaitForNotificationWithTimeout(interval)) {
      beat->store(MonotonicNanos(), std::memory_order_relaxed);
    }
  });
}

NodeHeartbeat::~NodeHeartbeat() {
  done_.Notify();
  thread_.join();
}

// ---------------------------------------------------------------------------------------------
// The pusher.

absl::StatusOr<std::unique_ptr<NodePusher>> NodePusher::Start(std::unique_ptr<PsClient> servers,
                                                              const NodeOptions& options,
                                                              const std::string& published_at) {
  const ShardingPlan& plan = servers->plan();
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<SharedSegment> segment,
                           SharedSegment::Create(NodeSegment::Bytes(
                               options.workers, plan.num_params(), plan.num_chunks())));
  const size_t bytes = segment->size();
  const int fd = segment->fd();
  std::unique_ptr<NodePusher> pusher(
      new NodePusher(std::move(servers), options, std::move(segment)));
  MONSOON_ASSIGN_OR_RETURN(pusher->resume_, pusher->servers_->Resume());
  NodeSegment::Header& header = pusher->layout_->header();
  header.resume_sequence = pusher->resume_.sequence;
  header.resume_position = pusher->resume_.position;
  pusher->last_origin_.sequence = pusher->resume_.sequence;
  pusher->last_origin_.position = pusher->resume_.position;
  MONSOON_RETURN_IF_ERROR(WriteFileAtomically(
      published_at, absl::StrCat(getpid(), " ", fd, " ", bytes, " ", LocalHostIdentity(), "\n")));
  return pusher;
}

NodePusher::NodePusher(std::unique_ptr<PsClient> servers, const NodeOptions& options,
                       std::unique_ptr<SharedSegment> segment)
    : servers_(std::move(servers)),
      options_(options),
      segment_(std::move(segment)),
      started_(absl::Now()),
      sum_(servers_->plan().num_params()) {
  layout_ =
      std::make_unique<NodeSegment>(segment_->data(), options_.workers,
                                    servers_->plan().num_params(), servers_->plan().num_chunks());
  layout_->Initialize();
  NodeSegment::Slot& own = layout_->slot(0);
  own.pid = getpid();
  own.state.store(kActive, std::memory_order_release);
  heartbeat_ = std::make_unique<NodeHeartbeat>(&own.heartbeat_ns, options_.heartbeat);
}

NodePusher::~NodePusher() = default;

bool NodePusher::Active(int m) const {
  return layout_->slot(m).state.load(std::memory_order_acquire) == kActive;
}

absl::Status NodePusher::CheckMembers() {
  for (int m = 1; m < layout_->workers(); ++m) {
    NodeSegment::Slot& s = layout_->slot(m);
    const uint32_t state = s.state.load(std::memory_order_acquire);
    const int worker = options_.first_worker + m;
    std::string why;
    if (state == kActive && layout_->Lost(m, options_.peer_timeout)) {
      why = absl::StrCat("its process is gone or has been silent for ",
                         absl::FormatDuration(options_.peer_timeout),
                         " (reliability.peer_timeout_seconds)");
    } else if (state == kAbsent && absl::Now() - started_ > options_.join_timeout) {
      why = absl::StrCat("it did not join within ", absl::FormatDuration(options_.join_timeout),
                         " (reliability.join_timeout_seconds)");
    } else {
      continue;
    }
    s.state.store(kLost, std::memory_order_release);
    if (options_.stop_on_loss) {
      return absl::FailedPreconditionError(
          absl::StrCat("worker ", worker, " of node ", options_.node, " was lost: ", why,
                       "; the job stops on a lost worker (reliability.worker_loss)"));
    }
    LOG(WARNING) << "worker " << worker << " of node " << options_.node << " was lost: " << why
                 << "; the node pushes without it";
  }
  return absl::OkStatus();
}

absl::StatusOr<FiniteGradient> NodePusher::GatherRound(absl::Span<const float> own) {
  const uint32_t round = rounds_ + 1;
  NodeSegment::Header& header = layout_->header();
  while (true) {
    const uint32_t bell = header.doorbell.load(std::memory_order_acquire);
    MONSOON_RETURN_IF_ERROR(CheckMembers());
    bool ready = true;
    for (int m = 1; m < layout_->workers(); ++m) {
      const uint32_t state = layout_->slot(m).state.load(std::memory_order_acquire);
      const bool written = layout_->slot(m).written.load(std::memory_order_acquire) >= round;
      if (state == kAbsent || (state == kActive && !written)) ready = false;
    }
    if (ready) break;
    FutexWait(header.doorbell, bell, kLivenessPoll);
  }
  const size_t n = sum_.size();
  size_t first_bad = n;
  int contributors = 0;
  if (own.empty()) {
    std::fill(sum_.begin(), sum_.end(), 0.0f);
  } else {
    std::copy(own.begin(), own.end(), sum_.begin());
    contributors = 1;
  }
  for (int m = 1; m < layout_->workers(); ++m) {
    if (layout_->slot(m).written.load(std::memory_order_acquire) < round) continue;
    first_bad = std::min(first_bad, AddFindingNonFinite(layout_->gradient(m), sum_.data(), n));
    ++contributors;
  }
  // The model state is the contributors' mean; the gradient their sum, or mean.
  const size_t state_begin = n - plan().num_state();
  const float scale = 1.0f / static_cast<float>(std::max(1, contributors));
  for (size_t i = options_.mean ? 0 : state_begin; i < n; ++i) sum_[i] *= scale;
  return FiniteGradient::Written(absl::MakeSpan(sum_), first_bad);
}

void NodePusher::CompleteRound(const absl::StatusOr<PushSummary>& outcome) {
  NodeSegment::Header& header = layout_->header();
  if (outcome.ok()) {
    header.mean_staleness = outcome->mean_staleness;
    header.chunks_dropped = outcome->chunks_dropped;
    header.chunks_duplicate = outcome->chunks_duplicate;
  }
  header.round.Set(outcome.status());
  header.rounds.store(++rounds_, std::memory_order_release);
  FutexWakeAll(header.rounds);
}

void NodePusher::Publish(absl::Span<const float> params, const ChunkVersions& versions,
                         const absl::StatusOr<PullResult>& result) {
  NodeSegment::Header& header = layout_->header();
  header.publishing.fetch_add(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  if (result.ok()) {
    std::copy(params.begin(), params.end(), layout_->weights());
    std::copy(versions.begin(), versions.end(), layout_->versions());
    header.min_version = result->min_version;
    header.slowest_clock = result->slowest_clock;
  }
  header.pull.Set(result.status());
  Ring(header.published);
}

absl::StatusOr<PullResult> NodePusher::PullAll(absl::Span<float> params, const PullWait& wait,
                                               ChunkVersions* versions) {
  ChunkVersions own;
  if (versions == nullptr) versions = &own;
  const absl::StatusOr<PullResult> result = servers_->PullAll(params, wait, versions);
  Publish(params, *versions, result);
  return result;
}

template <class Send>
absl::StatusOr<PushSummary> NodePusher::Round(absl::Span<const float> own, const PushOrigin& origin,
                                              Send send) {
  absl::StatusOr<FiniteGradient> sum = GatherRound(own);
  const absl::StatusOr<PushSummary> outcome =
      sum.ok() ? send(*sum) : absl::StatusOr<PushSummary>(sum.status());
  last_origin_ = origin;
  CompleteRound(outcome);
  return outcome;
}

absl::StatusOr<PushSummary> NodePusher::PushAll(FiniteGradient gradient,
                                                const ChunkVersions& base_versions,
                                                const PushOrigin& origin) {
  return Round(gradient.values(), origin,
               [&](FiniteGradient sum) { return servers_->PushAll(sum, base_versions, origin); });
}

absl::StatusOr<PushSummary> NodePusher::PushPullAll(FiniteGradient gradient,
                                                    const ChunkVersions& base_versions,
                                                    const PushOrigin& origin, PullAfterPush* pull) {
  return Round(gradient.values(), origin, [&](FiniteGradient sum) {
    const absl::StatusOr<PushSummary> pushed =
        servers_->PushPullAll(sum, base_versions, origin, pull);
    Publish(pull->params, *pull->versions,
            pushed.ok() ? absl::StatusOr<PullResult>(pull->result) : pushed.status());
    return pushed;
  });
}

absl::StatusOr<PushSummary> NodePusher::ExchangeAll(absl::Span<const float>, absl::Span<float>,
                                                    ChunkVersions*, const PushOrigin&) {
  return absl::UnimplementedError("a node of workers pushes gradients; it does not exchange");
}

absl::Status NodePusher::Finish() {
  NodeSegment::Header& header = layout_->header();
  std::vector<float> weights(plan().num_params());
  while (true) {
    const uint32_t bell = header.doorbell.load(std::memory_order_acquire);
    MONSOON_RETURN_IF_ERROR(CheckMembers());
    bool any = false, round_ready = true;
    int wants_pull = -1;
    const uint32_t published = header.published.load(std::memory_order_relaxed);
    for (int m = 1; m < layout_->workers(); ++m) {
      if (!Active(m)) continue;
      any = true;
      const NodeSegment::Slot& s = layout_->slot(m);
      if (s.written.load(std::memory_order_acquire) <= rounds_) round_ready = false;
      if (s.pull_wanted.load(std::memory_order_acquire) > published) wants_pull = m;
    }
    if (!any) break;
    if (round_ready) {
      PushOrigin origin = last_origin_;
      ++origin.sequence;
      // Its base: the weights the members last copied out.
      const ChunkVersions base(layout_->versions(), layout_->versions() + layout_->num_chunks());
      MONSOON_RETURN_IF_ERROR(Round({}, origin, [&](FiniteGradient sum) {
                                return servers_->PushAll(sum, base, origin);
                              }).status());
    } else if (wants_pull > 0) {
      PullWait wait;
      const uint64_t* min_versions = layout_->wait_versions(wants_pull);
      if (std::any_of(min_versions, min_versions + layout_->num_chunks(),
                      [](uint64_t v) { return v > 0; })) {
        wait.min_versions.assign(min_versions, min_versions + layout_->num_chunks());
      }
      wait.min_clock = layout_->slot(wants_pull).pull_min_clock;
      MONSOON_RETURN_IF_ERROR(PullAll(absl::MakeSpan(weights), wait, nullptr).status());
    } else {
      FutexWait(header.doorbell, bell, kLivenessPoll);
    }
  }
  heartbeat_.reset();
  return servers_->Finish();
}

// ---------------------------------------------------------------------------------------------
// A member.

namespace {

struct PublishedSegment {
  pid_t pid = 0;
  int fd = -1;
  size_t bytes = 0;
  std::string host;
};

// The pusher's file, once it is whole; NotFound before.
absl::StatusOr<PublishedSegment> ReadPublished(const std::string& path) {
  MONSOON_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  const std::vector<std::string> fields =
      absl::StrSplit(text, absl::ByAnyChar(" \n"), absl::SkipEmpty());
  PublishedSegment p;
  if (fields.size() < 3 || !absl::SimpleAtoi(fields[0], &p.pid) ||
      !absl::SimpleAtoi(fields[1], &p.fd) || !absl::SimpleAtoi(fields[2], &p.bytes)) {
    return absl::NotFoundError(absl::StrCat(path, " is not (yet) a node's segment"));
  }
  if (fields.size() > 3) p.host = fields[3];
  return p;
}

}  // namespace

absl::StatusOr<std::unique_ptr<NodeMember>> NodeMember::Join(const ShardingPlan& plan,
                                                             const NodeOptions& options, int worker,
                                                             const std::string& published_at,
                                                             absl::Duration timeout,
                                                             const std::atomic<bool>* stop) {
  const int slot = worker - options.first_worker;
  if (slot <= 0 || slot >= options.workers) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker ", worker, " is not a member of node ", options.node));
  }
  const absl::Time deadline = absl::Now() + timeout;
  absl::StatusOr<PublishedSegment> published = ReadPublished(published_at);
  while (!published.ok()) {
    if (stop != nullptr && stop->load())
      return absl::CancelledError("stopped by signal while joining");
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "worker ", worker, ": worker ", options.first_worker, ", which pushes for node ",
          options.node, ", did not publish its segment (", published_at, ") within ",
          absl::FormatDuration(timeout), " (transport.rendezvous_timeout_seconds)"));
    }
    absl::SleepFor(absl::Milliseconds(20));
    published = ReadPublished(published_at);
  }
  const std::string host = LocalHostIdentity();
  if (published->host != host) {
    return absl::FailedPreconditionError(absl::StrCat(
        "worker ", worker, " runs on another host than worker ", options.first_worker,
        ", which pushes for its node ", options.node, " (", host, " against ", published->host,
        "): cluster.workers_per_node ", options.workers,
        " needs each node's workers on one host (SLURM: --ntasks-per-node, cluster.ranks)"));
  }
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<SharedSegment> segment,
                           SharedSegment::Attach(published->pid, published->fd, published->bytes));
  std::unique_ptr<NodeMember> member(new NodeMember(plan, options, slot, std::move(segment), stop));
  if (!member->layout_->Matches()) {
    return absl::FailedPreconditionError(absl::StrCat("worker ", worker, ": node ", options.node,
                                                      "'s segment holds another model or node"));
  }
  NodeSegment::Slot& own = member->layout_->slot(slot);
  uint32_t absent = kAbsent;
  own.pid = getpid();
  own.heartbeat_ns.store(MonotonicNanos(), std::memory_order_relaxed);
  if (!own.state.compare_exchange_strong(absent, kActive, std::memory_order_acq_rel)) {
    return absl::FailedPreconditionError(
        absl::StrCat("worker ", worker, " cannot join node ", options.node, ": ",
                     absent == kLost ? "the node gave it up (it joined too late)"
                                     : "another process holds its place"));
  }
  member->heartbeat_ = std::make_unique<NodeHeartbeat>(&own.heartbeat_ns, options.heartbeat);
  member->layout_->RingDoorbell();
  return member;
}

NodeMember::NodeMember(const ShardingPlan& plan, const NodeOptions& options, int slot,
                       std::unique_ptr<SharedSegment> segment, const std::atomic<bool>* stop)
    : plan_(plan), options_(options), slot_(slot), segment_(std::move(segment)), stop_(stop) {
  layout_ = std::make_unique<NodeSegment>(segment_->data(), options_.workers, plan_.num_params(),
                                          plan_.num_chunks());
}

NodeMember::~NodeMember() = default;

absl::Status NodeMember::WaitFor(const std::atomic<uint32_t>& word, uint32_t target,
                                 const char* what) {
  while (true) {
    const uint32_t now = word.load(std::memory_order_acquire);
    if (now >= target) return absl::OkStatus();
    if (stop_ != nullptr && stop_->load()) {
      return absl::CancelledError(absl::StrCat("stopped by signal while waiting for ", what));
    }
    if (layout_->slot(slot_).state.load(std::memory_order_acquire) == kLost) {
      return absl::FailedPreconditionError(
          absl::StrCat("worker ", options_.first_worker + slot_, ": worker ", options_.first_worker,
                       ", which pushes for node ", options_.node, ", gave it up (silent or late)"));
    }
    if (layout_->Lost(0, options_.peer_timeout)) {
      return absl::UnavailableError(absl::StrCat(
          "worker ", options_.first_worker + slot_, ": worker ", options_.first_worker,
          ", which pushes for node ", options_.node, ", is gone (or silent for ",
          absl::FormatDuration(options_.peer_timeout), ") while this worker waited for ", what));
    }
    FutexWait(word, now, kLivenessPoll);
  }
}

absl::StatusOr<PushSummary> NodeMember::SendRound(FiniteGradient gradient) {
  NodeSegment::Slot& own = layout_->slot(slot_);
  std::copy(gradient.values().begin(), gradient.values().end(), layout_->gradient(slot_));
  own.written.store(++rounds_, std::memory_order_release);
  layout_->RingDoorbell();
  const NodeSegment::Header& header = layout_->header();
  MONSOON_RETURN_IF_ERROR(WaitFor(header.rounds, rounds_, "its node's push"));
  MONSOON_RETURN_IF_ERROR(header.round.Get());
  PushSummary summary;
  summary.mean_staleness = header.mean_staleness;
  summary.chunks_dropped = header.chunks_dropped;
  summary.chunks_duplicate = header.chunks_duplicate;
  return summary;
}

absl::StatusOr<PullResult> NodeMember::CopyPublished(uint32_t want, absl::Span<float> params,
                                                     ChunkVersions* versions) {
  const NodeSegment::Header& header = layout_->header();
  MONSOON_RETURN_IF_ERROR(WaitFor(header.published, want, "its node's pull"));
  while (true) {
    const uint32_t generation = header.published.load(std::memory_order_acquire);
    std::copy(layout_->weights(), layout_->weights() + params.size(), params.begin());
    if (versions != nullptr) {
      versions->assign(layout_->versions(), layout_->versions() + layout_->num_chunks());
    }
    const absl::Status status = header.pull.Get();
    const PullResult result{header.min_version, header.slowest_clock};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (header.publishing.load(std::memory_order_relaxed) != generation) continue;  // torn
    MONSOON_RETURN_IF_ERROR(status);
    return result;
  }
}

void NodeMember::AskForPull(const PullWait& wait) {
  NodeSegment::Slot& own = layout_->slot(slot_);
  uint64_t* min_versions = layout_->wait_versions(slot_);
  std::fill(min_versions, min_versions + layout_->num_chunks(), 0);
  std::copy(wait.min_versions.begin(), wait.min_versions.end(), min_versions);
  own.pull_min_clock = wait.min_clock;
  own.pull_wanted.store(++pulls_, std::memory_order_release);
}

absl::StatusOr<PullResult> NodeMember::PullAll(absl::Span<float> params, const PullWait& wait,
                                               ChunkVersions* versions) {
  AskForPull(wait);
  layout_->RingDoorbell();
  return CopyPublished(pulls_, params, versions);
}

absl::StatusOr<PushSummary> NodeMember::PushAll(FiniteGradient gradient, const ChunkVersions&,
                                                const PushOrigin&) {
  return SendRound(gradient);
}

absl::StatusOr<PushSummary> NodeMember::PushPullAll(FiniteGradient gradient, const ChunkVersions&,
                                                    const PushOrigin&, PullAfterPush* pull) {
  AskForPull({});  // SendRound rings the doorbell
  MONSOON_ASSIGN_OR_RETURN(const PushSummary summary, SendRound(gradient));
  MONSOON_ASSIGN_OR_RETURN(pull->result, CopyPublished(pulls_, pull->params, pull->versions));
  return summary;
}

absl::StatusOr<PushSummary> NodeMember::ExchangeAll(absl::Span<const float>, absl::Span<float>,
                                                    ChunkVersions*, const PushOrigin&) {
  return absl::UnimplementedError("a node of workers pushes gradients; it does not exchange");
}

absl::StatusOr<ResumePoint> NodeMember::Resume() {
  const NodeSegment::Header& header = layout_->header();
  return ResumePoint{header.resume_sequence, header.resume_position};
}

absl::Status NodeMember::Finish() {
  layout_->slot(slot_).state.store(kDone, std::memory_order_release);
  layout_->RingDoorbell();
  heartbeat_.reset();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ServerStats>> NodeMember::AllStats() {
  return absl::UnimplementedError("a node's member does not reach the servers; its pusher does");
}

}  // namespace monsoon
