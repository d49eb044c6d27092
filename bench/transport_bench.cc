// Transport benchmark: push and pull goodput through one parameter server (a separate
// process on this host) for 1, 4, 16 and 64 MiB tensors, through gRPC (transport.local grpc)
// next to a raw TCP socket pump between two processes, and through shared memory
// (transport.local shm: a push through the segment's slots, a pull read from the server's
// chunk window) next to a single-threaded memcpy of the same bytes and to gRPC, all
// measured in the same run, repetition by repetition (medians). Each transfer's
// CPU time (both processes, user and kernel) is measured too: on a machine whose cores are
// all busy, goodput follows CPU per byte, and `*_cpu_ceiling` is the share of the pump's
// rate a transfer of that cost can reach with every core. Prints one JSON object.
//
//   transport_bench [--reps N] [--sizes 1,4,16,64] [--chunk-mib C] [--in-flight W]
//                   [--gradient checked|raw]
//
// --gradient checked (the default): the gradient was checked for NaN and infinity where it
// was made, as a worker's is in its copy out of the model, so a push times the transport.
// raw: every push first scans it (FiniteGradient::Check), as monsoon.Client does with the
// array Python gives it (bench/python_client_bench.py compares the two clients so).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "bench/child_process.h"
#include "bench/median.h"
#include "bench/step_shapes.h"
#include "core/cli/command_line.h"
#include "core/process/process_setup.h"
#include "server/grpc_parameter_server.h"
#include "worker/grpc_ps_client.h"

namespace monsoon {
namespace {

constexpr size_t kPumpWrite = 1 << 20;  // 1 MiB socket writes

// Sends every write at once, as gRPC's sockets do: with Nagle's algorithm a transfer's last
// partial segment can wait for a delayed acknowledgement (up to 40 ms on Linux).
void NoDelay(int fd) {
  const int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) std::abort();
}

// Child: serve a `floats`-parameter store in chunks of `chunk_floats` with SGD; print the
// address; exit on stdin EOF.
int Serve(size_t floats, size_t chunk_floats) {
  auto plan = ShardingPlan::Create(floats, 1, chunk_floats);
  OptimizerSpec sgd;
  sgd.learning_rate = 1e-6f;
  ServerRules rules;
  rules.optimizer = sgd;
  ParameterServer logic(0, *plan, ModelInitialValues(FlatModel(floats), 1), rules, 1, false);
  return ServeForParent(&logic);
}

// Child: accept one connection; for each message of `bytes` read, reply with one byte.
int TcpSink(size_t bytes) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  listen(listener, 1);
  socklen_t len = sizeof(addr);
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  std::cout << ntohs(addr.sin_port) << std::endl;
  const int fd = accept(listener, nullptr, nullptr);
  NoDelay(fd);
  std::vector<char> buf(kPumpWrite);
  size_t got = 0;
  while (true) {
    const ssize_t n = read(fd, buf.data(), buf.size());
    if (n <= 0) break;
    got += static_cast<size_t>(n);
    while (got >= bytes) {
      got -= bytes;
      const char ack = 1;
      if (write(fd, &ack, 1) != 1) return 1;
    }
  }
  return 0;
}

// A raw TCP socket pump to a sink process: Once() sends `bytes` in 1 MiB writes and waits for
// the sink's one-byte acknowledgement.
class TcpPump {
 public:
  explicit TcpPump(size_t bytes)
      : bytes_(bytes),
        sink_(BenchChild::Spawn({"transport_bench", "--tcp-sink", std::to_string(bytes)})),
        payload_(bytes, 7) {
    int port = 0;
    if (!absl::SimpleAtoi(sink_.ReadLine(), &port)) std::abort();
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) std::abort();
    NoDelay(fd_);
  }
  ~TcpPump() {
    close(fd_);
    sink_.Stop();
  }
  pid_t sink_pid() const { return sink_.pid; }
  void Once() {
    for (size_t done = 0; done < bytes_;) {
      const ssize_t n = write(fd_, payload_.data() + done, std::min(kPumpWrite, bytes_ - done));
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
    char ack;
    if (read(fd_, &ack, 1) != 1) std::abort();
  }

 private:
  const size_t bytes_;
  BenchChild sink_;
  std::vector<char> payload_;
  int fd_ = -1;
};

