// Safetensors reader/writer; see core/io/safetensors.h for the layout and contracts.
#include "core/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "core/io/atomic_file.h"
#include "core/platform/memory.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "core/io/safetensors assumes a little-endian host (the format stores little-endian data)"
#endif

namespace mnemo::io {
namespace {

using OrderedJson = nlohmann::ordered_json;

constexpr std::uint64_t kHeaderAlign = 8;  // data section starts at a multiple of this

// The LibTorch type of each dtype name of the header layer (safetensors_dtypes(), same order).
struct DtypeInfo {
  const char* name;
  torch::ScalarType type;
};

const DtypeInfo kDtypes[] = {
    {"F64", torch::kFloat64}, {"F32", torch::kFloat32}, {"F16", torch::kFloat16}, {"BF16", torch::kBFloat16},
    {"I64", torch::kInt64},   {"I32", torch::kInt32},   {"I16", torch::kInt16},   {"I8", torch::kInt8},
    {"U8", torch::kUInt8},    {"BOOL", torch::kBool},
};


// ---------------------------------------------------------------- reading

// Owns a read-only descriptor.
class InputFile {
 public:
  InputFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // a FIFO is refused below, not waited on
    if (fd_ < 0) {
      const int err = errno;
      if (err == ENOENT) safetensors_fail(path, "file does not exist");
      safetensors_fail(path, "cannot open file: " + errno_text(err));
    }
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() { ::close(fd_); }

  // Size of a regular file; rejects directories and other non-regular files.
  std::uint64_t regular_file_size() const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) safetensors_fail(path_, "cannot stat file: " + errno_text(errno));
    if (S_ISDIR(st.st_mode)) safetensors_fail(path_, "is a directory, not a safetensors file");
    if (S_ISFIFO(st.st_mode)) safetensors_fail(path_, "is a FIFO (named pipe), not a file; pass the file itself");
    if (!S_ISREG(st.st_mode)) safetensors_fail(path_, "is not a regular file");
    return static_cast<std::uint64_t>(st.st_size);
  }

  // Bytes the file system holds for it: much less than the size means a sparse file.
  std::uint64_t stored_bytes() const {
    struct stat st {};
    return ::fstat(fd_, &st) == 0 ? static_cast<std::uint64_t>(st.st_blocks) * 512u : 0;
  }

  // Reads up to `size` bytes at `offset`; returns how many were read (fewer only at EOF).
  std::size_t read_at(void* buf, std::size_t size, std::uint64_t offset) const {
    char* p = static_cast<char*>(buf);
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pread(fd_, p + done, size - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        safetensors_fail(path_, "read failed: " + errno_text(errno));
      }
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
    }
    return done;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// ---------------------------------------------------------------- writing

void encode_u64_le(std::uint64_t v, unsigned char out[8]) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

torch::Tensor to_cpu_contiguous(const std::string& path, const std::string& name,
                                const torch::Tensor& t) {
  try {
    return t.detach().to(torch::kCPU).resolve_neg().resolve_conj().contiguous();
  } catch (const c10::Error& e) {
    safetensors_fail_tensor(path, name, std::string("cannot copy to CPU: ") + e.what_without_backtrace());
  }
}

}  // namespace

std::string dtype_name(torch::ScalarType dtype) {
  for (const auto& d : kDtypes) {
    if (d.type == dtype) return d.name;
  }
  return {};
}

std::optional<torch::ScalarType> parse_dtype(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return d.type;
  }
  return std::nullopt;
}

