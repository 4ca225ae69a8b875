// `mnemoscope html` (app/commands/html.cpp, app/figures/html_viewer.h): one self-contained file
// whose data are the traces' numbers. The expected values come from an independent run of
// `mnemoscope step` over the same document and model, read back from its trace.safetensors
// files with the documented placement of lm.loss (docs/formats.md#trace-keys).
#include "app/figures/html_viewer.h"
#include "core/io/safetensors.h"
#include "tests/support/cli_here.h"
#include "tests/support/helpers.h"
#include "tests/support/skip.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstring>

using namespace mnemo;
using namespace mnemo::app;
using nlohmann::json;

namespace {

const std::string kHtmlText =
    "Call me Ishmael. Some years ago - never mind how long precisely - having little or no money in my purse, and "
    "nothing particular to interest me on shore, I thought I would sail about a little and see the watery part of the "
    "world. It is a way I have of driving off the spleen and regulating the circulation.\n";

struct Unpacked {
  json meta;
  std::string bin;
};

// The page's data block: base64 -> zlib -> [u32 json length | json | arrays].
Unpacked unpack(const std::string& page) {
  const std::string open = "<script id=\"mnemo-data\" type=\"application/octet-stream\">";
  const size_t a = page.find(open);
  REQUIRE(a != std::string::npos);
  const size_t b = page.find("</script>", a);
  REQUIRE(b != std::string::npos);
  const std::string raw = zlib_inflate(base64_decode(page.substr(a + open.size(), b - a - open.size())));
  REQUIRE(raw.size() > 4);
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<uint32_t>(static_cast<uint8_t>(raw[i])) << (8 * i);
  Unpacked u;
  u.meta = json::parse(raw.substr(4, n));
  u.bin = raw.substr(4 + n);
  return u;
}

// An f32 / i32 array of the buffer (four byte planes, little-endian).
std::vector<float> f32(const Unpacked& u, const json& ref) {
  REQUIRE(ref.at("t") == "f32");
  const size_t o = ref.at("o"), n = ref.at("n");
  REQUIRE(o + 4 * n <= u.bin.size());
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits = 0;
    for (size_t b = 0; b < 4; ++b) bits |= static_cast<uint32_t>(static_cast<uint8_t>(u.bin[o + b * n + i])) << (8 * b);
    std::memcpy(&out[i], &bits, 4);
  }
  return out;
}

std::map<std::string, torch::Tensor> trace_of(const std::string& dir, int64_t seg) {
  char name[32];
  std::snprintf(name, sizeof name, "/step-%04lld/trace.safetensors", static_cast<long long>(seg));
  std::map<std::string, torch::Tensor> out;
  for (auto& [k, v] : io::load_safetensors(dir + name)) out[k] = v;
  return out;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

// Runs `html` (with `html_flags`) and `step --benefit` (with `model_flags`, the same model) over
// the text; returns the unpacked page.
Unpacked html_and_step(const std::string& html_flags, const std::string& model_flags, const std::string& tag,
                       std::string* step_dir, std::string* page) {
  const std::string dir = test::temp_dir("html-" + tag);
  const std::string doc = dir + "/doc.txt", out = dir + "/doc.html";
  test::write_file(doc, kHtmlText);
  const auto r = test::run_cli("html --doc " + doc + " " + html_flags + " --from 0 --to 3 --out " + out);
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("wrote " + out) != std::string::npos);
  *page = test::read_file(out);
  *step_dir = dir + "/step";
  const auto s = test::run_cli("step --doc " + doc + " " + model_flags + " --from 0 --to 3 --benefit --format csv --out " + *step_dir);
  INFO(s.output);
  REQUIRE(s.code == 0);
  return unpack(*page);
}

