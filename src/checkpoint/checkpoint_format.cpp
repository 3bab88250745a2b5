// The checkpoint's bytes (docs/guide/checkpoint.md#format). Integers are little-endian, as
// the machines roam runs on store them; the magic's version and the header CRC catch a file
// from elsewhere.
#include <roam/checkpoint/detail/checkpoint_format.hpp>

#include <roam/base/error.hpp>

#include <boost/crc.hpp>

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

namespace roam::detail::checkpoint_format {

static_assert(std::endian::native == std::endian::little,
              "roam's checkpoint format is little-endian; this machine is not");

namespace {

[[noreturn]] void malformed(const std::string& what) { throw checkpoint_error(what); }

/// Reads fixed-size values off the front of a span, checking each length.
class cursor {
 public:
  explicit cursor(std::span<const std::byte> bytes) noexcept : bytes_(bytes) {}
  template <class T>
  T read(const char* what) {
    T value;
    std::memcpy(&value, take(sizeof value, what).data(), sizeof value);
    return value;
  }
  std::span<const std::byte> take(std::uint64_t size, const char* what) {
    if (size > bytes_.size() - at_)
      malformed(std::string("truncated: ") + what + " needs " + std::to_string(size) +
                " bytes at offset " + std::to_string(at_) + " of the body, which has " +
                std::to_string(bytes_.size()));
    const auto part = bytes_.subspan(at_, size);
    at_ += size;
    return part;
  }
  std::size_t remaining() const noexcept { return bytes_.size() - at_; }

 private:
  std::span<const std::byte> bytes_;
  std::size_t at_ = 0;
};

struct container_header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t kind;
  std::uint64_t body_bytes;
  std::uint32_t body_crc;
  std::uint32_t header_crc;
};
static_assert(sizeof(container_header) == header_bytes);

std::uint32_t header_crc_of(const container_header& h) noexcept {
  return crc32(std::as_bytes(std::span(&h, 1)).first(offsetof(container_header, header_crc)));
}

const char* kind_name(std::uint32_t kind) {
  switch (static_cast<file_kind>(kind)) {
    case file_kind::manifest:
      return "a checkpoint manifest";
    case file_kind::node:
      return "a node's checkpoint file";
  }
  return "an unknown kind of checkpoint file";
}

}  // namespace

std::uint32_t crc32(std::span<const std::byte> bytes, std::uint32_t crc) noexcept {
  // boost::crc_32_type continues from a CRC once the final XOR is undone and the remainder
  // is given unreflected (its constructor reflects it again).
  const std::uint32_t remainder = crc ^ 0xFFFFFFFFu;
  std::uint32_t unreflected = 0;
  for (int bit = 0; bit < 32; ++bit)
    if (remainder >> bit & 1u) unreflected |= 1u << (31 - bit);
  boost::crc_32_type c(unreflected);
  c.process_bytes(bytes.data(), bytes.size());
  return c.checksum();
}

std::span<const std::byte> open_container(std::span<const std::byte> bytes, file_kind kind) {
  container_header h;
  if (bytes.size() < sizeof h)
    malformed("truncated: " + std::to_string(bytes.size()) + " bytes, less than the " +
              std::to_string(sizeof h) + "-byte header");
  std::memcpy(&h, bytes.data(), sizeof h);
  if (std::memcmp(h.magic, magic, sizeof magic) != 0) malformed("not a roam checkpoint file");
  if (h.header_crc != header_crc_of(h)) malformed("its header is corrupt (CRC mismatch)");
  if (h.version != version)
    malformed("format version " + std::to_string(h.version) + "; this roam reads version " +
              std::to_string(version));
  if (h.kind != static_cast<std::uint32_t>(kind))
    malformed(std::string("it is ") + kind_name(h.kind) + ", not " +
              kind_name(static_cast<std::uint32_t>(kind)));
  const std::uint64_t body = bytes.size() - sizeof h;
  if (h.body_bytes != body)
    malformed((h.body_bytes > body ? "truncated: " : "") + std::to_string(body) +
              " body bytes, the header says " + std::to_string(h.body_bytes));
  const auto contents = bytes.subspan(sizeof h);
  if (crc32(contents) != h.body_crc) malformed("its contents are corrupt (CRC mismatch)");
  return contents;
}

