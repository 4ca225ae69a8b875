// Tests for core/io/safetensors and core/io/atomic_file.
// LibTorch first: its glog headers define CHECK, which doctest must redefine afterwards.
#include <torch/torch.h>
// (keep this order)
#include <doctest/doctest.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/io/atomic_file.h"
#include "core/io/safetensors.h"
#include "core/platform/libstdcxx.h"

namespace fs = std::filesystem;
using namespace std::string_literals;
using mnemo::io::IoError;
using mnemo::io::kMaxHeaderBytes;
using mnemo::io::load_safetensors;
using mnemo::io::NamedTensors;
using mnemo::io::save_safetensors;
using mnemo::io::SafetensorsError;

namespace {

// A fresh directory under the system temp dir, removed with everything in it.
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "mnemo_io_test_XXXXXX").string();
    const char* made = ::mkdtemp(tmpl.data());
    REQUIRE(made != nullptr);
    path = made;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return path + "/" + name; }
  std::set<std::string> entries() const {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.insert(e.path().filename().string());
    return names;
  }
};

void write_raw(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::string read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string u64le(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}

// Length prefix + header + data, the header length taken from the header text.
std::string st_file(const std::string& header, const std::string& data) {
  return u64le(header.size()) + header + data;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The SafetensorsError message of load_safetensors(path), or a marker when it does not throw.
std::string load_error(const std::string& path) {
  try {
    load_safetensors(path);
  } catch (const SafetensorsError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<wrong exception type> ") + e.what();
  }
  return "<no exception>";
}

std::string save_error(const std::string& path, const NamedTensors& tensors) {
  try {
    save_safetensors(path, tensors);
  } catch (const SafetensorsError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<wrong exception type> ") + e.what();
  }
  return "<no exception>";
}

// Writes `bytes` to a file in `dir` and checks load_safetensors rejects it with a message
// that names the file and contains every phrase.
void expect_load_rejects(const TempDir& dir, const std::string& bytes,
                         const std::vector<std::string>& phrases) {
  const std::string path = dir.file("bad.safetensors");
  write_raw(path, bytes);
  const std::string msg = load_error(path);
  CHECK_MESSAGE(has(msg, path), msg);
  for (const auto& p : phrases) CHECK_MESSAGE(has(msg, p), "expected '" << p << "' in: " << msg);
}

bool bitwise_equal(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const auto ac = a.contiguous();
  const auto bc = b.contiguous();
  if (ac.nbytes() != bc.nbytes()) return false;
  return ac.nbytes() == 0 || std::memcmp(ac.data_ptr(), bc.data_ptr(), ac.nbytes()) == 0;
}

// Random bit patterns for every element (NaNs and denormals included for float types).
torch::Tensor random_tensor(torch::ScalarType dtype, const std::vector<std::int64_t>& shape) {
  if (dtype == torch::kBool) return torch::randint(0, 2, shape, torch::kUInt8).to(torch::kBool);
  std::int64_t numel = 1;
  for (auto d : shape) numel *= d;
  const auto bytes = torch::randint(0, 256, {numel * static_cast<std::int64_t>(
                                                        mnemo::io::dtype_size(dtype))},
                                    torch::kUInt8);
  return bytes.view(dtype).reshape(shape);
}

const std::vector<torch::ScalarType> kAllDtypes = {
    torch::kFloat64, torch::kFloat32, torch::kFloat16, torch::kBFloat16, torch::kInt64,
    torch::kInt32,   torch::kInt16,   torch::kInt8,    torch::kUInt8,    torch::kBool};

const std::string kF32Entry4 = R"({"dtype":"F32","shape":[4],"data_offsets":)";

}  // namespace

TEST_CASE("safetensors: dtype names") {
  CHECK(mnemo::io::dtype_name(torch::kFloat32) == "F32");
  CHECK(mnemo::io::dtype_name(torch::kFloat16) == "F16");
  CHECK(mnemo::io::dtype_name(torch::kBFloat16) == "BF16");
  CHECK(mnemo::io::dtype_name(torch::kInt64) == "I64");
  CHECK(mnemo::io::dtype_name(torch::kUInt8) == "U8");
  CHECK(mnemo::io::dtype_name(torch::kBool) == "BOOL");
  CHECK(mnemo::io::dtype_name(torch::kComplexFloat).empty());
  for (auto t : kAllDtypes) {
    const auto name = mnemo::io::dtype_name(t);
    REQUIRE_FALSE(name.empty());
    CHECK(mnemo::io::parse_dtype(name) == t);
    CHECK(mnemo::io::dtype_size(t) == c10::elementSize(t));
  }
  CHECK_FALSE(mnemo::io::parse_dtype("F8_E4M3").has_value());
  CHECK_FALSE(mnemo::io::parse_dtype("f32").has_value());
}

// Every file test below removes directories through std::filesystem: with LibTorch 2.11's
// exported copy (pytorch/pytorch#133437) they crash; this one names the cause instead.
TEST_CASE("platform: this program's std::filesystem calls go to libstdc++, not LibTorch's exported copy") {
  const auto b = mnemo::platform::probe_std_filesystem();
  MESSAGE("std::filesystem::remove_all is defined in " << b.object);
  CHECK_FALSE(b.object.empty());
  CHECK_MESSAGE(!b.from_torch, b.summary());
}

TEST_CASE("safetensors: round trip of every dtype and shape, bitwise") {
  torch::manual_seed(1234);
  TempDir dir;
  const std::vector<std::vector<std::int64_t>> shapes = {{3, 4}, {}, {2, 0, 3}, {7}, {2, 3, 1, 2}};
  NamedTensors saved;
  for (auto dtype : kAllDtypes) {
    for (std::size_t s = 0; s < shapes.size(); ++s) {
      saved.emplace_back("encoder.layers.0." + mnemo::io::dtype_name(dtype) + ".w" + std::to_string(s),
                         random_tensor(dtype, shapes[s]));
    }
  }
  const std::string path = dir.file("model.safetensors");
  save_safetensors(path, saved);
  CHECK(dir.entries() == std::set<std::string>{"model.safetensors"});

  std::map<std::string, std::string> meta = {{"stale", "value"}};
  const NamedTensors loaded = load_safetensors(path, &meta);
  CHECK(meta.empty());
  REQUIRE(loaded.size() == saved.size());
  for (std::size_t i = 0; i < saved.size(); ++i) {
    CAPTURE(saved[i].first);
    CHECK(loaded[i].first == saved[i].first);  // write order == data-offset order
    const torch::Tensor& t = loaded[i].second;
    CHECK(t.device().is_cpu());
    CHECK(t.is_contiguous());
    CHECK(t.dim() == saved[i].second.dim());
    CHECK(bitwise_equal(t, saved[i].second));
    // Owns exactly its own bytes: not a view into a shared read buffer.
    CHECK(t.storage().nbytes() == t.nbytes());
    CHECK(t.storage_offset() == 0);
  }
  // The 0-d scalar stays 0-d.
  CHECK(loaded[1].second.dim() == 0);
  CHECK(loaded[1].second.numel() == 1);
}

TEST_CASE("safetensors: float values survive exactly") {
  TempDir dir;
  const auto f32 = torch::randn({5, 3});
  const auto bf16 = torch::randn({4}).to(torch::kBFloat16);
  const auto i64 = torch::tensor({std::numeric_limits<std::int64_t>::min(), std::int64_t{0},
                                  std::numeric_limits<std::int64_t>::max()});
  save_safetensors(dir.file("v.safetensors"), {{"f32", f32}, {"bf16", bf16}, {"i64", i64}});
  const auto loaded = load_safetensors(dir.file("v.safetensors"));
  REQUIRE(loaded.size() == 3);
  CHECK(torch::equal(loaded[0].second, f32));
  CHECK(torch::equal(loaded[1].second, bf16));
  CHECK(torch::equal(loaded[2].second, i64));
}

TEST_CASE("safetensors: metadata round trip") {
  TempDir dir;
  const std::map<std::string, std::string> meta = {
      {"format", "pt"}, {"mnemo.step", "1200"}, {"note", "üñí \"quoted\"\n"}, {"empty", ""}};
  save_safetensors(dir.file("m.safetensors"), {{"a", torch::ones({2})}}, meta);
  std::map<std::string, std::string> got;
  const auto loaded = load_safetensors(dir.file("m.safetensors"), &got);
  CHECK(got == meta);
  REQUIRE(loaded.size() == 1);
  CHECK(loaded[0].first == "a");
  // Loading without a metadata sink works too.
  CHECK(load_safetensors(dir.file("m.safetensors")).size() == 1);
}

TEST_CASE("safetensors: non-contiguous and autograd inputs are saved by value") {
  TempDir dir;
  const auto base = torch::arange(24, torch::kFloat32).reshape({4, 6});
  const auto transposed = base.t();                                       // strides swapped
  const auto strided = base.slice(1, 0, 6, 2);                            // step 2
  const auto expanded = torch::arange(3, torch::kInt32).unsqueeze(0).expand({4, 3});  // stride 0
  const auto offset_view = base.select(0, 2);                             // storage offset
  const auto grad = torch::randn({3}, torch::requires_grad());
  REQUIRE_FALSE(transposed.is_contiguous());
  REQUIRE_FALSE(strided.is_contiguous());
  REQUIRE_FALSE(expanded.is_contiguous());
  save_safetensors(dir.file("nc.safetensors"), {{"t", transposed},
                                                {"s", strided},
                                                {"e", expanded},
                                                {"o", offset_view},
                                                {"g", grad}});
  const auto loaded = load_safetensors(dir.file("nc.safetensors"));
  REQUIRE(loaded.size() == 5);
  CHECK(torch::equal(loaded[0].second, transposed));
  CHECK(torch::equal(loaded[1].second, strided));
  CHECK(torch::equal(loaded[2].second, expanded));
  CHECK(torch::equal(loaded[3].second, offset_view));
  CHECK(torch::equal(loaded[4].second, grad.detach()));
  CHECK_FALSE(loaded[4].second.requires_grad());
  CHECK(loaded[2].second.sizes() == torch::IntArrayRef({4, 3}));
}

TEST_CASE("safetensors: known bytes of a [2,2] F32 file") {
  TempDir dir;
  const std::string path = dir.file("pin.safetensors");
  save_safetensors(path, {{"w", torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}).reshape({2, 2})}});
  // 57 bytes of JSON padded with 7 spaces to 64, so the data section starts 8-aligned.
  const std::string json = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  REQUIRE(json.size() == 57);
  const std::string expected = std::string("\x40\0\0\0\0\0\0\0", 8) + json + std::string(7, ' ') +
                               std::string("\x00\x00\x80\x3f"  // 1.0f
                                           "\x00\x00\x00\x40"  // 2.0f
                                           "\x00\x00\x40\x40"  // 3.0f
                                           "\x00\x00\x80\x40",  // 4.0f
                                           16);
  const std::string actual = read_raw(path);
  CHECK(actual.size() == 8 + 64 + 16);
  CHECK(actual == expected);

  // Metadata goes first in the header.
  save_safetensors(path, {{"w", torch::zeros({1})}}, {{"k", "v"}});
  const std::string with_meta = read_raw(path);
  CHECK(with_meta.substr(8, 40) ==
        R"({"__metadata__":{"k":"v"},"w":{"dtype":")");
}