// One parameter server process and a GrpcPsClient to it, its payloads through `local`:
// whole-tensor pushes and pulls.
class GrpcPair {
 public:
  GrpcPair(size_t bytes, size_t chunk_floats, int in_flight, bool scan_each_push,
           LocalTransport local)
      : floats_(bytes / sizeof(float)),
        scan_each_push_(scan_each_push),
        server_(BenchChild::Spawn(
            {"transport_bench", "--serve", std::to_string(floats_), std::to_string(chunk_floats)})),
        plan_(*ShardingPlan::Create(floats_, 1, chunk_floats)),
        grad_(floats_, 1.0f),
        params_(floats_),
        // Checked once where it is made, as a worker checks its gradient in the copy out of
        // its model (GetGrads): the pushes time the transport.
        gradient_(*FiniteGradient::Check(grad_)),
        // Base version 0 every time: the pushes are timed, not trained (policy: accept).
        base_(plan_.num_chunks(), 0) {
    const std::string address = server_.ReadLine();
    GrpcPsClientOptions options;
    options.secrets.token = kBenchToken;
    options.max_in_flight = in_flight;
    options.rpc_timeout = absl::Seconds(60);
    options.local = local;
    auto client = GrpcPsClient::Connect({address}, plan_, {RoleKind::kWorker, 0}, options);
    if (!client.ok()) {
      std::cerr << client.status() << std::endl;
      std::abort();
    }
    client_ = std::move(*client);
  }
  ~GrpcPair() {
    client_.reset();
    server_.Stop();
  }
  pid_t server_pid() const { return server_.pid; }
  void Push() {
    ++origin_.sequence;  // every push numbered afresh, so that each is applied
    const absl::StatusOr<FiniteGradient> gradient =
        scan_each_push_ ? FiniteGradient::Check(grad_) : gradient_;
    if (!gradient.ok() || !client_->PushAll(*gradient, base_, origin_).ok()) std::abort();
  }
  void Pull() {
    if (!client_->PullAll(absl::MakeSpan(params_), {}, nullptr).ok()) std::abort();
  }

 private:
  const size_t floats_;
  const bool scan_each_push_;
  BenchChild server_;
  const ShardingPlan plan_;
  std::vector<float> grad_, params_;
  const FiniteGradient gradient_;  // grad_'s values
  const ChunkVersions base_;
  PushOrigin origin_;
  std::unique_ptr<GrpcPsClient> client_;
};

// CPU seconds used so far by this process and by `child` together (every thread, user and
// kernel time): what a transfer between the two costs, whichever thread did the work.
double CpuSecondsWith(pid_t child) {
  clockid_t child_clock;
  if (clock_getcpuclockid(child, &child_clock) != 0) std::abort();
  double seconds = 0;
  for (clockid_t clock : {static_cast<clockid_t>(CLOCK_PROCESS_CPUTIME_ID), child_clock}) {
    timespec t{};
    if (clock_gettime(clock, &t) != 0) std::abort();
    seconds += static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  }
  return seconds;
}

// One way of moving the bytes, timed repetition by repetition: goodput (GB/s) and CPU
// seconds per GB, each the median over the repetitions.
struct Transfer {
  std::vector<double> gbps, cpu_per_gb;

  template <typename Op>
  void Time(size_t bytes, pid_t child, Op op) {
    const double gb = static_cast<double>(bytes) / 1e9;
    const double cpu_start = CpuSecondsWith(child);
    const absl::Time start = absl::Now();
    op();
    gbps.push_back(gb / absl::ToDoubleSeconds(absl::Now() - start));
    cpu_per_gb.push_back((CpuSecondsWith(child) - cpu_start) / gb);
  }
};

struct Rates {
  Transfer push, pull, shm_push, shm_pull, tcp, memcpy;
};

// Each repetition times one pump transfer, one memcpy, and one push and one pull of `bytes`
// on each path, in turn, so that the VM's drifting speed reaches the references and the
// measurements alike (after one warm-up of each).
Rates Measure(size_t bytes, int reps, size_t chunk_floats, int in_flight, bool scan_each_push) {
  TcpPump pump(bytes);
  GrpcPair grpc(bytes, chunk_floats, in_flight, scan_each_push, LocalTransport::kGrpc);
  GrpcPair shm(bytes, chunk_floats, in_flight, scan_each_push, LocalTransport::kShm);
  std::vector<char> from(bytes, 1), to(bytes, 0);
  pump.Once();
  for (GrpcPair* pair : {&grpc, &shm}) {
    pair->Push();
    pair->Pull();
  }
  Rates r;
  for (int i = 0; i < reps; ++i) {
    r.tcp.Time(bytes, pump.sink_pid(), [&] { pump.Once(); });
    r.memcpy.Time(bytes, getpid(), [&] { std::memcpy(to.data(), from.data(), bytes); });
    r.push.Time(bytes, grpc.server_pid(), [&] { grpc.Push(); });
    r.pull.Time(bytes, grpc.server_pid(), [&] { grpc.Pull(); });
    r.shm_push.Time(bytes, shm.server_pid(), [&] { shm.Push(); });
    r.shm_pull.Time(bytes, shm.server_pid(), [&] { shm.Pull(); });
  }
  return r;
}

// What the command line chose.
struct Options {
  int reps = 10;
  int chunk_mib = 1;
  int in_flight = 16;
  std::string gradient = "checked";
  std::vector<int> sizes = {1, 4, 16, 64};
};

