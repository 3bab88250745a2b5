// The trace recorder and the names and files of a job's trace (white box: the recorder's
// detail header and the node runtime's job_trace.hpp).
#include "job_trace.hpp"

#include <roam/trace/detail/recorder.hpp>

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace {

namespace trace = roam::detail::trace;

TEST(TraceNames, MobileHandlersAreNamedByTheirMethod) {
  using roam::detail::trace_handler_name;
  EXPECT_EQ(trace_handler_name(
                "roam::detail::method_kind<&{anonymous}::block::step, roam::access::exclusive, "
                "{anonymous}::block>"),
            "block::step");
  EXPECT_EQ(trace_handler_name("roam::detail::method_kind<&grid<double, 3>::relax, "
                               "roam::access::shared, grid<double, 3> >"),
            "grid<double, 3>::relax");
  EXPECT_EQ(trace_handler_name("roam::detail::mobile_type<(anonymous namespace)::box>"),
            "install box");
  EXPECT_EQ(trace_handler_name("roam::detail::constructor_handler<cell, cell, int>"),
            "construct cell");
  EXPECT_EQ(trace_handler_name("(anonymous namespace)::count(int)"), "count(int)");
  EXPECT_EQ(trace_handler_name("roam.core.reply"), "roam.core.reply");
}

TEST(TraceFiles, LaterRunsOfAProcessWriteBesideTheFirst) {
  using roam::detail::trace_file_of_run;
  EXPECT_EQ(trace_file_of_run("run.json", 1), "run.json");
  EXPECT_EQ(trace_file_of_run("run.json", 2), "run.run2.json");
  EXPECT_EQ(trace_file_of_run("out/trace", 3), "out/trace.run3");
  EXPECT_EQ(trace_file_of_run("out.d/trace", 2), "out.d/trace.run2");
  EXPECT_EQ(trace_file_of_run(".trace", 2), ".trace.run2");
  EXPECT_EQ(roam::detail::trace_part_file("run.json", 0), "run.json");
  EXPECT_EQ(roam::detail::trace_part_file("run.json", 7), "run.json.part7");
}

TEST(TraceJson, StringsAreEscaped) {
  std::ostringstream out;
  trace::write_json_string(out, std::string("a\"b\\c\n\x01\0\xc3", 9));
  EXPECT_EQ(out.str(), "\"a\\\"b\\\\c\\u000a\\u0001\\u0000\\u00c3\"");
}

// A handler that suspends ends one run and starts the next where it resumes, linked by a
// flow; a thread past its limit keeps nothing more, starts no flow, and the writer marks it.
TEST(TraceRecorder, SuspensionsSplitRunsAndTheLimitIsMarked) {
  trace::start(0, 1000);
  trace::open_handler h;
  h.run.handler = 7;
  h.run.node = 2;
  h.run.flow = 5;
  trace::begin_handler(h);
  EXPECT_EQ(trace::innermost_handler(), &h);
  trace::open_handler* suspended = trace::suspend_handlers();
  EXPECT_EQ(suspended, &h);
  EXPECT_EQ(trace::innermost_handler(), nullptr);
  trace::resume_handlers(suspended);
  EXPECT_EQ(trace::innermost_handler(), &h);
  trace::end_handler(h);
  EXPECT_EQ(trace::innermost_handler(), nullptr);
  for (int i = 0; i < 2000; ++i) {
    trace::event e;
    e.kind = trace::event_kind::instant;
    e.label = "tick";
    trace::record(e);
  }
  EXPECT_EQ(trace::new_flow(), 0u) << "a thread past its limit started a flow";
  trace::stop();
  std::ostringstream out;
  trace::trace_layout layout;
  layout.handler_name = [](std::uint32_t, std::uint64_t) { return std::string("h"); };
  const trace::written w = trace::write_events(out, layout);
  EXPECT_EQ(w.events, 1000u);
  EXPECT_EQ(w.dropped, 1002u);  // two runs and 998 ticks kept
  const std::string text = out.str();
  EXPECT_NE(text.find("\"part\":0"), std::string::npos);
  EXPECT_NE(text.find("\"part\":1"), std::string::npos);
  EXPECT_NE(text.find("\"ph\":\"s\",\"cat\":\"resume\""), std::string::npos);
  EXPECT_NE(text.find("\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"resume\""), std::string::npos);
  EXPECT_NE(
      text.find(
          "\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"message\",\"name\":\"message\",\"id\":\"0x5\""),
      std::string::npos);
  EXPECT_NE(text.find("trace limit reached"), std::string::npos);
}

}  // namespace