// Every segment's losses (with the memory, reset and zeroed) equal lm.loss* of its trace, bit
// for bit, placed as docs/formats.md says: Memformer's row j is token (s+1)L + j, the others'
// token sL + j + 1.
void check_losses(const Unpacked& u, const std::string& step_dir, bool next_segment) {
  const int64_t L = u.meta.at("segment_len");
  REQUIRE(u.meta.at("segments").size() == 4);
  for (const auto& s : u.meta.at("segments")) {
    const int64_t seg = s.at("segment");
    auto tr = trace_of(step_dir, seg);
    const std::pair<const char*, const char*> keys[] = {
        {"losses", "lm.loss"}, {"losses_reset", "lm.loss_memory_reset"}, {"losses_zeroed", "lm.loss_memory_zeroed"}};
    for (const auto& [field, key] : keys) {
      CAPTURE(seg);
      CAPTURE(field);
      REQUIRE(tr.count(key));
      REQUIRE(s.at(field).is_object());
      const int64_t first = s.at(field).at("first");
      CHECK(first == (next_segment ? (seg + 1) * L : seg * L + 1));
      const auto got = f32(u, s.at(field).at("values"));
      auto want = tr.at(key)[0].contiguous();
      REQUIRE(static_cast<int64_t>(got.size()) <= want.size(0));
      REQUIRE(!got.empty());
      for (size_t j = 0; j < got.size(); ++j) CHECK(same_bits(got[j], want[static_cast<int64_t>(j)].item<float>()));
    }
  }
}

void check_self_contained(const std::string& page) {
  for (const char* bad : {"http://", "https://", " src=", " href=", "@import", "url(", "//cdn", "<link", "<iframe"})
    CHECK_MESSAGE(page.find(bad) == std::string::npos, "the page holds '" << bad << "'");
  CHECK(page.find(kViewerDataPlaceholder) == std::string::npos);
  CHECK(page.find(kViewerTitlePlaceholder) == std::string::npos);
}

}  // namespace

TEST_CASE("html: the default Memformer's page is self-contained and holds the trace's numbers") {
  if (!test::path_exists(std::string(MNEMO_SOURCE_DIR) + "/assets/models/memformer-general.safetensors")) {
    MNEMO_SKIP("assets/models/memformer-general.safetensors is not in this checkout (the zoo)");
    return;
  }
  std::string step_dir, page;
  // No model flag: the default text model, as `step` opens it.
  const Unpacked u = html_and_step("", "", "memformer", &step_dir, &page);
  check_self_contained(page);
  CHECK(u.meta.at("format") == "mnemoscope-viewer");
  CHECK(u.meta.at("model") == "memformer");
  check_losses(u, step_dir, true);
  // Writer attention: block 1 + h is head h over [self | real tokens | cls], the trace's own values.
  for (const auto& s : u.meta.at("segments")) {
    auto tr = trace_of(step_dir, s.at("segment"));
    const auto& w = s.at("writer");
    REQUIRE(w.is_object());
    const int slots = w.at("slots"), cols = w.at("cols"), heads = w.at("heads"), n_cls = w.at("n_cls");
    const auto v = f32(u, w.at("values"));
    REQUIRE(v.size() == static_cast<size_t>((heads + 1) * slots * cols));
    auto wa = tr.at("memformer.writer_attn")[0];  // [H, k, 1+L+C]
    const int64_t L = tr.at("input.tokens").size(1), len = s.at("length");
    for (int h = 0; h < heads; ++h)
      for (int r = 0; r < slots; ++r)
        for (int c = 0; c < cols; ++c) {
          const int64_t tc = c <= len ? c : 1 + L + (c - 1 - len);  // padding columns are left out
          CHECK(same_bits(v[static_cast<size_t>(((h + 1) * slots + r) * cols + c)], wa[h][r][tc].item<float>()));
        }
    CHECK(cols == 1 + len + n_cls);
    // Slot types: the writer's self mass classified at the default thresholds (0.9 / 0.1).
    const auto self = f32(u, w.at("self_mass"));
    const size_t o = w.at("slot_types").at("o");
    for (int r = 0; r < slots; ++r) {
      const int type = static_cast<uint8_t>(u.bin[o + static_cast<size_t>(r)]);
      CHECK(type == (self[static_cast<size_t>(r)] >= 0.9f ? 0 : self[static_cast<size_t>(r)] <= 0.1f ? 2 : 1));
    }
    // Every token of the segment has its memory reads, each a row over the slots summing to <= 1.
    CHECK(s.at("reads").size() >= static_cast<size_t>(len));
    for (const auto& r : s.at("reads")) {
      CHECK(r.at("top").size() == 3);
      double sum = 0;
      for (const auto& m : r.at("top")) sum += m.at("weight").get<double>();
      CHECK(sum <= 1.0 + 1e-5);
    }
  }
  // The document bytes are the file's.
  const size_t o = u.meta.at("doc").at("o"), n = u.meta.at("doc").at("n");
  CHECK(u.meta.at("doc_first") == 0);
  CHECK(u.bin.substr(o, n) == kHtmlText.substr(0, n));
}

