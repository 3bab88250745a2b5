// The base layer: one error root with codes, one message format, the settings registry.
#include <roam/base/detail/message_text.hpp>
#include <roam/base/error.hpp>
#include <roam/core/config.hpp>
#include <roam/lb/policy_settings.hpp>

#include <gtest/gtest.h>

#include <string>

namespace {

template <class Error>
void expect_error(roam::errc code) {
  try {
    throw Error("something went wrong");
  } catch (const roam::error& e) {
    EXPECT_EQ(e.code(), code) << roam::to_string(code);
    EXPECT_STREQ(e.what(), "roam: something went wrong");
    EXPECT_EQ(e.message(), "something went wrong");
  }
}

TEST(Errors, EveryErrorDerivesFromTheRootWithItsCode) {
  expect_error<roam::config_error>(roam::errc::config);
  expect_error<roam::usage_error>(roam::errc::usage);
  expect_error<roam::broken_promise>(roam::errc::broken_promise);
  expect_error<roam::object_error>(roam::errc::object);
  expect_error<roam::deserialization_error>(roam::errc::malformed_message);
  expect_error<roam::device_error>(roam::errc::device);
  expect_error<roam::out_of_device_memory>(roam::errc::out_of_device_memory);
  expect_error<roam::checkpoint_error>(roam::errc::checkpoint);
  EXPECT_STREQ(roam::to_string(roam::errc::checkpoint), "checkpoint");
  EXPECT_STREQ(roam::to_string(roam::errc::communication), "communication");
  EXPECT_STREQ(roam::to_string(roam::errc::global_memory), "global_memory");
  // A device error is a roam::error and still a std::runtime_error.
  try {
    throw roam::out_of_device_memory("no room");
  } catch (const std::runtime_error& e) {
    EXPECT_NE(dynamic_cast<const roam::device_error*>(&e), nullptr);
  }
}

TEST(Errors, OneFormatWithOnePrefix) {
  EXPECT_EQ(roam::detail::error_text("no node"), "roam: no node");
  // Already formatted: kept as it is. A message naming a roam function gets the prefix too.
  EXPECT_EQ(roam::detail::error_text("roam: no node"), "roam: no node");
  EXPECT_EQ(roam::detail::error_text("roam::spawn: too large"), "roam: roam::spawn: too large");
  EXPECT_EQ(roam::usage_error("roam: twice").message(), "twice");
  EXPECT_EQ(roam::detail::fatal_text(3, "boom"), "roam: fatal error on node 3: boom");
  EXPECT_EQ(roam::detail::fatal_text(-1, "boom"), "roam: fatal error: boom");
  // An error's text embedded in a fatal report is not prefixed twice.
  EXPECT_EQ(roam::detail::fatal_text(0, roam::usage_error("bad").what()),
            "roam: fatal error on node 0: bad");
  // Embedded in another message: a roam::error without its prefix, anything else as it is.
  EXPECT_EQ(roam::detail::exception_text(roam::deserialization_error("short")), "short");
  EXPECT_EQ(roam::detail::exception_text(std::runtime_error("plain")), "plain");
  const roam::remote_error remote("std::out_of_range", "index 9", "handler 'f' threw");
  EXPECT_EQ(remote.code(), roam::errc::remote);
  EXPECT_EQ(remote.exception_type(), "std::out_of_range");
  EXPECT_EQ(remote.original_message(), "index 9");
}

TEST(Settings, ALayersSettingsAreSetByFlagNameAndReadByType) {
  roam::config c;
  EXPECT_EQ(c.of<roam::lb::policy_settings>().policy, "work_stealing");
  c.set("lb", "diffusion");
  c.set("lb-threshold", "2.5");
  c.set("threads", "3");  // the node runtime's own settings go through the same parser
  EXPECT_EQ(c.of<roam::lb::policy_settings>().policy, "diffusion");
  EXPECT_DOUBLE_EQ(c.of<roam::lb::policy_settings>().threshold, 2.5);
  EXPECT_EQ(c.threads, 3u);
  EXPECT_THROW(c.set("no-such-setting", "1"), roam::config_error);
  EXPECT_THROW(c.set("lb-threshold", "lots"), roam::config_error);
  EXPECT_THROW(c.set("lb", ""), roam::config_error);
  EXPECT_DOUBLE_EQ(c.of<roam::lb::policy_settings>().threshold, 2.5);  // unchanged by a failure
}

TEST(Settings, CopiesOfAConfigAreIndependent) {
  roam::config a;
  a.of<roam::lb::policy_settings>().period_us = 777;
  roam::config b = a;
  b.of<roam::lb::policy_settings>().period_us = 999;
  EXPECT_EQ(a.of<roam::lb::policy_settings>().period_us, 777u);
  EXPECT_EQ(b.of<roam::lb::policy_settings>().period_us, 999u);
  const roam::config untouched;
  EXPECT_EQ(untouched.of<roam::lb::policy_settings>().period_us, 2000u);  // the defaults
}

TEST(Settings, FlagsOfEveryLinkedLayerAreParsedAndListed) {
  std::string program = "prog", lb = "--roam-lb=greedy_refine", threads = "--roam-threads",
              two = "2", own = "--mine";
  char* argv[] = {program.data(), lb.data(), threads.data(), two.data(), own.data(), nullptr};
  int argc = 5;
  const roam::config c = roam::config::from_args(argc, argv);
  EXPECT_EQ(c.of<roam::lb::policy_settings>().policy, "greedy_refine");
  EXPECT_EQ(c.threads, 2u);
  ASSERT_EQ(argc, 2);  // only the application's own arguments are left
  EXPECT_EQ(std::string(argv[1]), "--mine");
  const std::string help = roam::config::help_text();
  EXPECT_NE(help.find("node runtime and transport (roam::config):"), std::string::npos);
  EXPECT_NE(help.find("load balancing (roam::lb::policy_settings):"), std::string::npos);
  EXPECT_LT(help.find("--roam-threads"), help.find("--roam-lb-period-us"));  // bottom-up
}

}  // namespace