// Prints the JSON object: every transfer at each size.
void Report(const Options& o) {
  const auto& [reps, chunk_mib, in_flight, gradient, sizes] = o;
  const bool scan_each_push = gradient == "raw";
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  std::cout << "{\n  \"benchmark\": \"transport\",\n  \"cores\": " << cores
            << ",\n  \"chunk_mib\": " << chunk_mib << ",\n  \"in_flight\": " << in_flight
            << ",\n  \"channels_per_server\": " << GrpcPsClientOptions().channels_per_server
            << ",\n  \"gradient\": \"" << gradient << "\""
            << ",\n  \"reps\": " << reps << ",\n  \"results\": [\n";
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t bytes = static_cast<size_t>(sizes[i]) << 20;
    const Rates r =
        Measure(bytes, reps, static_cast<size_t>(chunk_mib) << 18, in_flight, scan_each_push);
    const double tcp_gbps = Median(r.tcp.gbps), tcp_cpu = Median(r.tcp.cpu_per_gb);
    std::string line = absl::StrFormat(
        "    {\"mib\": %d, \"tcp_pump_gbps\": %.3f, "
        "\"tcp_pump_cpu_s_per_gb\": %.3f",
        sizes[i], tcp_gbps, tcp_cpu);
    for (const auto& [name, t] :
         {std::pair<const char*, const Transfer*>{"push", &r.push}, {"pull", &r.pull}}) {
      const double gbps = Median(t->gbps), cpu = Median(t->cpu_per_gb);
      // With every core busy on this transfer alone it moves cores / cpu GB/s at most.
      absl::StrAppendFormat(&line,
                            ", \"%s_gbps\": %.3f, \"%s_ratio\": %.3f, \"%s_cpu_s_per_gb\": %.3f, "
                            "\"%s_cpu_vs_pump\": %.3f, \"%s_cpu_ceiling\": %.3f",
                            name, gbps, name, gbps / tcp_gbps, name, cpu, name, cpu / tcp_cpu, name,
                            static_cast<double>(cores) / cpu / tcp_gbps);
    }
    const double memcpy_gbps = Median(r.memcpy.gbps);
    absl::StrAppendFormat(&line, ", \"memcpy_gbps\": %.3f", memcpy_gbps);
    for (const auto& [name, t, grpc] :
         {std::tuple<const char*, const Transfer*, const Transfer*>{"shm_push", &r.shm_push,
                                                                     &r.push},
          {"shm_pull", &r.shm_pull, &r.pull}}) {
      const double gbps = Median(t->gbps);
      absl::StrAppendFormat(&line,
                            ", \"%s_gbps\": %.3f, \"%s_vs_memcpy\": %.3f, \"%s_vs_grpc\": %.3f, "
                            "\"%s_cpu_s_per_gb\": %.3f",
                            name, gbps, name, gbps / memcpy_gbps, name, gbps / Median(grpc->gbps),
                            name, Median(t->cpu_per_gb));
    }
    std::printf("%s}%s\n", line.c_str(), i + 1 < sizes.size() ? "," : "");
    std::fflush(stdout);
  }
  std::cout << "  ]\n}" << std::endl;
}

int Main(int argc, char** argv) {
  ApplyProcessSettings();
  FlushDenormalsToZero();
  if (argc == 4 && std::string(argv[1]) == "--serve") {
    return Serve(std::stoul(argv[2]), std::stoul(argv[3]));
  }
  if (argc == 3 && std::string(argv[1]) == "--tcp-sink") return TcpSink(std::stoul(argv[2]));
  Options o;
  const ProgramText text{"transport_bench",
                         "Push and pull through gRPC and shared memory next to a TCP pump and "
                         "memcpy; prints JSON.",
                         ""};
  return RunProgram(argc, argv, text, [&](Command& program, int*) {
    program.Option("--reps", &o.reps, "repetitions per figure (their median counts)")
        .InRange(1, 1000)
        .ShowDefault();
    program.Option("--sizes", &o.sizes, "MiB moved per push or pull, e.g. 1,4,16,64")
        .InRange(1, 4096);
    program.Option("--chunk-mib", &o.chunk_mib, "MiB per chunk").InRange(1, 32).ShowDefault();
    program.Option("--in-flight", &o.in_flight, "chunk calls in flight")
        .InRange(1, 64)
        .ShowDefault();
    program
        .Option("--gradient", &o.gradient,
                "checked: the gradient comes from a model (scanned for NaN in its copy); raw: "
                "the push scans it")
        .OneOf({"checked", "raw"})
        .ShowDefault();
    program.OnRun([&] { Report(o); });
  });
}

}  // namespace
}  // namespace monsoon

int main(int argc, char** argv) { return monsoon::Main(argc, argv); }