std::vector<std::byte> encode_manifest(const manifest& m) {
  std::vector<std::byte> out;
  auto put = [&out](const auto& v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + sizeof v);
  };
  put(m.generation);
  put(m.handler_hash);
  put(static_cast<std::uint32_t>(m.nodes.size()));
  put(m.home_span);
  for (std::uint64_t next : m.next_index) put(next);
  for (const node_summary& s : m.nodes) {
    put(s.objects);
    put(s.file_bytes);
    put(s.body_crc);
    put(std::uint32_t{0});
  }
  return out;
}

manifest decode_manifest(std::span<const std::byte> body) {
  cursor c(body);
  manifest m;
  m.generation = c.read<std::uint64_t>("the generation");
  m.handler_hash = c.read<std::uint64_t>("the handler table's hash");
  const auto nodes = c.read<std::uint32_t>("the node count");
  m.home_span = c.read<std::uint32_t>("the home span");
  if (nodes == 0) malformed("the manifest names no node");
  if (m.home_span < nodes)
    malformed("the home span " + std::to_string(m.home_span) + " is below the node count " +
              std::to_string(nodes));
  const std::uint64_t expected =
      std::uint64_t{m.home_span} * sizeof(std::uint64_t) + std::uint64_t{nodes} * 24;
  if (c.remaining() != expected)
    malformed("the manifest has " + std::to_string(c.remaining()) + " bytes of tables, not the " +
              std::to_string(expected) + " its " + std::to_string(nodes) + " nodes and " +
              std::to_string(m.home_span) + " homes need");
  m.next_index.resize(m.home_span);
  for (auto& next : m.next_index) next = c.read<std::uint64_t>("a next index");
  m.nodes.resize(nodes);
  for (node_summary& s : m.nodes) {
    s.objects = c.read<std::uint64_t>("an object count");
    s.file_bytes = c.read<std::uint64_t>("a file size");
    s.body_crc = c.read<std::uint32_t>("a file CRC");
    (void)c.read<std::uint32_t>("a reserved word");
    if (s.file_bytes < header_bytes + 24)
      malformed("a node file of " + std::to_string(s.file_bytes) + " bytes is too small");
  }
  return m;
}

node_file decode_node_file(std::span<const std::byte> body) {
  cursor c(body);
  node_file f;
  f.generation = c.read<std::uint64_t>("the generation");
  f.node = c.read<std::uint32_t>("the node");
  (void)c.read<std::uint32_t>("a reserved word");
  const auto states = c.read<std::uint64_t>("the state count");
  // Each state takes at least 16 bytes: a count beyond what the body holds is corrupt (and
  // must not size a vector).
  if (states > c.remaining() / 16)
    malformed("the file claims " + std::to_string(states) + " saved states in " +
              std::to_string(c.remaining()) + " bytes");
  f.states.reserve(states);
  for (std::uint64_t i = 0; i < states; ++i) {
    const auto name_bytes = c.read<std::uint32_t>("a state's name length");
    const auto type_bytes = c.read<std::uint32_t>("a state's type length");
    const auto size = c.read<std::uint64_t>("a state's size");
    const auto name = c.take(name_bytes, "a state's name");
    const auto type = c.take(type_bytes, "a state's type");
    saved_state s;
    s.name = std::string_view(reinterpret_cast<const char*>(name.data()), name.size());
    s.type = std::string_view(reinterpret_cast<const char*>(type.data()), type.size());
    s.bytes = c.take(size, "a state's value");
    if (s.name.empty()) malformed("a saved state has no name");
    f.states.push_back(s);
  }
  while (c.remaining() != 0) {
    saved_object o;
    o.id = c.read<object_id>("an object's identity");
    const auto size = c.read<std::uint64_t>("an object's size");
    o.bytes = c.take(size, "an object's value");
    if (o.id.index == 0) malformed("a saved object has index 0 (the null object)");
    f.objects.push_back(o);
  }
  return f;
}

