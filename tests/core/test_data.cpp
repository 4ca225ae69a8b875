// core/data: byte tokenizer, documents, segmenter.
#include "core/data/document.h"
#include "core/data/segmenter.h"
#include "core/data/tokenizer.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

using namespace mnemo;

TEST_CASE("byte tokenizer maps every byte, UTF-8 or not, to one token and back") {
  std::string bytes = "A\xe2\x80\x94z";  // 'A', an em dash (3 bytes), 'z'
  bytes.push_back('\0');
  bytes.push_back('\xff');
  std::vector<std::pair<int64_t, int64_t>> off;
  auto ids = ByteTokenizer::encode(bytes, &off);
  REQUIRE(ids.size() == bytes.size());
  CHECK(ids[0] == 65);
  CHECK(ids[1] == 0xe2);
  CHECK(ids[5] == 0);
  CHECK(ids[6] == 255);
  for (size_t i = 0; i < ids.size(); ++i) {
    CHECK(off[i].first == static_cast<int64_t>(i));
    CHECK(off[i].second == static_cast<int64_t>(i + 1));
  }
  CHECK(ByteTokenizer::decode(ids) == bytes);
  CHECK(ByteTokenizer::decode({65, ByteTokenizer::kPad, 66}) == "AB");
  CHECK(std::string(ByteTokenizer::special_name(ByteTokenizer::kPad)) == "<pad>");
}

TEST_CASE("segmenter covers every byte exactly once and pads the last segment") {
  for (int64_t n : {1, 7, 8, 9, 64, 100}) {
    std::string text;
    for (int64_t i = 0; i < n; ++i) text.push_back(static_cast<char>('a' + i % 26));
    Document doc = make_document(text);
    for (int64_t len : {1, 3, 8, 200}) {
      Segmenter seg(&doc, len);
      CHECK(seg.num_segments() == (n + len - 1) / len);
      std::vector<int> seen(static_cast<size_t>(n), 0);
      for (int64_t s = 0; s < seg.num_segments(); ++s) {
        Segment g = seg.segment(s);
        CHECK(g.tokens.sizes() == torch::IntArrayRef({1, len}));
        for (int64_t j = 0; j < len; ++j) {
          const bool valid = g.valid[0][j].item<bool>();
          const int64_t tok = g.tokens[0][j].item<int64_t>();
          if (!valid) {
            CHECK(tok == ByteTokenizer::kPad);
            CHECK(g.offsets[0][j][0].item<int64_t>() == -1);
            CHECK(j >= g.length);
            continue;
          }
          const int64_t b = g.offsets[0][j][0].item<int64_t>();
          REQUIRE(b >= 0);
          REQUIRE(b < n);
          seen[static_cast<size_t>(b)]++;
          CHECK(tok == static_cast<unsigned char>(text[static_cast<size_t>(b)]));
        }
      }
      for (int64_t i = 0; i < n; ++i) CHECK(seen[static_cast<size_t>(i)] == 1);
    }
  }
}

