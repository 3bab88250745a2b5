// Writes the seed corpus of the fuzz targets (fuzz/corpus/<target>/): valid inputs made by
// roam's own encoders, from which libFuzzer mutates. Run it again when a wire format
// changes:  build/fuzz/fuzz/write_seeds fuzz/corpus
#include "argument_types.hpp"

#include <roam/am/buffer.hpp>
#include <roam/am/serialization.hpp>
#include <roam/checkpoint/detail/checkpoint_format.hpp>
#include <roam/core/detail/aggregation.hpp>
#include <roam/mobile/detail/migration_pack.hpp>
#include <roam/mobile/detail/object_runtime.hpp>
#include <roam/transport/message.hpp>

#include <cereal/types/map.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace {

namespace fs = std::filesystem;
using namespace roam::detail;

void write_file(const fs::path& path, const void* data, std::size_t size) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::fprintf(stderr, "write_seeds: cannot write %s\n", path.c_str());
    std::exit(1);
  }
  std::printf("%s: %zu bytes\n", path.c_str(), size);
}

void frame(const fs::path& dir, const char* name, std::uint32_t flags, std::uint32_t source,
           std::uint32_t dest, std::size_t payload) {
  message_ptr m = message::allocate(payload);
  m->header.handler = 3;
  m->header.flags = flags;
  m->header.source = source;
  m->header.dest = dest;
  m->header.payload_size = payload;
  m->header.reply_to = flags & flag_wants_reply ? 17 : 0;
  for (std::size_t i = 0; i < payload; ++i) m->payload()[i] = static_cast<std::byte>(i * 7);
  seal(m->header);
  write_file(dir / name, m->wire_data(), m->wire_size());
}

// The fuzz target arguments.cpp reads the same values in the same order.
using roam_fuzz::record;

void arguments(const fs::path& dir, const char* name, bool full) {
  message_ptr m = message::allocate(0);
  message_writer w(m);
  write_value(w, std::uint64_t{42});
  write_value(w, std::string(full ? "a handler's string argument" : ""));
  std::vector<record> records;
  if (full) records = {{1, "one", {1.5, 2.5}}, {2, "", {}}};
  write_value(w, records);
  std::map<std::string, std::vector<int>> map;
  if (full) map = {{"a", {1, 2, 3}}, {"b", {}}};
  write_value(w, map);
  std::optional<std::variant<int, std::string>> optional;
  if (full) optional = std::string("variant");
  write_value(w, optional);
  roam::buffer<float> bulk(full ? 5 : 0);
  for (std::size_t i = 0; i < bulk.size(); ++i) bulk[i] = static_cast<float>(i);
  write_value(w, bulk);
  w.finish();
  write_file(dir / name, m->payload(), m->header.payload_size);
}

void fingerprints(const fs::path& dir, const char* name, const std::string& ours,
                  const std::string& theirs) {
  std::string input = ours;
  input += '\0';
  input += theirs;
  write_file(dir / name, input.data(), input.size());
}

}  // namespace

// A checkpoint's files, each behind the byte that picks its decoder (checkpoint.cpp): whole
// files (0, 1) and their bodies alone (2, 3).
void checkpoint_files(const fs::path& dir) {
  namespace format = roam::detail::checkpoint_format;
  const fs::path scratch = fs::temp_directory_path() / "roam_write_seeds.ckpt";
  auto seed = [&](const char* name, std::uint8_t decoder, std::vector<std::byte> bytes) {
    bytes.insert(bytes.begin(), static_cast<std::byte>(decoder));
    write_file(dir / name, bytes.data(), bytes.size());
  };
  {
    format::file_writer w(scratch.string(), format::file_kind::node);
    format::write_node_file_start(w, 3, 1);
    format::write_state_count(w, 1);
    const std::string state = "driver state";
    format::write_state(w, "driver", "6driver", std::as_bytes(std::span(state)));
    const std::string object = "packed object";
    format::write_object(w, roam::object_id{1, 40, 7}, std::as_bytes(std::span(object)));
    format::write_object(w, roam::object_id{5, 40, 2}, {});
    w.finish();
  }
  std::vector<std::byte> node_file = format::read_file(scratch.string());
  seed("node_file", 1, node_file);
  seed("node_body", 3, {node_file.begin() + format::header_bytes, node_file.end()});
  format::manifest m;
  m.generation = 3;
  m.handler_hash = 0x0123456789abcdefull;
  m.home_span = 3;
  m.next_index = {4, 9, 2};
  m.nodes = {{1, node_file.size(), format::crc32(std::span(node_file).subspan(32))}, {0, 64, 0}};
  const std::vector<std::byte> body = format::encode_manifest(m);
  {
    format::file_writer w(scratch.string(), format::file_kind::manifest);
    w.write(body.data(), body.size());
    w.finish();
  }
  seed("manifest_file", 0, format::read_file(scratch.string()));
  seed("manifest_body", 2, body);
  fs::remove(scratch);
}