std::size_t dtype_size(torch::ScalarType dtype) { return safetensors_dtype_size(dtype_name(dtype)); }

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  if (path.empty()) throw SafetensorsError("save_safetensors: the path is empty");

  OrderedJson header = OrderedJson::object();
  if (!metadata.empty()) {
    OrderedJson meta = OrderedJson::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header[kSafetensorsMetadataKey] = std::move(meta);
  }

  std::set<std::string> seen;
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    if (name.empty()) safetensors_fail(path, "tensor #" + std::to_string(i) + " has an empty name");
    if (name == kSafetensorsMetadataKey) {
      safetensors_fail_tensor(path, name, "the name is reserved for the metadata block");
    }
    if (!seen.insert(name).second) safetensors_fail_tensor(path, name, "duplicate tensor name");
    if (!t.defined()) safetensors_fail_tensor(path, name, "tensor is undefined");
    if (t.layout() != torch::kStrided) {
      safetensors_fail_tensor(path, name, "only dense (strided) tensors can be saved");
    }
    const std::string dn = dtype_name(t.scalar_type());
    if (dn.empty()) {
      safetensors_fail_tensor(path, name,
                  std::string("dtype ") + c10::toString(t.scalar_type()) +
                      " is not supported (supported: " + safetensors_supported_list() + ")");
    }
    const auto nbytes = static_cast<std::uint64_t>(t.numel()) * dtype_size(t.scalar_type());
    OrderedJson entry = OrderedJson::object();
    entry["dtype"] = dn;
    entry["shape"] = t.sizes().vec();
    entry["data_offsets"] = OrderedJson::array({offset, offset + nbytes});
    header[name] = std::move(entry);
    offset += nbytes;
  }

  std::string header_text;
  try {
    header_text = header.dump();
  } catch (const OrderedJson::exception& e) {
    safetensors_fail(path, std::string("cannot encode the header (tensor names and metadata must be UTF-8): ") +
                   e.what());
  }
  const auto padded = (header_text.size() + kHeaderAlign - 1) / kHeaderAlign * kHeaderAlign;
  header_text.resize(padded, ' ');

  try {
    write_file_atomic(path, [&](std::FILE* f) {
      unsigned char prefix[kSafetensorsLengthPrefixBytes];
      encode_u64_le(header_text.size(), prefix);
      write_all(f, prefix, sizeof prefix, path);
      write_all(f, header_text.data(), header_text.size(), path);
      for (const auto& [name, t] : tensors) {
        const torch::Tensor c = to_cpu_contiguous(path, name, t);
        write_all(f, c.data_ptr(), static_cast<std::size_t>(c.nbytes()), path);
      }
    });
  } catch (const IoError& e) {
    throw SafetensorsError(e.what());
  }
}

namespace {
// Before allocating: the tensors must fit this machine's memory, and a file that declares
// gigabytes but stores almost none of them (a sparse file: holes read as zeros) is no
// checkpoint Mnemoscope wrote. Bounds the memory a crafted 4 KB file can make us take.
void check_loadable_size(const std::string& path, const InputFile& file, const SafetensorsHeader& h) {
  std::uint64_t data = 0;
  for (const auto& e : h.entries) data += e.end - e.begin;
  const std::uint64_t machine = platform::machine_memory_bytes();
  if (machine > 0 && data > machine)
    safetensors_fail(path, "its tensors need " + platform::format_bytes(static_cast<double>(data)) +
                               ", more than this machine's memory (" + platform::format_bytes(static_cast<double>(machine)) +
                               "); load it on a larger machine");
  constexpr std::uint64_t kSparseCheckFrom = 64ull << 20;
  const std::uint64_t stored = file.stored_bytes();
  if (data >= kSparseCheckFrom && stored < data / 8)
    safetensors_fail(path, "is a sparse file: its tensors declare " + platform::format_bytes(static_cast<double>(data)) +
                               " but only " + platform::format_bytes(static_cast<double>(stored)) +
                               " are stored on disk; it was not written by Mnemoscope (if it is yours, copy it with"
                               " 'cp --sparse=never' and load the copy)");
}
}  // namespace

NamedTensors load_safetensors(const std::string& path,
                              std::map<std::string, std::string>* metadata) {
  InputFile file(path);
  const SafetensorsHeader h = parse_safetensors_header(
      path, file.regular_file_size(),
      [&](void* buf, std::size_t size, std::uint64_t offset) { return file.read_at(buf, size, offset); });
  check_loadable_size(path, file, h);
  NamedTensors out;
  out.reserve(h.entries.size());
  for (const auto& e : h.entries) {
    torch::Tensor t = torch::empty(e.shape, torch::TensorOptions().dtype(*parse_dtype(e.dtype)));
    const auto nbytes = static_cast<std::size_t>(e.end - e.begin);
    if (nbytes > 0 && file.read_at(t.data_ptr(), nbytes, h.data_start + e.begin) != nbytes) {
      safetensors_fail_tensor(path, e.name,
                  "unexpected end of file while reading data (the file changed while loading?)");
    }
    if (e.dtype == "BOOL") check_safetensors_bool(path, e.name, static_cast<const unsigned char*>(t.data_ptr()), nbytes);
    out.emplace_back(e.name, std::move(t));
  }
  if (metadata) *metadata = h.metadata;
  return out;
}

}  // namespace mnemo::io