TEST_CASE("segmenter rejects segment lengths 0 and above 65536") {
  Document doc = make_document("hello");
  CHECK_THROWS_WITH_AS(Segmenter(&doc, 0), doctest::Contains("segment length must be in 1..65536"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(Segmenter(&doc, 65537), doctest::Contains("got 65537"), std::invalid_argument);
  Segmenter ok(&doc, 65536);
  CHECK(ok.num_segments() == 1);
  CHECK_THROWS_AS(ok.segment(1), std::out_of_range);
}

TEST_CASE("load_document: missing, directory and empty files are rejected - binary is allowed") {
  const std::string dir = test::temp_dir("doc");
  CHECK_THROWS_WITH_AS(load_document(dir + "/nope.txt"), doctest::Contains("cannot be opened"), DocumentError);
  CHECK_THROWS_WITH_AS(load_document(dir), doctest::Contains("is a directory"), DocumentError);
  { std::ofstream(dir + "/empty.txt"); }
  CHECK_THROWS_WITH_AS(load_document(dir + "/empty.txt"), doctest::Contains("is empty"), DocumentError);
  {
    std::ofstream f(dir + "/bin.dat", std::ios::binary);
    const char b[] = {'\x00', '\x01', '\xfe', '\xff', '\x80'};
    f.write(b, sizeof b);
  }
  Document d = load_document(dir + "/bin.dat");
  CHECK(d.size() == 5);
  CHECK(d.looks_binary());
  CHECK(d.id(3) == 255);
  CHECK_FALSE(make_document("plain \xc3\xa9t\xc3\xa9").looks_binary());
}

TEST_CASE("document: computed token ids and byte ranges equal the tokenizer's, for every byte value") {
  std::string bytes;
  for (int i = 0; i < 3 * 256; ++i) bytes.push_back(static_cast<char>((i * 97 + 13) & 0xff));
  const Document d = make_document(bytes);
  std::vector<std::pair<int64_t, int64_t>> off;
  const auto ids = ByteTokenizer::encode(bytes, &off);
  REQUIRE(d.size() == static_cast<int64_t>(ids.size()));
  CHECK(d.ids() == ids);
  for (int64_t t = 0; t < d.size(); ++t) {
    CHECK(d.id(t) == ids[static_cast<size_t>(t)]);
    CHECK(d.offset(t) == off[static_cast<size_t>(t)]);
  }
  CHECK(d.ids(10, 13) == std::vector<int64_t>(ids.begin() + 10, ids.begin() + 13));
  CHECK(d.ids(760, -1).size() == 8);
  // Segments built on demand carry the same ids and ranges.
  Segmenter seg(&d, 100);
  const Segment s = seg.segment(7);  // tokens 700..767, padded to 100
  CHECK(s.length == 68);
  CHECK(s.tokens[0][0].item<int64_t>() == ids[700]);
  CHECK(s.offsets[0][67][1].item<int64_t>() == 768);
  CHECK(s.offsets[0][68][0].item<int64_t>() == -1);
}

namespace {
// Resident bytes of the mapping that starts at `p` (/proc/self/smaps), -1 when not found.
int64_t resident_bytes_of_mapping(const void* p) {
  char start[32];
  std::snprintf(start, sizeof start, "%lx-", static_cast<unsigned long>(reinterpret_cast<uintptr_t>(p)));
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind(start, 0) == 0) inside = true;
    else if (inside && line.rfind("Rss:", 0) == 0) return std::stoll(line.substr(4)) * 1024;
  }
  return -1;
}
std::string mapped_test_file(const std::string& dir, const std::string& name, const std::string& bytes) {
  const std::string p = dir + "/" + name;
  test::write_file(p, bytes);
  return p;
}
}  // namespace