std::string node_file_name(std::uint32_t node, std::uint64_t generation) {
  return "node" + std::to_string(node) + ".g" + std::to_string(generation) + ".ckpt";
}

file_writer::file_writer(std::string path, file_kind kind) : path_(std::move(path)), kind_(kind) {
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_) fail("cannot create");
  // The header, zeroed until finish() knows the body's size and CRC.
  const container_header blank{};
  if (std::fwrite(&blank, sizeof blank, 1, file_) != 1) fail("cannot write");
}

file_writer::~file_writer() {
  if (file_) std::fclose(file_);
}

void file_writer::fail(const char* what) {
  const int code = errno;
  if (file_) {
    std::fclose(file_);
    file_ = nullptr;
  }
  throw checkpoint_error(std::string(what) + " '" + path_ + "': " + std::strerror(code));
}

void file_writer::write(const void* data, std::size_t size) {
  if (size == 0) return;
  if (std::fwrite(data, 1, size, file_) != size) fail("cannot write");
  crc_ = crc32(std::span(static_cast<const std::byte*>(data), size), crc_);
  body_bytes_ += size;
}

void file_writer::finish() {
  container_header h{};
  std::memcpy(h.magic, magic, sizeof magic);
  h.version = version;
  h.kind = static_cast<std::uint32_t>(kind_);
  h.body_bytes = body_bytes_;
  h.body_crc = crc_;
  h.header_crc = header_crc_of(h);
  if (std::fseek(file_, 0, SEEK_SET) != 0) fail("cannot seek in");
  if (std::fwrite(&h, sizeof h, 1, file_) != 1) fail("cannot write");
  if (std::fflush(file_) != 0) fail("cannot write");
  if (::fsync(::fileno(file_)) != 0) fail("cannot flush to storage");
  std::FILE* f = std::exchange(file_, nullptr);
  if (std::fclose(f) != 0) fail("cannot close");
}

void write_node_file_start(file_writer& w, std::uint64_t generation, std::uint32_t node) {
  w.write_value(generation);
  w.write_value(node);
  w.write_value(std::uint32_t{0});
}

void write_state_count(file_writer& w, std::uint64_t count) { w.write_value(count); }

void write_state(file_writer& w, std::string_view name, std::string_view type,
                 std::span<const std::byte> bytes) {
  w.write_value(static_cast<std::uint32_t>(name.size()));
  w.write_value(static_cast<std::uint32_t>(type.size()));
  w.write_value(static_cast<std::uint64_t>(bytes.size()));
  w.write(name.data(), name.size());
  w.write(type.data(), type.size());
  w.write(bytes.data(), bytes.size());
}

void write_object(file_writer& w, const object_id& id, std::span<const std::byte> bytes) {
  w.write_value(id);
  w.write_value(static_cast<std::uint64_t>(bytes.size()));
  w.write(bytes.data(), bytes.size());
}

void sync_directory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    throw checkpoint_error("cannot open the directory '" + path + "': " + std::strerror(errno));
  const int failed = ::fsync(fd);
  const int code = errno;
  ::close(fd);
  if (failed != 0)
    throw checkpoint_error("cannot flush the directory '" + path +
                           "' to storage: " + std::strerror(code));
}

std::vector<std::byte> read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw checkpoint_error("cannot open '" + path + "': " + std::strerror(errno));
  std::vector<std::byte> bytes;
  std::byte buffer[1 << 16];
  for (;;) {
    const std::size_t got = std::fread(buffer, 1, sizeof buffer, f);
    bytes.insert(bytes.end(), buffer, buffer + got);
    if (got < sizeof buffer) break;
  }
  const bool failed = std::ferror(f) != 0;
  const int code = errno;
  std::fclose(f);
  if (failed) throw checkpoint_error("cannot read '" + path + "': " + std::strerror(code));
  return bytes;
}

}  // namespace roam::detail::checkpoint_format