TEST_CASE("safetensors: a hand-written valid file loads - gaps and trailing bytes are allowed") {
  TempDir dir;
  // b at [0,8) (I32 [2]), gap [8,16), a at [16,20) (U8 [4]), empty z at [20,20), 3 trailing bytes.
  const std::string header =
      R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[16,20]},)"
      R"("z":{"dtype":"F32","shape":[0,5],"data_offsets":[20,20]},)"
      R"("b":{"dtype":"I32","shape":[2],"data_offsets":[0,8]},)"
      R"("__metadata__":{"x":"y"}})";
  const std::string data = std::string("\x07\0\0\0\xff\xff\xff\xff", 8) + std::string(8, '\x55') +
                           std::string("\x01\x02\x03\x04", 4) + "abc";
  const std::string path = dir.file("ok.safetensors");
  write_raw(path, st_file(header, data));
  std::map<std::string, std::string> meta;
  const auto loaded = load_safetensors(path, &meta);
  REQUIRE(loaded.size() == 3);
  CHECK(loaded[0].first == "b");
  CHECK(loaded[1].first == "a");
  CHECK(loaded[2].first == "z");
  CHECK(torch::equal(loaded[0].second, torch::tensor({7, -1}, torch::kInt32)));
  CHECK(torch::equal(loaded[1].second, torch::tensor({1, 2, 3, 4}, torch::kUInt8)));
  CHECK(loaded[2].second.sizes() == torch::IntArrayRef({0, 5}));
  CHECK(meta == std::map<std::string, std::string>{{"x", "y"}});
}