TEST_CASE("load_document maps a file of kMapMinBytes or more and reads a smaller one - both give the file's bytes") {
  const std::string dir = test::temp_dir("doc-map");
  std::string bytes(static_cast<size_t>(kMapMinBytes), '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 131 + 7) & 0xff);
  const Document at = load_document(mapped_test_file(dir, "at.bin", bytes));
  const Document below = load_document(mapped_test_file(dir, "below.bin", bytes.substr(1)));
  CHECK(at.mapped());
  CHECK_FALSE(below.mapped());
  CHECK(at.bytes == bytes);
  CHECK(below.bytes == std::string_view(bytes).substr(1));
  CHECK(at.id(kMapMinBytes - 1) == static_cast<unsigned char>(bytes.back()));
  CHECK(at.looks_binary());  // the pattern holds NUL and invalid UTF-8
  CHECK_FALSE(at.changed_on_disk());
  CHECK_FALSE(below.changed_on_disk());
  // Copies share the mapping; it lives as long as any of them.
  Document copy;
  { copy = load_document(dir + "/at.bin"); }
  const Document again = copy;
  copy = Document();
  CHECK(again.bytes == bytes);
}

TEST_CASE("mapped document: whole-document passes leave at most one chunk resident, and UTF-8 across chunks is still text") {
  const std::string dir = test::temp_dir("doc-resident");
  // 24 MiB of lines of text, with a 3-byte character (an em dash) across the first chunk boundary.
  std::string text;
  while (text.size() < (size_t{24} << 20)) text += "call me ishmael. some years ago, never mind how long\n";
  text.replace(static_cast<size_t>(Document::kScanChunk) - 1, 3, "\xe2\x80\x94");
  const Document d = load_document(mapped_test_file(dir, "text.txt", text));
  REQUIRE(d.mapped());
  int64_t sum = 0;
  for (int64_t t = 0; t < d.size(); t += 4096) sum += d.id(t);  // touch every page
  CHECK(sum > 0);
  const int64_t touched = resident_bytes_of_mapping(d.bytes.data());
  CHECK(touched >= (int64_t{20} << 20));
  CHECK_FALSE(d.looks_binary());
  int64_t lines = 0;
  d.scan([&](std::string_view chunk, int64_t) { lines += static_cast<int64_t>(std::count(chunk.begin(), chunk.end(), '\n')); });
  CHECK(lines == static_cast<int64_t>(std::count(text.begin(), text.end(), '\n')));
  const int64_t after = resident_bytes_of_mapping(d.bytes.data());
  CHECK(after >= 0);
  CHECK(after <= Document::kScanChunk + 8192);
  CHECK(d.bytes == text);  // released pages read back unchanged
  // A NUL in the last byte is found past every chunk.
  std::string with_nul = text;
  with_nul.back() = '\0';
  CHECK(load_document(mapped_test_file(dir, "nul.txt", with_nul)).looks_binary());
}

TEST_CASE("mapped document: a file cut short while open reads 0 past its new end and says it changed - other changes too") {
  const std::string dir = test::temp_dir("doc-trunc");
  const std::string p = mapped_test_file(dir, "doc.txt", std::string(size_t{2} << 20, 'a'));
  const Document d = load_document(p);
  REQUIRE(d.mapped());
  CHECK_FALSE(d.changed_on_disk());
  REQUIRE(::truncate(p.c_str(), int64_t{1} << 20) == 0);
  CHECK(d.id((int64_t{3} << 19)) == 0);  // would be SIGBUS without MappedFile's handler
  CHECK(d.id(d.size() - 1) == 0);
  CHECK(d.id(100) == 'a');  // before the cut: the file's bytes
  CHECK(d.changed_on_disk());
  CHECK(d.ids(d.size() - 3).size() == 3);

  // Written in place (same size, new time): changed. Replaced by another file: the mapping keeps
  // the old one, so nothing changed for this document.
  const std::string q = mapped_test_file(dir, "doc2.txt", std::string(size_t{2} << 20, 'b'));
  const Document e = load_document(q);
  const std::string r = mapped_test_file(dir, "new.txt", std::string(size_t{2} << 20, 'c'));
  REQUIRE(::rename(r.c_str(), q.c_str()) == 0);
  CHECK_FALSE(e.changed_on_disk());
  CHECK(e.id(5) == 'b');
  const Document f = load_document(q);
  struct timespec times[2] = {{0, UTIME_OMIT}, {12345, 0}};
  REQUIRE(::utimensat(AT_FDCWD, q.c_str(), times, 0) == 0);
  CHECK(f.changed_on_disk());
}

TEST_CASE("mapped document: a SIGBUS outside any document mapping still ends the process") {
  const std::string dir = test::temp_dir("doc-sigbus");
  const std::string p = mapped_test_file(dir, "doc.txt", std::string(size_t{2} << 20, 'a'));
  const Document d = load_document(p);  // installs the handler
  REQUIRE(d.mapped());
  const std::string other = mapped_test_file(dir, "other.bin", std::string(size_t{1} << 16, 'x'));
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const int fd = ::open(other.c_str(), O_RDWR);
    void* m = ::mmap(nullptr, size_t{1} << 16, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED || ::ftruncate(fd, 0) != 0) ::_exit(3);
    volatile char c = static_cast<const char*>(m)[8192];  // past the end: SIGBUS
    (void)c;
    ::_exit(0);
  }
  int st = 0;
  REQUIRE(::waitpid(child, &st, 0) == child);
  CHECK(WIFSIGNALED(st));
  CHECK(WTERMSIG(st) == SIGBUS);
  CHECK(d.id(0) == 'a');
}
