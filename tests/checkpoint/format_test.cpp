// The checkpoint's bytes (checkpoint_format.hpp): what is written reads back, and every kind
// of damage is refused with a message saying what is wrong.
#include <roam/base/error.hpp>
#include <roam/checkpoint/detail/checkpoint_format.hpp>

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstring>
#include <filesystem>
#include <string>

namespace {

namespace format = roam::detail::checkpoint_format;

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

class CheckpointFormat : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("roam_format_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// A node file with two states and three objects.
  std::vector<std::byte> node_file_bytes() {
    const std::string path = (dir_ / "node.ckpt").string();
    format::file_writer w(path, format::file_kind::node);
    format::write_node_file_start(w, 7, 3);
    format::write_state_count(w, 2);
    format::write_state(w, "driver", "6driver", bytes_of("state-bytes"));
    format::write_state(w, "empty", "i", {});
    format::write_object(w, roam::object_id{3, 11, 1}, bytes_of("first"));
    format::write_object(w, roam::object_id{9, 11, 42}, {});
    format::write_object(w, roam::object_id{0, 12, 5}, bytes_of("third object"));
    w.finish();
    EXPECT_EQ(w.file_bytes(), std::filesystem::file_size(path));
    return format::read_file(path);
  }

  std::string decode_error(std::span<const std::byte> bytes, format::file_kind kind) {
    try {
      const auto body = format::open_container(bytes, kind);
      if (kind == format::file_kind::node)
        (void)format::decode_node_file(body);
      else
        (void)format::decode_manifest(body);
    } catch (const roam::checkpoint_error& e) {
      EXPECT_EQ(e.code(), roam::errc::checkpoint);
      return e.message();
    }
    return "accepted";
  }

  std::filesystem::path dir_;
};

TEST_F(CheckpointFormat, NodeFileReadsBackWhatWasWritten) {
  const std::vector<std::byte> bytes = node_file_bytes();
  const format::node_file f =
      format::decode_node_file(format::open_container(bytes, format::file_kind::node));
  EXPECT_EQ(f.generation, 7u);
  EXPECT_EQ(f.node, 3u);
  ASSERT_EQ(f.states.size(), 2u);
  EXPECT_EQ(f.states[0].name, "driver");
  EXPECT_EQ(f.states[0].type, "6driver");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f.states[0].bytes.data()),
                        f.states[0].bytes.size()),
            "state-bytes");
  EXPECT_TRUE(f.states[1].bytes.empty());
  ASSERT_EQ(f.objects.size(), 3u);
  EXPECT_EQ(f.objects[1].id, (roam::object_id{9, 11, 42}));
  EXPECT_TRUE(f.objects[1].bytes.empty());
  EXPECT_EQ(f.objects[2].bytes.size(), std::strlen("third object"));
}

TEST_F(CheckpointFormat, ManifestReadsBackWhatWasWritten) {
  format::manifest m;
  m.generation = 12;
  m.handler_hash = 0x1234567890abcdefull;
  m.home_span = 3;
  m.next_index = {5, 1, 9};
  m.nodes = {{2, 100, 0xdeadbeef}, {0, 56, 7}};
  const format::manifest back = format::decode_manifest(format::encode_manifest(m));
  EXPECT_EQ(back.generation, 12u);
  EXPECT_EQ(back.handler_hash, m.handler_hash);
  EXPECT_EQ(back.home_span, 3u);
  EXPECT_EQ(back.next_index, m.next_index);
  ASSERT_EQ(back.nodes.size(), 2u);
  EXPECT_EQ(back.nodes[0].body_crc, 0xdeadbeefu);
  EXPECT_EQ(back.nodes[1].file_bytes, 56u);
}

