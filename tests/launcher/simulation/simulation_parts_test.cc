// The simulator's clock, links, server processors and turns (launcher/simulation/).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "launcher/simulation/event_loop.h"
#include "launcher/simulation/serial_processor.h"
#include "launcher/simulation/shared_link.h"
#include "launcher/simulation/turns.h"

namespace monsoon {
namespace {

TEST_CASE("EventLoop runs events in time order, ties in the order scheduled", "[simulation]") {
  EventLoop loop(absl::UnixEpoch());
  std::vector<std::string> ran;
  loop.At(2, [&] { ran.push_back("b@2"); });
  loop.At(1, [&] {
    ran.push_back("a@1");
    loop.After(1, [&] { ran.push_back("c@2, scheduled last"); });
    loop.At(0, [&] { ran.push_back("d@1, not in the past"); });
  });
  loop.Run();
  CHECK(ran == std::vector<std::string>{"a@1", "d@1, not in the past", "b@2",
                                        "c@2, scheduled last"});
  CHECK(loop.seconds() == 2);
  CHECK(loop.Now() == absl::UnixEpoch() + absl::Seconds(2));
}

TEST_CASE("EventLoop::Stop ends Run after the running event", "[simulation]") {
  EventLoop loop(absl::UnixEpoch());
  std::vector<int> ran;
  loop.At(1, [&] {
    ran.push_back(1);
    loop.Stop();
  });
  loop.At(1, [&] { ran.push_back(2); });
  loop.At(5, [&] { ran.push_back(3); });
  loop.Run();
  CHECK(ran == std::vector<int>{1});
  CHECK(loop.seconds() == 1);
  CHECK(loop.pending() == 2);
}

TEST_CASE("SharedLink shares its bandwidth among the messages it carries", "[simulation]") {
  EventLoop loop(absl::UnixEpoch());
  SharedLink link(&loop, /*bytes_per_second=*/1e6, /*latency_seconds=*/0.01);
  std::vector<double> arrived(3, -1);
  loop.At(0, [&] { link.Send(1e6, [&] { arrived[0] = loop.seconds(); }); });
  // Alone for 0.5 s (0.5 MB), then shared: 0.5 MB more at 0.5 MB/s ends at 1.5 s.
  loop.At(0.5, [&] { link.Send(1e6, [&] { arrived[1] = loop.seconds(); }); });
  loop.At(5, [&] { link.Send(2e6, [&] { arrived[2] = loop.seconds(); }); });
  loop.Run();
  CHECK(arrived[0] == Approx(1.5 + 0.01));
  CHECK(arrived[1] == Approx(2.0 + 0.01));  // its last 0.5 MB alone
  CHECK(arrived[2] == Approx(7.0 + 0.01));
  CHECK(link.busiest() == 2);
}

TEST_CASE("SharedLink without a bandwidth limit takes the latency alone", "[simulation]") {
  EventLoop loop(absl::UnixEpoch());
  SharedLink link(&loop, 0, 0.25);
  double arrived = -1;
  loop.At(1, [&] { link.Send(1e12, [&] { arrived = loop.seconds(); }); });
  loop.Run();
  CHECK(arrived == 1.25);
}

TEST_CASE("SerialProcessor handles one message at a time, in arrival order", "[simulation]") {
  EventLoop loop(absl::UnixEpoch());
  SerialProcessor server(&loop, /*bytes_per_second=*/1e6);
  std::vector<double> handled(3, -1);
  // Two at once: the second waits for the first; the third arrives to an idle processor.
  loop.At(1, [&] { server.Handle(5e5, [&] { handled[0] = loop.seconds(); }); });
  loop.At(1, [&] { server.Handle(2e5, [&] { handled[1] = loop.seconds(); }); });
  loop.At(4, [&] { server.Handle(1e6, [&] { handled[2] = loop.seconds(); }); });
  loop.Run();
  CHECK(handled[0] == Approx(1.5));
  CHECK(handled[1] == Approx(1.7));
  CHECK(handled[2] == Approx(5.0));
  CHECK(server.busy_seconds() == Approx(1.7));
}

TEST_CASE("SerialProcessor without a rate handles each message on arrival", "[simulation]") {
  EventLoop loop(absl::UnixEpoch());
  SerialProcessor server(&loop, 0);
  bool handled = false;
  server.Handle(1e9, [&] { handled = true; });
  CHECK(handled);  // within the call, before any event runs
  CHECK(loop.pending() == 0);
  CHECK(server.busy_seconds() == 0);
}

TEST_CASE("Turns run one participant at a time, in the order the loop resumes them",
          "[simulation]") {
  EventLoop loop(absl::UnixEpoch());
  std::vector<std::string> ran;
  {
    Turns turns;
    for (int id = 0; id < 3; ++id) {
      turns.Spawn([&, id] {
        for (int round = 0; round < 2; ++round) {
          ran.push_back(std::to_string(id) + "." + std::to_string(round));
          // Wakes again later the further it is in the list: 2 first, then 1, then 0.
          loop.After(3 - id, [&, id] { turns.Resume(id); });
          if (!turns.Yield(id)) return;
        }
      });
      loop.At(0, [&, id] { turns.Resume(id); });
    }
    loop.Run();
    for (int id = 0; id < 3; ++id) CHECK(turns.done(id));
  }
  CHECK(ran == std::vector<std::string>{"0.0", "1.0", "2.0", "2.1", "1.1", "0.1"});
}

TEST_CASE("Turns cancel participants still waiting when torn down", "[simulation]") {
  bool returned = false;
  {
    Turns turns;
    turns.Spawn([&] {
      returned = !turns.Yield(0);  // never resumed again
    });
    turns.Resume(0);
  }
  CHECK(returned);
}

}  // namespace
}  // namespace monsoon
