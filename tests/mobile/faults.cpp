// Faults with mobile objects that must stop the job with a precise message (run by
// ctest, which checks the exit status and the text).
//   mobile_faults send-to-destroyed | channel-to-destroyed | send-throws | function-throws |
//                 send-wrong-type |
//                 forged-stage | wait-own-migration | wait-own-destroy | none
#include <roam/roam.hpp>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

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

// A free function as an object handler: errors name it by its symbol (issue 25).
void overdraw(account& a, long v) { a.withdraw(v); }

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
    } else if (mode == "channel-to-destroyed") {
      roam::destroy(a).get();
      roam::channel<&account::deposit>()(a, 5L);  // aggregated, then fatal there all the same
    } else if (mode == "send-throws") {
      a.send<&account::withdraw>(100L);
    } else if (mode == "function-throws") {
      a.send(overdraw, 100L);
    } else if (mode == "send-wrong-type") {
      auto l = roam::make_mobile<ledger>();
      auto id = a.id();
      id.type = l.id().type;
      roam::mobile_ptr<ledger>::from_id(id).send<&ledger::add>();
    } else if (mode == "forged-stage") {
      // Bytes claiming to have passed the order and access gates already.
      using kind = roam::detail::method_kind<&account::deposit, roam::access::exclusive, account>;
      auto m = roam::detail::build_object_message<kind>(a.id(), 0, nullptr, 1L);
      roam::detail::object_message_header oh;
      std::memcpy(&oh, m->payload(), sizeof oh);
      oh.version = 1;
      oh.unused = 2;  // progress is node-local: a message claiming some is forged
      std::memcpy(m->payload(), &oh, sizeof oh);
      m->header.dest = roam::num_nodes() - 1;  // where the account lives
      roam::detail::seal(m->header);
      std::vector<std::byte> bytes(m->wire_data(), m->wire_data() + m->wire_size());
      roam::detail::send_raw_for_testing(roam::num_nodes() - 1, std::move(bytes));
    } else if (mode == "wait-own-migration") {
      // The migration needs the object, which the waiting handler holds: it never comes.
      a.send([](account&, roam::mobile_ptr<account> self) { roam::migrate(self, 0).get(); }, a);
    } else if (mode == "wait-own-destroy") {
      a.send([](const account&, roam::mobile_ptr<account> self) { roam::destroy(self).get(); }, a);
    } else if (mode != "none") {
      std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
      std::exit(2);
    }
    roam::wait_quiescence();
  });
}