TEST_F(CheckpointFormat, CrcContinuesAcrossPieces) {
  const std::string text = "roam checkpoints are checked piece by piece";
  const auto all = bytes_of(text);
  // The CRC-32 of "123456789" is 0xCBF43926 (the check value of the zlib/PNG CRC).
  EXPECT_EQ(format::crc32(bytes_of("123456789")), 0xCBF43926u);
  EXPECT_EQ(format::crc32(all.subspan(10), format::crc32(all.first(10))), format::crc32(all));
}

TEST_F(CheckpointFormat, EveryKindOfDamageIsRefused) {
  const std::vector<std::byte> good = node_file_bytes();
  EXPECT_EQ(decode_error(good, format::file_kind::node), "accepted");

  auto damaged = [&](auto change) {
    std::vector<std::byte> copy = good;
    change(copy);
    return decode_error(copy, format::file_kind::node);
  };
  EXPECT_NE(damaged([](auto& b) { b.resize(20); }).find("less than the 32-byte header"),
            std::string::npos);
  EXPECT_NE(damaged([](auto& b) { b.pop_back(); }).find("truncated"), std::string::npos);
  EXPECT_NE(damaged([](auto& b) { b.push_back(std::byte{0}); }).find("the header says"),
            std::string::npos);
  EXPECT_NE(damaged([](auto& b) { b[40] ^= std::byte{1}; }).find("contents are corrupt"),
            std::string::npos);
  EXPECT_NE(damaged([](auto& b) { b[9] ^= std::byte{1}; }).find("header is corrupt"),
            std::string::npos);
  EXPECT_NE(damaged([](auto& b) { b[0] = std::byte{'X'}; }).find("not a roam checkpoint"),
            std::string::npos);
  EXPECT_NE(decode_error(good, format::file_kind::manifest).find("not a checkpoint manifest"),
            std::string::npos);
}

TEST_F(CheckpointFormat, MalformedBodiesAreRefused) {
  auto node_error = [](const std::vector<std::byte>& body) -> std::string {
    try {
      (void)format::decode_node_file(body);
    } catch (const roam::checkpoint_error& e) {
      return e.message();
    }
    return "accepted";
  };
  std::vector<std::byte> body(24, std::byte{0});  // generation, node, reserved, no state
  EXPECT_EQ(node_error(body), "accepted");
  body[16] = std::byte{0xff};  // a state count far beyond the body
  EXPECT_NE(node_error(body).find("saved states"), std::string::npos);
  body[16] = std::byte{0};
  body.resize(24 + 16 + 8, std::byte{0});  // an object of index 0
  EXPECT_NE(node_error(body).find("index 0"), std::string::npos);
  body.resize(24 + 10);  // an object cut short
  EXPECT_NE(node_error(body).find("truncated"), std::string::npos);

  format::manifest m;
  m.home_span = 1;
  m.next_index = {1};
  m.nodes = {{0, 100, 0}};
  std::vector<std::byte> manifest = format::encode_manifest(m);
  manifest.pop_back();
  try {
    (void)format::decode_manifest(manifest);
    ADD_FAILURE() << "a short manifest was accepted";
  } catch (const roam::checkpoint_error& e) {
    EXPECT_NE(e.message().find("bytes of tables"), std::string::npos) << e.message();
  }
  m.home_span = 0;  // below the node count
  try {
    (void)format::decode_manifest(format::encode_manifest(m));
    ADD_FAILURE() << "a home span below the node count was accepted";
  } catch (const roam::checkpoint_error& e) {
    EXPECT_NE(e.message().find("home span"), std::string::npos) << e.message();
  }
}

TEST_F(CheckpointFormat, AFileThatCannotBeWrittenIsNamed) {
  try {
    format::file_writer w((dir_ / "missing" / "x.ckpt").string(), format::file_kind::node);
    ADD_FAILURE() << "a file in a missing directory was created";
  } catch (const roam::checkpoint_error& e) {
    EXPECT_NE(e.message().find("missing/x.ckpt"), std::string::npos) << e.message();
  }
}

}  // namespace
