// core/data: byte tokenizer, documents, segmenter.
#include "core/data/document.h"
#include "core/data/segmenter.h"
#include "core/data/tokenizer.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

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

TEST_CASE("load_document: missing, directory and empty files are rejected; binary is allowed") {
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