TEST_CASE("safetensors: rejects malformed files with clear messages") {
  TempDir dir;

  SUBCASE("truncated data section") {
    expect_load_rejects(
        dir,
        st_file(R"({"a.weight":{"dtype":"F32","shape":[100],"data_offsets":[0,400]}})",
                std::string(300, '\0')),
        {"tensor 'a.weight'", "[0, 400]",
         "run past the end of the data section (300 bytes)", "truncated"});
  }
  SUBCASE("offsets out of range of the data section") {
    expect_load_rejects(dir,
                        st_file(R"({"a":)" + kF32Entry4 + R"([0,16]},"b":)" + kF32Entry4 +
                                    R"([40,56]}})",
                                std::string(24, '\0')),
                        {"tensor 'b'", "[40, 56]", "past the end of the data section (24 bytes)"});
  }
  SUBCASE("overlapping tensors") {
    expect_load_rejects(dir,
                        st_file(R"({"a":)" + kF32Entry4 + R"([0,16]},"b":)" + kF32Entry4 +
                                    R"([8,24]}})",
                                std::string(24, '\0')),
                        {"tensor 'b'", "overlap tensor 'a' [0, 16]"});
  }
  SUBCASE("shape/size mismatch") {
    expect_load_rejects(
        dir,
        st_file(R"({"enc.w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})",
                std::string(16, '\0')),
        {"tensor 'enc.w'", "needs 16 bytes", "span 12 bytes", "shape/size mismatch"});
  }
  SUBCASE("shape whose byte count overflows") {
    expect_load_rejects(
        dir,
        st_file(R"({"h":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})",
                ""),
        {"tensor 'h'", "shape/size mismatch"});
  }
  SUBCASE("begin after end") {
    expect_load_rejects(
        dir,
        st_file(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[8,4]}})", std::string(8, '\0')),
        {"tensor 'a'", "begin after end"});
  }
  SUBCASE("header length past the end of the file") {
    expect_load_rejects(dir, u64le(1000) + std::string(20, ' '),
                        {"header length 1000", "runs past the end of the file", "20 bytes"});
  }
  SUBCASE("header length over the cap") {
    expect_load_rejects(dir, u64le(kMaxHeaderBytes + 1) + "{}",
                        {"header length 104857601", "exceeds the limit of 104857600"});
  }
  SUBCASE("header length near 2^64") {
    expect_load_rejects(dir, u64le(~std::uint64_t{0}) + "{}", {"exceeds the limit"});
  }
  SUBCASE("invalid JSON") {
    expect_load_rejects(dir, st_file(R"({"a": {"dtype": )", ""), {"not valid JSON"});
  }
  SUBCASE("header is not an object") {
    expect_load_rejects(dir, st_file("[1, 2]", ""), {"not a JSON object"});
  }
  SUBCASE("unknown dtype") {
    expect_load_rejects(
        dir, st_file(R"({"q":{"dtype":"X9","shape":[1],"data_offsets":[0,1]}})", std::string(1, 'x')),
        {"tensor 'q'", "unknown dtype 'X9'", "F32"});
  }
  SUBCASE("missing dtype") {
    expect_load_rejects(dir, st_file(R"({"q":{"shape":[1],"data_offsets":[0,1]}})", "x"),
                        {"tensor 'q'", "missing \"dtype\""});
  }
  SUBCASE("missing shape") {
    expect_load_rejects(dir, st_file(R"({"q":{"dtype":"U8","data_offsets":[0,1]}})", "x"),
                        {"tensor 'q'", "missing \"shape\""});
  }
  SUBCASE("missing data_offsets") {
    expect_load_rejects(dir, st_file(R"({"q":{"dtype":"U8","shape":[1]}})", "x"),
                        {"tensor 'q'", "missing \"data_offsets\""});
  }
  SUBCASE("dtype of the wrong JSON type") {
    expect_load_rejects(dir, st_file(R"({"q":{"dtype":5,"shape":[1],"data_offsets":[0,1]}})", "x"),
                        {"tensor 'q'", "\"dtype\" is not a string"});
  }
  SUBCASE("shape of the wrong JSON type") {
    expect_load_rejects(dir,
                        st_file(R"({"q":{"dtype":"U8","shape":"1","data_offsets":[0,1]}})", "x"),
                        {"tensor 'q'", "\"shape\" is not an array"});
  }
  SUBCASE("entry is not an object") {
    expect_load_rejects(dir, st_file(R"({"q":[1,2]})", "x"), {"tensor 'q'", "not a JSON object"});
  }
  SUBCASE("negative shape dim") {
    expect_load_rejects(dir,
                        st_file(R"({"q":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", "x"),
                        {"tensor 'q'", "shape dimension 0 is negative"});
  }
  SUBCASE("non-integer shape dim") {
    expect_load_rejects(
        dir, st_file(R"({"q":{"dtype":"U8","shape":[1,2.5],"data_offsets":[0,1]}})", "x"),
        {"tensor 'q'", "shape dimension 1 is not an integer"});
  }
  SUBCASE("data_offsets of the wrong arity") {
    expect_load_rejects(dir,
                        st_file(R"({"q":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})", "x"),
                        {"tensor 'q'", "\"data_offsets\" is not an array of two integers"});
  }
  SUBCASE("negative data offset") {
    expect_load_rejects(dir,
                        st_file(R"({"q":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}})", "x"),
                        {"tensor 'q'", "data_offsets begin is negative"});
  }
  SUBCASE("metadata value that is not a string") {
    expect_load_rejects(dir, st_file(R"({"__metadata__":{"step":12}})", ""),
                        {"__metadata__", "'step'", "not a string"});
  }
  SUBCASE("duplicate tensor name") {
    expect_load_rejects(dir,
                        st_file(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                                R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                                "xy"),
                        {"'a'", "more than once"});
  }
  SUBCASE("BOOL data that is not 0 or 1") {
    expect_load_rejects(
        dir, st_file(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})", "\x01\x00\x02"s),
        {"tensor 'm'", "byte value 2"});
  }
  SUBCASE("file shorter than 8 bytes") {
    expect_load_rejects(dir, "\x05\0\0\0\0"s, {"file is 5 bytes", "shorter than the 8-byte"});
  }
  SUBCASE("empty file") {
    expect_load_rejects(dir, "", {"file is 0 bytes"});
  }
  SUBCASE("missing file") {
    const std::string path = dir.file("absent.safetensors");
    const std::string msg = load_error(path);
    CHECK_MESSAGE(has(msg, path), msg);
    CHECK_MESSAGE(has(msg, "does not exist"), msg);
  }
  SUBCASE("a directory") {
    const std::string path = dir.file("sub.safetensors");
    fs::create_directory(path);
    const std::string msg = load_error(path);
    CHECK_MESSAGE(has(msg, path), msg);
    CHECK_MESSAGE(has(msg, "is a directory"), msg);
  }
}

