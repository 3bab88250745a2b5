// roam — the bytes of a checkpoint (docs/guide/checkpoint.md#format): a container with a
// version and a CRC-32 per file, the manifest, and the node files. The decoders are pure
// functions of the bytes (fuzzed: fuzz/checkpoint_target.cpp); the writer streams a file.
// Not for applications.
#pragma once

#include <roam/mobile/object_info.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace roam::detail::checkpoint_format {

inline constexpr char magic[8] = {'R', 'O', 'A', 'M', 'C', 'K', 'P', 'T'};
inline constexpr std::uint32_t version = 1;
inline constexpr std::size_t header_bytes = 32;
enum class file_kind : std::uint32_t { manifest = 1, node = 2 };

/// The CRC-32 (the polynomial of zlib and PNG) of `bytes`, continuing from `crc`.
std::uint32_t crc32(std::span<const std::byte> bytes, std::uint32_t crc = 0) noexcept;

/// Checks a whole file (`bytes`) of kind `kind` and returns its body. Throws
/// roam::checkpoint_error saying what is wrong (not naming the file: the caller does).
std::span<const std::byte> open_container(std::span<const std::byte> bytes, file_kind kind);

/// What the manifest says of one node's file.
struct node_summary {
  std::uint64_t objects = 0;     ///< objects in it
  std::uint64_t file_bytes = 0;  ///< its size, container included
  std::uint32_t body_crc = 0;    ///< its container's body CRC
};
/// The manifest: the checkpoint's one entry point, written last.
struct manifest {
  std::uint64_t generation = 0;    ///< names the node files (node<k>.g<generation>.ckpt)
  std::uint64_t handler_hash = 0;  ///< of the handler table of the program that wrote it
  std::uint32_t home_span = 0;     ///< objects' home fields are below this
  /// Per home field: the next index that home would hand out.
  std::vector<std::uint64_t> next_index;
  std::vector<node_summary> nodes;  ///< per node of the job that wrote it
};
std::vector<std::byte> encode_manifest(const manifest& m);
/// Throws roam::checkpoint_error if `body` is not a well-formed manifest.
manifest decode_manifest(std::span<const std::byte> body);

/// A node file's contents, as views into its bytes.
struct saved_object {
  object_id id;
  std::span<const std::byte> bytes;
};
struct saved_state {
  std::string_view name;  ///< the node_local's roam::checkpointed name
  std::string_view type;  ///< typeid(T).name()
  std::span<const std::byte> bytes;
};
struct node_file {
  std::uint64_t generation = 0;
  std::uint32_t node = 0;
  std::vector<saved_object> objects;
  std::vector<saved_state> states;
};
/// Throws roam::checkpoint_error if `body` is not a well-formed node file.
node_file decode_node_file(std::span<const std::byte> body);

/// The name of node `node`'s file of generation `generation`; the manifest's name.
std::string node_file_name(std::uint32_t node, std::uint64_t generation);
inline constexpr std::string_view manifest_name = "roam-checkpoint";

/// Streams one file: a container of kind `kind` at `path` (created or replaced), whose
/// header is written last. Every failure throws roam::checkpoint_error naming `path` and
/// the system's reason.
class file_writer {
 public:
  file_writer(std::string path, file_kind kind);
  ~file_writer();
  file_writer(const file_writer&) = delete;
  file_writer& operator=(const file_writer&) = delete;

  void write(const void* data, std::size_t size);
  template <class T>
  void write_value(const T& value) {
    write(&value, sizeof value);
  }
  /// Writes the header, flushes the file to stable storage and closes it.
  void finish();
  /// After finish(): the file's size and its body's CRC.
  std::uint64_t file_bytes() const noexcept { return header_bytes + body_bytes_; }
  std::uint32_t body_crc() const noexcept { return crc_; }

 private:
  [[noreturn]] void fail(const char* what);
  std::string path_;
  file_kind kind_;
  std::FILE* file_ = nullptr;
  std::uint64_t body_bytes_ = 0;
  std::uint32_t crc_ = 0;
};

/// The body of a node file, in pieces, in this order: its start, the count of states and
/// each state, then the objects (as many as the body holds, so that they can be packed one
/// at a time).
void write_node_file_start(file_writer& w, std::uint64_t generation, std::uint32_t node);
void write_state_count(file_writer& w, std::uint64_t count);
void write_state(file_writer& w, std::string_view name, std::string_view type,
                 std::span<const std::byte> bytes);
void write_object(file_writer& w, const object_id& id, std::span<const std::byte> bytes);

/// Flushes directory `path` (the renames and removals in it) to stable storage; throws
/// roam::checkpoint_error naming it if it cannot.
void sync_directory(const std::string& path);

/// Reads a whole file; throws roam::checkpoint_error naming it if it cannot.
std::vector<std::byte> read_file(const std::string& path);

}  // namespace roam::detail::checkpoint_format
