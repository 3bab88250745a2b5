// The collectives' algorithms at 1 ... 17 ranks (threads of this process on simulated
// links): every algorithm, radix, root and size against a serial reference, reductions
// that must keep rank order included; and the errors of a bad call.
#include "collective_cases.hpp"
#include "simulated_links.hpp"

#include <roam/base/error.hpp>
#include <roam/coll/tuning_rules.hpp>

#include <gtest/gtest.h>

#include <exception>
#include <memory>
#include <thread>

namespace {

using namespace roam_test;

/// Runs `body(links)` on `p` threads, one per rank; returns what they reported.
template <class Body>
std::vector<std::string> on_ranks(int p, Body body) {
  mailboxes boxes;
  std::vector<std::vector<std::string>> reports(p);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r)
    threads.emplace_back([&, r] {
      simulated_links l(boxes, r, p);
      try {
        reports[r] = body(l);
      } catch (const std::exception& e) {
        reports[r].push_back("rank " + std::to_string(r) + " threw: " + e.what());
      }
    });
  for (auto& t : threads) t.join();
  std::vector<std::string> all;
  for (auto& r : reports) all.insert(all.end(), r.begin(), r.end());
  if (const std::size_t left = boxes.left())
    all.push_back(std::to_string(left) + " messages were sent and never received");
  return all;
}

class EveryRankCount : public ::testing::TestWithParam<int> {};

TEST_P(EveryRankCount, EveryAlgorithmRadixRootAndSizeMatchesTheReference) {
  const auto failures = on_ranks(GetParam(), [](cd::links& l) { return case_runner(l).run_all(); });
  for (std::size_t i = 0; i < failures.size() && i < 20; ++i) ADD_FAILURE() << failures[i];
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures";
}

INSTANTIATE_TEST_SUITE_P(Collectives, EveryRankCount, ::testing::Range(1, 18));

std::string error_of(const std::function<void(cd::links&)>& call) {
  const auto reports = on_ranks(3, [&](cd::links& l) {
    try {
      call(l);
    } catch (const roam::usage_error& e) {
      return std::vector<std::string>{e.what()};
    }
    return std::vector<std::string>{};
  });
  return reports.empty() ? "" : reports.front();
}

TEST(CollectiveErrors, ARootOutsideTheRanksIsNamed) {
  std::byte b{};
  EXPECT_NE(error_of([&](cd::links& l) {
              cd::bcast(l, &b, 1, 3, {});
            }).find("bcast: root 3 is not one of the 3 ranks"),
            std::string::npos);
}

TEST(CollectiveErrors, ARadixOfOneIsRefused) {
  std::byte b{};
  EXPECT_NE(error_of([&](cd::links& l) {
              cd::bcast(l, &b, 1, 0, {algorithm::knomial, 1});
            }).find("needs a radix k of at least 2"),
            std::string::npos);
  EXPECT_NE(error_of([&](cd::links& l) {
              cd::bcast(l, &b, 1, 0, {algorithm::linear, 1});
            }).find("bcast: linear needs a radix k of at least 2, not 1"),
            std::string::npos);
}

TEST(CollectiveErrors, AnAlgorithmWithoutTheCollectiveIsRefused) {
  std::byte b[3]{};
  EXPECT_NE(error_of([&](cd::links& l) {
              cd::gather(l, b, b, 1, 0, {algorithm::recursive_multiplying, 2});
            }).find("the recursive_multiplying algorithm has no gather"),
            std::string::npos);
}

// Simulated links that answer automatic calls with the given rules, and count sends.
class ruled_links final : public cd::links {
 public:
  ruled_links(cd::links& inner, const roam::coll::tuning_rules& rules)
      : inner_(inner), rules_(rules) {}
  int rank() const noexcept override { return inner_.rank(); }
  int size() const noexcept override { return inner_.size(); }
  void send(int peer, int tag, const std::byte* data, std::size_t bytes) override {
    ++sends;
    inner_.send(peer, tag, data, bytes);
  }
  void recv(int peer, int tag, std::byte* data, std::size_t bytes) override {
    inner_.recv(peer, tag, data, bytes);
  }
  void complete() override { inner_.complete(); }
  const roam::coll::tuning_rules& rules() const override { return rules_; }
  int sends = 0;

 private:
  cd::links& inner_;
  const roam::coll::tuning_rules& rules_;
};

TEST(AutomaticChoice, CallsWithoutAChoiceFollowTheLinksRules) {
  // bcast: linear up to 4 bytes, a binomial tree beyond; the root of 5 ranks sends 4
  // messages linearly, 3 down a binomial tree.
  std::string text = "{";
  for (const char* c : {"reduce", "gather", "allgather", "allreduce"})
    text += std::string("\"collective=") + c +
            "\": {\"comm_size=any\": {\"ppn=any\": {\"msg_size=any\": {\"algorithm=linear\": "
            "{}}}}},";
  text +=
      "\"collective=bcast\": {\"comm_size=any\": {\"ppn=any\": {\"msg_size<=4\": "
      "{\"algorithm=linear\": {}}, \"msg_size=any\": {\"algorithm=knomial\": {}}}}}}";
  const auto rules = roam::coll::tuning_rules::parse(text, "test");
  const auto sends = on_ranks(5, [&](cd::links& l) {
    ruled_links ruled(l, rules);
    std::vector<std::byte> data(8, std::byte{7});
    cd::bcast(ruled, data.data(), 4, 0, {});
    const int linear = ruled.sends;
    cd::bcast(ruled, data.data(), 8, 0, {});
    return ruled.rank() == 0 ? std::vector<std::string>{std::to_string(linear) + " " +
                                                        std::to_string(ruled.sends - linear)}
                             : std::vector<std::string>{};
  });
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_EQ(sends.front(), "4 3");
}

}  // namespace