TEST_CASE("safetensors: save rejects bad input before touching the file system") {
  TempDir dir;
  const std::string path = dir.file("out.safetensors");
  const auto x = torch::zeros({2});

  std::string msg = save_error(path, {{"a", x}, {"b", x}, {"a", x}});
  CHECK_MESSAGE(has(msg, path), msg);
  CHECK_MESSAGE(has(msg, "tensor 'a': duplicate tensor name"), msg);

  msg = save_error(path, {{"a", x}, {"", x}});
  CHECK_MESSAGE(has(msg, "tensor #1 has an empty name"), msg);

  msg = save_error(path, {{"c", torch::zeros({2}, torch::kComplexFloat)}});
  CHECK_MESSAGE(has(msg, "tensor 'c'"), msg);
  CHECK_MESSAGE(has(msg, "ComplexFloat"), msg);
  CHECK_MESSAGE(has(msg, "not supported"), msg);

  msg = save_error(path, {{"u", torch::Tensor()}});
  CHECK_MESSAGE(has(msg, "tensor 'u': tensor is undefined"), msg);

  msg = save_error(path, {{"__metadata__", x}});
  CHECK_MESSAGE(has(msg, "reserved"), msg);

  CHECK(dir.entries().empty());
}

TEST_CASE("atomic write: a missing directory is reported with the path") {
  TempDir dir;
  const std::string path = dir.file("no_such_dir/model.safetensors");
  const std::string msg = save_error(path, {{"a", torch::zeros({2})}});
  CHECK_MESSAGE(has(msg, path), msg);
  CHECK_MESSAGE(has(msg, "No such file or directory"), msg);

  try {
    mnemo::io::write_file_atomic(path, std::string("data"));
    FAIL("write_file_atomic did not throw");
  } catch (const IoError& e) {
    CHECK_MESSAGE(has(e.what(), path), e.what());
    CHECK_MESSAGE(has(e.what(), "No such file or directory"), e.what());
  }
  CHECK(dir.entries().empty());
}