TEST_CASE("html: RMT, Transformer-XL and MTN pages hold their attention maps as traced") {
  struct Family {
    std::string zoo, flags, tag, source;  // zoo: a zoo model (html --zoo NAME, step --checkpoint its file)
  };
  const std::string zoo = std::string(MNEMO_SOURCE_DIR) + "/assets/models/";
  for (const Family& f : {Family{"rmt-general", "", "rmt", "rmt.attn."}, Family{"trxl-text", "", "trxl", "trxl.attn."},
                          Family{"", "--random --model mtn --segment-len 16 --slots 8", "mtn", "mtn.joint_attn."}}) {
    CAPTURE(f.tag);
    if (!f.zoo.empty() && !test::path_exists(zoo + f.zoo + ".safetensors")) {
      MNEMO_SKIP("the zoo model " + f.zoo + " is not in this checkout");
      return;
    }
    std::string step_dir, page;
    const Unpacked u = f.zoo.empty() ? html_and_step(f.flags, f.flags, f.tag, &step_dir, &page)
                                     : html_and_step("--zoo " + f.zoo, "--checkpoint " + zoo + f.zoo + ".safetensors",
                                                     f.tag, &step_dir, &page);
    check_self_contained(page);
    check_losses(u, step_dir, false);
    // A full segment's last layer, head 0, is the traced map, rows and columns in the trace's
    // order: segment 0 (Transformer-XL's first segment has no cache columns), for MTN segment 2,
    // whose memory is full (empty entries are left out of the drawn map).
    const int64_t seg = f.tag == "mtn" ? 2 : 0;
    const auto& s = u.meta.at("segments").at(static_cast<size_t>(seg));
    auto tr = trace_of(step_dir, seg);
    const auto& a = s.at("attention").at(0);
    CHECK(a.at("source") == f.source);
    const int li = static_cast<int>(a.at("layers").size()) - 1;
    const int layer = a.at("layers").at(li), heads = a.at("heads"), rows = a.at("rows"), cols = a.at("cols");
    auto t = tr.at(f.source + std::to_string(layer))[0][0];  // head 0
    REQUIRE(t.size(0) == rows);
    REQUIRE(t.size(1) == cols);
    const auto v = f32(u, a.at("values"));
    const size_t off = static_cast<size_t>((li * (heads + 1) + 1) * rows * cols);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) CHECK(same_bits(v[off + static_cast<size_t>(r * cols + c)], t[r][c].item<float>()));
    if (f.tag == "mtn") {
      CHECK(s.at("mtn").is_object());
      CHECK(s.at("mtn").at("entries").size() == 8);
    }
  }
}

TEST_CASE("html: 100 segments of the default model fit in 5 MB, and --mean-only keeps the mean maps exactly") {
  const std::string zoo = std::string(MNEMO_SOURCE_DIR) + "/assets/models/";
  if (!test::path_exists(zoo + "memformer-general.safetensors") || !test::path_exists(zoo + "rmt-general.safetensors")) {
    MNEMO_SKIP("assets/models/memformer-general.safetensors or rmt-general.safetensors is not in this checkout (the zoo)");
    return;
  }
  const std::string dir = test::temp_dir("html-size");
  const std::string doc = std::string(MNEMO_SOURCE_DIR) + "/assets/texts/moby-dick-chapter-10.txt";
  auto r = test::run_cli("html --doc " + doc + " --from 0 --to 99 --out " + dir + "/big.html");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const std::string page = test::read_file(dir + "/big.html");
  CHECK(unpack(page).meta.at("segments").size() == 100);
  CHECK(page.size() <= 5'000'000);  // the bound docs/gui.md#html-export states
  // RMT: every head of every layer, or only their mean (the same floats).
  r = test::run_cli("html --doc " + doc + " --zoo rmt-general --from 0 --to 9 --out " + dir + "/rmt.html");
  REQUIRE(r.code == 0);
  r = test::run_cli("html --doc " + doc + " --zoo rmt-general --from 0 --to 9 --mean-only --out " + dir + "/rmt-mean.html");
  REQUIRE(r.code == 0);
  const std::string full_page = test::read_file(dir + "/rmt.html"), mean_page = test::read_file(dir + "/rmt-mean.html");
  CHECK(mean_page.size() * 2 < full_page.size());
  const Unpacked full = unpack(full_page), mean = unpack(mean_page);
  for (size_t i = 0; i < 10; ++i) {
    const auto& fa = full.meta.at("segments").at(i).at("attention").at(0);
    const auto& ma = mean.meta.at("segments").at(i).at("attention").at(0);
    CHECK(ma.at("heads") == 0);
    CHECK(ma.at("heads_traced") == fa.at("heads"));
    const size_t map = static_cast<size_t>(fa.at("rows").get<int>() * fa.at("cols").get<int>());
    const size_t nb = fa.at("heads").get<size_t>() + 1, layers = fa.at("layers").size();
    const auto fv = f32(full, fa.at("values")), mv = f32(mean, ma.at("values"));
    REQUIRE(mv.size() == layers * map);
    for (size_t l = 0; l < layers; ++l)
      for (size_t k = 0; k < map; k += 7) CHECK(same_bits(mv[l * map + k], fv[l * nb * map + k]));
  }
}

