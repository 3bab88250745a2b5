// Faults with mobile objects that must stop the job with a precise message (run by
// ctest, which checks the exit status and the text).
//   mobile_faults send-to-destroyed | send-throws | send-wrong-type | none
#include <roam/roam.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace {

struct account {
  long balance = 0;
  template <class Ar>
  void serialize(Ar& ar) {
    ar(balance);
  }
  void deposit(long v) { balance += v; }
  void withdraw(long v) {
    if (v > balance) throw std::domain_error("insufficient funds: " + std::to_string(balance));
    balance -= v;
  }
};

struct ledger {
  int entries = 0;
  void add() { ++entries; }
};

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "none";
  return roam::run(argc, argv, [&] {
    if (roam::this_node() != 0) return;
    auto a = roam::make_mobile<account>(roam::node(roam::num_nodes() - 1));
    a.send<&account::deposit>(10L);
    if (mode == "send-to-destroyed") {
      roam::destroy(a).get();
      a.send<&account::deposit>(5L);  // fatal on the object's node
    } else if (mode == "send-throws") {
      a.send<&account::withdraw>(100L);
    } else if (mode == "send-wrong-type") {
      auto l = roam::make_mobile<ledger>();
      auto id = a.id();
      id.type = l.id().type;
      roam::mobile_ptr<ledger>::from_id(id).send<&ledger::add>();
    } else if (mode != "none") {
      std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
      std::exit(2);
    }
    roam::wait_quiescence();
  });
}