TEST_CASE("atomic write: replaces content, and a failure keeps the old file and no temp files") {
  TempDir dir;
  const std::string path = dir.file("latest");
  mnemo::io::write_file_atomic(path, std::string("old content"));
  CHECK(read_raw(path) == "old content");
  mnemo::io::write_file_atomic(path, std::string("second"));
  CHECK(read_raw(path) == "second");
  mnemo::io::write_file_atomic(path, [](std::FILE* f) { std::fputs("third", f); });
  CHECK(read_raw(path) == "third");
  mnemo::io::write_file_atomic(path, nullptr, 0);
  CHECK(read_raw(path).empty());
  mnemo::io::write_file_atomic(path, std::string("old content"));
  CHECK(dir.entries() == std::set<std::string>{"latest"});

  SUBCASE("writer throws midway") {
    CHECK_THROWS_WITH_AS(mnemo::io::write_file_atomic(path,
                                                      [](std::FILE* f) {
                                                        std::fputs("partial new cont", f);
                                                        std::fflush(f);
                                                        throw std::runtime_error("boom");
                                                      }),
                         "boom", std::runtime_error);
  }
  SUBCASE("save_safetensors fails while writing (tensor cannot be copied to CPU)") {
    const auto meta_tensor = torch::empty({4}, torch::TensorOptions().device(torch::kMeta));
    const std::string msg = save_error(path, {{"ok", torch::ones({8})}, {"m", meta_tensor}});
    CHECK_MESSAGE(has(msg, path), msg);
    CHECK_MESSAGE(has(msg, "tensor 'm'"), msg);
  }
  SUBCASE("rename fails (target is a non-empty directory)") {
    const std::string target = dir.file("occupied");
    fs::create_directory(target);
    write_raw(target + "/keep", "x");
    try {
      mnemo::io::write_file_atomic(target, std::string("data"));
      FAIL("write_file_atomic did not throw");
    } catch (const IoError& e) {
      CHECK_MESSAGE(has(e.what(), target), e.what());
      CHECK_MESSAGE(has(e.what(), "rename"), e.what());
    }
    CHECK(fs::is_directory(target));
    fs::remove_all(target);
  }
  CHECK(read_raw(path) == "old content");
  CHECK(dir.entries() == std::set<std::string>{"latest"});
}

