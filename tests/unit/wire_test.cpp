// The transport's decoders of bytes from other processes (each also fuzzed: fuzz/).
#include <roam/base/error.hpp>
#include <roam/transport/detail/backends.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {

using namespace roam::detail;

// Found by fuzz/fingerprint.cpp: texts that differed only past one side's last line (a
// final line break, or a line that read like the old end marker) made the comparison of
// two ranks' fingerprints loop for ever, leaving the job hung at its start.
TEST(Fingerprint, EveryDifferenceIsNamedAndTheWalkEnds) {
  auto d = first_difference("<nothing>\n", "");
  EXPECT_EQ(d.line, 0u);
  EXPECT_EQ(d.ours, std::optional<std::string>("<nothing>"));
  EXPECT_EQ(d.theirs, std::nullopt);
  d = first_difference("a\nb\n", "a\nb");
  EXPECT_TRUE(d.final_break_only);
  EXPECT_EQ(fingerprint_difference::describe(d.ours, d.line, true, true), "a final line break");
  d = first_difference("0 x\n1 y\nsetting z\n", "0 x\n1 w\nsetting z\n");
  EXPECT_EQ(d.line, 1u);
  EXPECT_EQ(fingerprint_difference::describe(d.ours, d.line, false, true), "'1 y'");
  EXPECT_EQ(fingerprint_difference::describe(d.theirs, d.line, false, true), "'1 w'");
  d = first_difference("a\n", "a\nb\n");
  EXPECT_EQ(fingerprint_difference::describe(d.ours, d.line, false, true), "no line 2");
}

TEST(Frame, SizesMustAgreeWithTheHeader) {
  message_ptr m = message::allocate(8);
  m->header.payload_size = 8;
  seal(m->header);
  std::vector<std::byte> bytes(m->wire_data(), m->wire_data() + m->wire_size());
  EXPECT_EQ(decode_frame(bytes.data(), bytes.size())->header.payload_size, 8u);
  EXPECT_THROW(decode_frame(bytes.data(), bytes.size() - 1), roam::deserialization_error);
  EXPECT_THROW(decode_frame(bytes.data(), sizeof(message_header) - 1), roam::deserialization_error);
}

TEST(Frame, HeadersAreCheckedAgainstTheJob) {
  const frame_layout job{8, 2, 2};  // 8 nodes, 2 per process; this one hosts 2 and 3
  message_header h;
  h.source = 5;
  h.dest = 3;
  seal(h);
  EXPECT_EQ(header_problem(h, job), nullptr);
  message_header bad = h;
  bad.magic ^= 1;
  EXPECT_NE(header_problem(bad, job), nullptr);
  bad = h;
  bad.payload_size = 1;  // not sealed again
  EXPECT_NE(header_problem(bad, job), nullptr);
  bad = h;
  bad.dest = 4;
  seal(bad);
  EXPECT_STREQ(header_problem(bad, job), "destination node is not hosted by this process");
  bad = h;
  bad.source = 8;
  seal(bad);
  EXPECT_STREQ(header_problem(bad, job), "source node out of range");
  bad = h;
  bad.flags = flag_broadcast;  // to this process's first node from another process: fine
  bad.dest = 2;
  seal(bad);
  EXPECT_EQ(header_problem(bad, job), nullptr);
  bad.source = 3;  // from this very process: not a broadcast to relay
  seal(bad);
  EXPECT_NE(header_problem(bad, job), nullptr);
}

}  // namespace
