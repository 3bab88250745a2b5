// A job whose checkpoint contents are known, for the restart tests (CMakeLists.txt here).
//
//   checkpoint_job write DIR [plain]   checkpoints 4 nodes' states and objects into DIR, then
//                                      fails a second checkpoint (an object refuses to be
//                                      saved) and checks that DIR still holds the first
//   checkpoint_job check OLD_NODES     run with --roam-restart DIR: checks what it finds
//
// Node k's `counter` is k + 1 (merged by addition on fewer nodes); with `plain`, every node
// also uses a node_local without a merge function. Every node makes 2 tallies (their home),
// tally i holding i * i; node 0 keeps the pointers in `registry`, moves tally 1 and
// destroys tally 7 (whose home, node 3, a restart on fewer nodes does not have).
#include <roam/roam.hpp>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct tally {
  long value = 0;
  bool refuse = false;  // not saved: makes the next save throw
  template <class Ar>
  void save(Ar& ar) const {
    if (refuse) throw std::runtime_error("this tally refuses to be saved");
    ar(value);
  }
  template <class Ar>
  void load(Ar& ar) {
    ar(value);
  }
  long read() const { return value; }
  roam::node_id where() const { return roam::this_node(); }
};

constexpr std::size_t destroyed = 7;  // the tally destroyed before the checkpoint

struct pointers {
  std::vector<roam::mobile_ptr<tally>> tallies;  // tallies[destroyed] is destroyed
  template <class Ar>
  void serialize(Ar& ar) {
    ar(tallies);
  }
};

roam::node_local<long> counter(roam::checkpointed{"counter"},
                               [](long& mine, long&& gone) { mine += gone; });
roam::node_local<int> plain(roam::checkpointed{"plain"});
roam::node_local<pointers> registry(roam::checkpointed{"registry"},
                                    [](pointers& mine, pointers&& gone) {
                                      for (auto& p : gone.tallies) mine.tallies.push_back(p);
                                    });

[[noreturn]] void wrong(const std::string& what) {
  std::fprintf(stderr, "WRONG on node %u: %s\n", roam::this_node(), what.c_str());
  std::exit(1);
}

long square(std::size_t i) { return static_cast<long>(i * i); }

void write(const std::string& dir, bool with_plain) {
  if (roam::restarted()) wrong("restarted() in a fresh run");
  const roam::node_id me = roam::this_node(), nodes = roam::num_nodes();
  *counter = me + 1;
  if (with_plain) *plain = 100 + static_cast<int>(me);
  if (nodes != 4) wrong("write runs on 4 nodes");
  std::vector<roam::mobile_ptr<tally>> mine;
  for (std::size_t t = 0; t < 2; ++t) {
    tally made;
    made.value = square(std::size_t{2} * me + t);
    mine.push_back(roam::make_mobile<tally>(made));  // created here: this node is its home
  }
  const auto all = roam::gather(mine);
  if (me == 0) {
    auto& p = registry->tallies;
    for (const auto& part : all) p.insert(p.end(), part.begin(), part.end());
    if (p[destroyed].home() != 3) wrong("tally 7's home");
    roam::migrate(p[1], 2).get();
    roam::destroy(p[destroyed]).get();
  }
  // A collective from a handler is refused.
  if (me == 0) {
    const std::string refused = roam::call(1, [] {
                                  try {
                                    roam::checkpoint("never");
                                  } catch (const roam::usage_error& e) {
                                    return std::string(e.what());
                                  }
                                  return std::string("accepted");
                                }).get();
    if (refused.find("called from inside a handler") == std::string::npos)
      wrong("roam::checkpoint from a handler: " + refused);
  }
  roam::barrier_all_handled();
  roam::checkpoint(dir);

  // Changes after the checkpoint, then a checkpoint that fails: the first must stay.
  if (me == 0) {
    for (std::size_t i = 0; i < registry->tallies.size(); ++i)
      if (i != destroyed) registry->tallies[i].send([](tally& t) { t.value += 1000; });
    registry->tallies[3].send([](tally& t) { t.refuse = true; });
  }
  *counter += 1000;
  roam::barrier_all_handled();
  int caught = 0;
  try {
    roam::checkpoint(dir);
  } catch (const roam::checkpoint_error& e) {
    if (std::string(e.what()).find("this tally refuses to be saved") == std::string::npos)
      wrong(std::string("the failed checkpoint's error does not say why: ") + e.what());
    caught = 1;
  }
  if (roam::allreduce(caught, [](int a, int b) { return a + b; }) != static_cast<int>(nodes))
    wrong("the failed checkpoint did not throw on every node");
  if (me == 0) std::printf("write ok: %u nodes\n", nodes);
}

void check(roam::node_id old_nodes) {
  if (!roam::restarted()) wrong("restarted() is false in a restarted run");
  const roam::node_id me = roam::this_node(), nodes = roam::num_nodes();
  long expected = 0;
  for (roam::node_id j = 0; j < old_nodes; ++j)
    if (j == me || (j >= nodes && j % nodes == me)) expected += j + 1;
  if (*counter != expected)
    wrong("counter is " + std::to_string(*counter) + ", expected " + std::to_string(expected));
  if (me == 0) {
    const auto& p = registry->tallies;
    if (p.size() != std::size_t{2} * old_nodes) wrong("registry holds " + std::to_string(p.size()));
    for (std::size_t i = 0; i < p.size(); ++i)
      if (i != destroyed)
        if (const long v = p[i].call<&tally::read>().get(); v != square(i))
          wrong("tally " + std::to_string(i) + " holds " + std::to_string(v));
    // Its home (node 3) may be gone: the node that answers for it knows it was destroyed.
    try {
      (void)p[destroyed].call<&tally::read>().get();
      wrong("a call on the tally destroyed before the checkpoint succeeded");
    } catch (const roam::object_error& e) {
      if (std::string(e.what()).find("destroyed") == std::string::npos)
        wrong(std::string("the destroyed tally's error: ") + e.what());
    }
    // Every tally moves to the last node and still answers: on fewer nodes, the homes of
    // tallies 4 to 7 are answered for by other nodes, which learn of the moves.
    for (std::size_t i = 0; i < p.size(); ++i)
      if (i != destroyed) roam::migrate(p[i], nodes - 1).get();
    for (std::size_t i = 0; i < p.size(); ++i)
      if (i != destroyed && (p[i].call<&tally::where>().get() != nodes - 1 ||
                             p[i].call<&tally::read>().get() != square(i)))
        wrong("tally " + std::to_string(i) + " after its move");
  }
  // New objects never take a restored object's id.
  tally fresh;
  fresh.value = -1;
  const auto made = roam::make_mobile<tally>(fresh);
  for (const auto& q : roam::allgather(made))
    if (me == 0)
      for (const auto& p : registry->tallies)
        if (p == q) wrong("a new object took a restored object's id");
  roam::barrier_all_handled();
  if (made.call<&tally::read>().get() != -1) wrong("a new object");
  if (me == 0) std::printf("check ok: %u nodes from %u\n", nodes, old_nodes);
}

}  // namespace

int main(int argc, char** argv) {
  return roam::run(argc, argv, [](int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "write" && argc > 2)
      write(argv[2], argc > 3 && std::string(argv[3]) == "plain");
    else if (mode == "check" && argc > 2)
      check(static_cast<roam::node_id>(std::atoi(argv[2])));
    else
      wrong("usage: checkpoint_job write DIR [plain] | check OLD_NODES");
  });
}