TEST_CASE("atomic write: overwriting a safetensors file keeps it loadable") {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  save_safetensors(path, {{"a", torch::ones({3})}});
  save_safetensors(path, {{"b", torch::full({2}, 5.0)}});
  const auto loaded = load_safetensors(path);
  REQUIRE(loaded.size() == 1);
  CHECK(loaded[0].first == "b");
  CHECK(torch::equal(loaded[0].second, torch::full({2}, 5.0)));
  CHECK(dir.entries() == std::set<std::string>{"ckpt.safetensors"});
}

TEST_CASE("atomic write: helpers") {
  CHECK(mnemo::io::parent_directory("a/b/c.txt") == "a/b");
  CHECK(mnemo::io::parent_directory("/c.txt") == "/");
  CHECK(mnemo::io::parent_directory("c.txt") == ".");

  TempDir dir;
  CHECK_NOTHROW(mnemo::io::fsync_directory(dir.path));
  CHECK_THROWS_AS(mnemo::io::fsync_directory(dir.file("missing")), IoError);

  // write_all reports errno text: /dev/full fails every write with ENOSPC.
  if (std::FILE* full = std::fopen("/dev/full", "wb")) {
    const std::string big(1 << 20, 'x');
    try {
      mnemo::io::write_all(full, big.data(), big.size(), "/dev/full");
      FAIL("write_all to /dev/full did not throw");
    } catch (const IoError& e) {
      CHECK_MESSAGE(has(e.what(), "/dev/full"), e.what());
      CHECK_MESSAGE(has(e.what(), "No space left on device"), e.what());
    }
    std::fclose(full);
  }
}