TEST_CASE("html: bad --out is refused before anything is written, and nothing is overwritten") {
  const std::string dir = test::temp_dir("html-refuse");
  const std::string doc = dir + "/doc.txt";
  test::write_file(doc, kHtmlText);
  // The refusals run in the test process (test::run_cli_here: the program's own run_cli; their
  // exit status, message and files are what is checked); the --force write starts the program.
  auto r = test::run_cli_here("html --doc " + doc + " --random --out " + dir + "/doc.png");
  CHECK(r.code == 2);
  CHECK(r.output.find("must name an .html file") != std::string::npos);
  test::write_file(dir + "/mine.html", "my notes");
  r = test::run_cli_here("html --doc " + doc + " --random --out " + dir + "/mine.html");
  CHECK(r.code == 2);
  CHECK(r.output.find("exists; give another name, or --force") != std::string::npos);
  CHECK(test::read_file(dir + "/mine.html") == "my notes");
  r = test::run_cli_here("html --doc " + doc + " --random --from 99 --out " + dir + "/x.html");
  CHECK(r.code == 2);
  CHECK(r.output.find("--from 99 is out of range") != std::string::npos);
  CHECK(!test::path_exists(dir + "/x.html"));
  r = test::run_cli_here("html --doc " + doc + " --random --out " + dir + "/no-such-folder/x.html");
  CHECK(r.code == 2);
  CHECK(r.output.find("the folder '" + dir + "/no-such-folder' does not exist") != std::string::npos);
  r = test::run_cli_here("html --doc " + doc + " --zoo no-such-model --out " + dir + "/y.html");
  CHECK(r.code == 2);
  CHECK(r.output.find("--zoo 'no-such-model'") != std::string::npos);
  r = test::run_cli("html --doc " + doc + " --random --to 1 --force --out " + dir + "/mine.html");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(test::read_file(dir + "/mine.html").find("mnemo-data") != std::string::npos);
}

TEST_CASE("html viewer: base64 and zlib round-trip, and the template holds each placeholder once") {
  std::string bytes;
  for (int i = 0; i < 1000; ++i) bytes.push_back(static_cast<char>((i * 37) & 0xff));
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{999}, size_t{1000}}) {
    const std::string s = bytes.substr(0, n);
    CHECK(base64_decode(base64_encode(s)) == s);
    CHECK(zlib_inflate(zlib_deflate(s)) == s);
  }
  CHECK(base64_encode("Man") == "TWFu");
  CHECK(base64_encode("Ma") == "TWE=");
  CHECK_THROWS_WITH_AS(zlib_inflate("not zlib"), doctest::Contains("corrupt"), std::runtime_error);
  const std::string& t = viewer_template();
  for (const char* p : {kViewerDataPlaceholder, kViewerTitlePlaceholder}) {
    const size_t at = t.find(p);
    REQUIRE(at != std::string::npos);
    CHECK(t.find(p, at + 1) == std::string::npos);
  }
  // The program's copy is the Python package's file, byte for byte.
  CHECK(t == test::read_file(std::string(MNEMO_SOURCE_DIR) + "/python/mnemoscope/viewer/viewer.html"));
}
