// Benchmarks measure against references in other processes (a TCP sink, a parameter server):
// BenchChild runs this same binary in another mode as a child process; ServeForParent is a
// parameter server's side of that.
#ifndef MONSOON_BENCH_CHILD_PROCESS_H_
#define MONSOON_BENCH_CHILD_PROCESS_H_

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "server/grpc_parameter_server.h"

namespace monsoon {

// A child process running this binary in another mode, with a pipe to its stdin and from
// its stdout. Closing stdin ends it.
struct BenchChild {
  pid_t pid = 0;
  int to_child = -1;
  FILE* from_child = nullptr;

  static BenchChild Spawn(const std::vector<std::string>& argv) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) std::abort();
    BenchChild c;
    c.pid = fork();
    if (c.pid == 0) {
      dup2(in[0], STDIN_FILENO);
      dup2(out[1], STDOUT_FILENO);
      close(in[1]);
      close(out[0]);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv("/proc/self/exe", args.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    c.to_child = in[1];
    c.from_child = fdopen(out[0], "r");
    return c;
  }
  std::string ReadLine() {
    char line[256] = {};
    if (std::fgets(line, sizeof(line), from_child) == nullptr) return "";
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
  }
  void Stop() {
    close(to_child);
    fclose(from_child);
    waitpid(pid, nullptr, 0);
  }
};

// The job token between a benchmark and the parameter server it started.
inline constexpr char kBenchToken[] = "bench-token";

// The child side of a parameter server started with BenchChild: serves `logic` on loopback
// with kBenchToken, prints its address (BenchChild::ReadLine reads it) and runs until its
// stdin closes. Returns the child's exit status.
inline int ServeForParent(ParameterServer* logic) {
  // The limits a job's server would have for the benchmark's one client at the default window.
  auto server = GrpcParameterServer::Start(logic, "127.0.0.1", JobSecrets::TokenOnly(kBenchToken),
                                           ServerLimits::For(logic->plan(), 1, 16));
  if (!server.ok()) return 1;
  std::cout << (*server)->address() << std::endl;
  char c;
  while (read(STDIN_FILENO, &c, 1) > 0) {
  }
  return 0;
}

}  // namespace monsoon

#endif  // MONSOON_BENCH_CHILD_PROCESS_H_