// Bundles' payloads: a plain group of fixed records, a length-prefixed group, and a routed
// group of each kind (the layout aggregation.cpp and routing.cpp write).
void bundles(const fs::path& dir) {
  std::vector<std::byte> bytes;
  auto put = [&bytes](const void* data, std::size_t size) {
    const auto* p = static_cast<const std::byte*>(data);
    bytes.insert(bytes.end(), p, p + size);
  };
  auto group = [&](std::uint32_t target, std::uint32_t count, std::uint32_t record,
                   std::uint32_t size) {
    group_header g;
    g.handler = 5;
    g.count = count;
    g.bytes = size;
    g.target = target;
    g.origin = 1;
    g.record = record;
    put(&g, sizeof g);
  };
  const std::uint32_t values[3] = {7, 8, 9};
  group(2, 3, 4, sizeof values);
  put(values, sizeof values);
  const std::uint32_t lengths[2] = {3, 1};
  group(2, 2, length_prefixed_records, 4 + 3 + 4 + 1);
  put(&lengths[0], 4);
  put("abc", 3);
  put(&lengths[1], 4);
  put("d", 1);
  write_file(dir / "plain_groups", bytes.data(), bytes.size());
  bytes.clear();
  const std::uint32_t to[2] = {3, 2};
  group(per_record_target, 2, 4, 2 * (4 + 4));
  put(&to[0], 4);
  put(&values[0], 4);
  put(&to[1], 4);
  put(&values[1], 4);
  group(per_record_target, 1, length_prefixed_records, 4 + 4 + 3);
  put(&to[0], 4);
  put(&lengths[0], 4);
  put("xyz", 3);
  write_file(dir / "routed_groups", bytes.data(), bytes.size());
}

// Object headers behind the node count and home span bytes (object_header.cpp): a handler's
// message on its first hop, and a forwarded migration request.
void object_headers(const fs::path& dir) {
  auto seed = [&](const char* name, const object_message_header& oh) {
    std::vector<std::byte> bytes{std::byte{3}, std::byte{2}};  // 4 nodes, homes below 6
    const auto* p = reinterpret_cast<const std::byte*>(&oh);
    bytes.insert(bytes.end(), p, p + sizeof oh);
    bytes.insert(bytes.end(), 8, std::byte{0x2a});  // the handler's arguments
    write_file(dir / name, bytes.data(), bytes.size());
  };
  object_message_header oh;
  oh.target = roam::object_id{5, 9, 17};
  oh.seq = 3;
  oh.origin = 2;
  oh.version = 1;
  seed("first_hop", oh);
  oh.operation = operation_migrate;
  oh.hops = 2;
  oh.previous_hop = 4;
  oh.access = 0;
  seed("forwarded_migration", oh);
}

// Install messages behind the node count, home span and handler count bytes
// (migration_pack.cpp): an object alone, and one with its ordering state and the messages
// waiting for it. The object is a std::vector<std::uint32_t> of type #9.
void migration_packs(const fs::path& dir) {
  const roam::object_id id{2, 9, 41};
  auto seed = [&](const char* name, bool with_messages) {
    message_ptr out = message::allocate(0);
    message_writer w(out);
    migration_pack_header ph;
    ph.id = id;
    ph.version = 3;
    ph.reply_node = 1;
    ph.reply_to = with_messages ? 12 : 0;
    w.write(&ph, sizeof ph);
    write_value(w, std::vector<std::uint32_t>{1, 2, 3, 5, 8});
    if (with_messages) {
      ph.expected_count = 2;
      for (const packed_order o : {packed_order{0, 0, 4}, packed_order{3, 1, 7}}) {
        w.write(&o.origin, sizeof o.origin);
        w.write(&o.series, sizeof o.series);
        w.write(&o.next, sizeof o.next);
      }
      auto object_message = [&](std::uint32_t origin, std::uint64_t seq) {
        message_ptr m = message::allocate(sizeof(object_message_header) + 4);
        object_message_header oh;
        oh.target = id;
        oh.origin = origin;
        oh.seq = seq;
        oh.version = 2;
        m->header.handler = 1;
        m->header.source = origin;
        m->header.dest = 1;
        m->header.payload_size = sizeof oh + 4;
        std::memcpy(m->payload(), &oh, sizeof oh);
        std::memset(m->payload() + sizeof oh, 0x2a, 4);
        write_packed_message(w, *m);
      };
      ph.ready_count = 1;
      object_message(0, 4);
      ph.early_count = 2;
      object_message(3, 9);
      object_message(3, 11);
    }
    w.finish();
    std::memcpy(out->payload(), &ph, sizeof ph);
    std::vector<std::byte> bytes{std::byte{3}, std::byte{2}, std::byte{7}};  // 4, 6, 8
    bytes.insert(bytes.end(), out->payload(), out->payload() + out->header.payload_size);
    write_file(dir / name, bytes.data(), bytes.size());
  };
  seed("object_alone", false);
  seed("with_messages", true);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_seeds CORPUS_DIR\n");
    return 2;
  }
  const fs::path corpus = argv[1];
  frame(corpus / "frame", "message", 0, 5, 2, 24);
  frame(corpus / "frame", "call", flag_wants_reply, 0, 3, 8);
  frame(corpus / "frame", "empty_system", flag_system, 7, 2, 0);
  frame(corpus / "frame", "broadcast", flag_broadcast, 6, 2, 40);
  arguments(corpus / "arguments", "full", true);
  arguments(corpus / "arguments", "empty", false);
  const std::string table =
      "0 roam.core.reply\n1 roam.mobile.operation\nsetting nodes-per-rank 1\n";
  fingerprints(corpus / "fingerprint", "one_line", table,
               "0 roam.core.reply\n1 roam.mobile.install\nsetting nodes-per-rank 1\n");
  fingerprints(corpus / "fingerprint", "longer", table, table + "2 extra\n");
  fingerprints(corpus / "fingerprint", "final_break", table, table.substr(0, table.size() - 1));
  checkpoint_files(corpus / "checkpoint");
  bundles(corpus / "bundle");
  object_headers(corpus / "object_header");
  migration_packs(corpus / "migration_pack");
  return 0;
}
