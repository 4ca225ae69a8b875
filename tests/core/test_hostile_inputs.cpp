// A hostile world, the C++ side (docs/reliability.md): JSON nested deeper than any file of ours,
// FIFOs where files belong, sparse files that declare gigabytes, models and thread counts the
// machine cannot hold, history records of the wrong type, an export over a user's file, a tour
// that reads outside its folder, a window left behind by a killed xvfb-run. Each case crashed,
// hung, grew without bound or overwrote before its fix.
#include "app/cli/owned_dir.h"
#include "core/io/atomic_file.h"
#include "core/io/json_file.h"
#include "core/io/paths.h"
#include "core/io/read_file.h"
#include "core/io/safetensors.h"
#include "core/models/factory.h"
#include "core/train/run_log.h"
#include "tests/support/cli_here.h"
#include "tests/support/helpers.h"
#include "tests/support/skip.h"
#ifdef MNEMO_WITH_GUI
#include "app/gui/model/tour.h"
#include "app/gui/shell/export.h"
#endif

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>

namespace {

using mnemo::test::run_cli;
using mnemo::test::run_cli_here;
using mnemo::test::run_shell;

std::string nested(int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']'); }

const std::string kBin = MNEMO_BINARY;
const std::string kSample = std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt";
const std::string kTinyConfig = std::string(MNEMO_SOURCE_DIR) + "/sessions/copy-rmt-tiny.json";

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("hostile: JSON nesting depth is measured without recursion and refused past 64 levels, naming the byte") {
  using mnemo::io::json_nesting_depth;
  CHECK(json_nesting_depth("") == 0);
  CHECK(json_nesting_depth("3") == 0);
  CHECK(json_nesting_depth("[]") == 1);
  CHECK(json_nesting_depth(R"({"a": [1, {"b": 2}], "c": {}})") == 3);
  CHECK(json_nesting_depth(R"("[[[[")") == 0);           // brackets inside a string
  CHECK(json_nesting_depth(R"(["\"[[", "\\", [2]])") == 2);  // an escaped quote does not end it
  CHECK(json_nesting_depth(nested(200000)) == mnemo::io::kMaxJsonDepth + 1);  // stops one past the limit

  CHECK(mnemo::io::parse_json(nested(64)).is_array());
  try {
    (void)mnemo::io::parse_json(nested(65));
    FAIL("65 levels parsed");
  } catch (const nlohmann::json::exception& e) {
    CHECK(std::string(e.what()).find("nesting deeper than 64 levels at byte 64") != std::string::npos);
  }
  CHECK_THROWS_AS((void)mnemo::io::parse_json(nested(200000)), mnemo::io::JsonTooDeep);  // no stack overflow
}

TEST_CASE("hostile: path_within - inside, the folder itself, '../' and a link out, a sibling with the same prefix") {
  const std::string d = mnemo::test::temp_dir("hostile-within");
  ::mkdir((d + "/in").c_str(), 0755);
  ::mkdir((d + "/inner").c_str(), 0755);
  mnemo::test::write_file(d + "/in/a.txt", "a\n");
  mnemo::test::write_file(d + "/secret.txt", "s\n");
  REQUIRE(::symlink((d + "/secret.txt").c_str(), (d + "/in/link.txt").c_str()) == 0);
  REQUIRE(::symlink(d.c_str(), (d + "/in/up").c_str()) == 0);
  using mnemo::io::path_within;
  CHECK(path_within(d + "/in/a.txt", d + "/in"));
  CHECK(path_within(d + "/in/a.txt", d + "/in/"));
  CHECK(path_within(d + "/in", d + "/in"));                   // the folder itself
  CHECK(path_within(d + "/in/not-yet/b.txt", d + "/in"));     // not there yet: taken as written
  CHECK_FALSE(path_within(d + "/in/../secret.txt", d + "/in"));
  CHECK_FALSE(path_within(d + "/in/link.txt", d + "/in"));    // a link to a file outside
  CHECK_FALSE(path_within(d + "/in/up/secret.txt", d + "/in")); // a link to a folder above
  CHECK_FALSE(path_within(d + "/inner/x.txt", d + "/in"));    // "/inner" is not inside "/in"
  CHECK_FALSE(path_within(d + "/in/a.txt", ""));
  CHECK_FALSE(path_within("", d + "/in"));
  CHECK(mnemo::io::parent_directory("a.txt") == ".");
  CHECK(mnemo::io::parent_directory("/a.txt") == "/");
  CHECK(mnemo::io::parent_directory("x/y/a.txt") == "x/y");
}

TEST_CASE("hostile: read_regular_file refuses a FIFO at once, a directory, a file over the limit - reads a file whole") {
  const std::string d = mnemo::test::temp_dir("hostile-read");
  std::string out;
  REQUIRE(::mkfifo((d + "/fifo").c_str(), 0644) == 0);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(mnemo::io::read_regular_file(d + "/fifo", &out, 100) == "is a FIFO (named pipe), not a file; pass the file itself");
  CHECK(seconds_since(t0) < 5.0);  // no writer ever comes: a blocking open would hang here
  CHECK(mnemo::io::read_regular_file(d, &out, 100) == "is a directory, not a file");
  CHECK(mnemo::io::read_regular_file(d + "/none", &out, 100) == mnemo::io::kNoSuchFile);
  mnemo::test::write_file(d + "/big", std::string(101, 'x'));
  CHECK(mnemo::io::read_regular_file(d + "/big", &out, 100) == "is 101 bytes, larger than the limit of 100 bytes");
  CHECK(mnemo::io::read_regular_file(d + "/big", &out, 101).empty());
  CHECK(out == std::string(101, 'x'));
}

TEST_CASE("hostile: a sparse safetensors file declaring 128 MiB is refused before anything is allocated") {
  const std::string d = mnemo::test::temp_dir("hostile-sparse");
  const std::string path = d + "/sparse.safetensors";
  const uint64_t n = 32u << 20;  // floats: 128 MiB
  std::string header = R"({"w":{"dtype":"F32","shape":[)" + std::to_string(n) + R"(],"data_offsets":[0,)" +
                       std::to_string(n * 4) + "]}}";
  while (header.size() % 8) header += ' ';
  {
    std::ofstream f(path, std::ios::binary);
    uint64_t len = header.size();
    for (int i = 0; i < 8; ++i) f.put(static_cast<char>((len >> (8 * i)) & 0xff));
    f << header;
  }
  REQUIRE(::truncate(path.c_str(), static_cast<off_t>(8 + header.size() + n * 4)) == 0);  // a hole: 4 KB on disk
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  if (static_cast<uint64_t>(st.st_blocks) * 512u >= n * 4 / 8) MNEMO_SKIP("this file system does not keep sparse files sparse");
  try {
    (void)mnemo::io::load_safetensors(path);
    FAIL("the sparse file loaded");
  } catch (const mnemo::io::SafetensorsError& e) {
    const std::string m = e.what();
    CHECK(m.find(path) != std::string::npos);
    CHECK(m.find("is a sparse file: its tensors declare 128.00 MiB") != std::string::npos);
    CHECK(m.find("cp --sparse=never") != std::string::npos);
  }
  // The advice works: a dense copy (of zeros) loads.
  REQUIRE(run_shell("cp --sparse=never '" + path + "' '" + d + "/dense.safetensors'").code == 0);
  CHECK(mnemo::io::load_safetensors(d + "/dense.safetensors").at(0).second.numel() == static_cast<int64_t>(n));
  ::unlink((d + "/dense.safetensors").c_str());
}

TEST_CASE("hostile: a model larger than the machine is refused with its estimate before it is built") {
  mnemo::ModelConfig cfg = mnemo::test::tiny_memformer();
  CHECK_NOTHROW(mnemo::check_model_fits_memory(cfg, 4));
  // The lower bound by hand: (layers + dec_layers) * (4 d^2 + 2 d ff).
  cfg.dim = 8;
  cfg.ff = 16;
  cfg.layers = 2;
  cfg.dec_layers = 1;
  CHECK(cfg.parameter_lower_bound() == doctest::Approx(3.0 * (4 * 64 + 2 * 8 * 16)));
  cfg = mnemo::test::tiny_memformer();
  cfg.dim = 65536;
  cfg.heads = 1;
  try {
    mnemo::check_model_fits_memory(cfg, 1);
    FAIL("a 65536-wide model fits?");
  } catch (const mnemo::ConfigError& e) {
    CHECK(e.field() == "dim");
    CHECK(std::string(e.what()).find("more than this machine's") != std::string::npos);
  }
}

TEST_CASE("hostile: history records of the wrong type or range are skipped with the Python reader's reasons") {
  using mnemo::record_problem;
  auto j = [](const char* s) { return nlohmann::json::parse(s); };
  CHECK(record_problem(j(R"({"type":"step","step":3,"loss":1.0})")).empty());
  CHECK(record_problem(j(R"({"type":"note","anything":"goes"})")).empty());  // not a stepped type
  CHECK(record_problem(j(R"({"type":"resume","step":-1})")) ==
        "field 'step' is -1, not a step number (an integer 0..9223372036854775807)");
  CHECK(record_problem(j(R"({"type":"step","step":"abc"})")) ==
        "field 'step' is \"abc\", not a step number (an integer 0..9223372036854775807)");
  CHECK(record_problem(j(R"({"type":"step","step":true})")).find("field 'step' is true") == 0);
  CHECK(record_problem(j(R"({"type":"step","step":1e300})")).find("field 'step' is 1e+300") == 0);
  CHECK(record_problem(j(R"({"type":"step","step":18446744073709551615})")).find("not a step number") != std::string::npos);
  CHECK(record_problem(j(R"({"type":"eval"})")) == "a eval record without a field 'step'");
  CHECK(record_problem(j(R"({"type":5})")) == "field 'type' is 5, not a string");
  CHECK(record_problem(j(R"({"type":"eval","step":2,"split":3})")) == "field 'split' is 3, not a string");
  CHECK(record_problem(j(R"({"type":"eval","step":2,"final":"yes"})")) == "field 'final' is \"yes\", not true or false");
  CHECK(record_problem(j("[1]")) == "the record is [1], not a JSON object");

  mnemo::RunLog log;
  for (int s = 1; s <= 3; ++s) mnemo::apply_run_record(log, {{"type", "step"}, {"step", s}, {"loss", 1.0}});
  REQUIRE(log.steps.size() == 3);
  CHECK_FALSE(mnemo::apply_run_record(log, j(R"({"type":"resume","step":-1})")));  // would drop the history
  CHECK(log.steps.size() == 3);
  mnemo::apply_run_record(log, j(R"({"type":"curriculum","step":2,"from":"x","to":4})"));
  const auto marks = log.curriculum_marks();  // a wrong-typed "from" reads as 0; it threw type_error
  REQUIRE(marks.size() == 1);
  CHECK(marks[0].from == 0);
  CHECK(marks[0].to == 4);
}

TEST_CASE("cli hostile: deep, FIFO and oversized inputs exit 2 at once naming the file - --threads is capped") {
  const std::string d = mnemo::test::temp_dir("hostile-cli");
  mnemo::test::write_file(d + "/deep.json", R"({"model":)" + nested(300000) + "}");
  auto r = run_shell("timeout 60 " + kBin + " train --config " + d + "/deep.json --out " + d + "/s1");
  CHECK(r.code == 2);
  CHECK(r.output.find("deep.json' is not valid JSON") != std::string::npos);
  CHECK(r.output.find("nesting deeper than 64 levels") != std::string::npos);
  CHECK_FALSE(mnemo::test::path_exists(d + "/s1"));

  REQUIRE(::mkfifo((d + "/fifo.json").c_str(), 0644) == 0);
  r = run_shell("timeout 60 " + kBin + " train --config " + d + "/fifo.json --out " + d + "/s2");
  CHECK(r.code == 2);  // 124 = it waited for a writer
  CHECK(r.output.find("fifo.json' is a FIFO (named pipe), not a file") != std::string::npos);
  r = run_shell("timeout 60 " + kBin + " step --doc " + kSample + " --checkpoint " + d + "/fifo.json --out " + d + "/s3");
  CHECK(r.code == 2);
  CHECK(r.output.find("is a FIFO (named pipe)") != std::string::npos);

  r = run_shell("timeout 60 " + kBin + " --threads 5000 info");
  CHECK(r.code == 2);
  CHECK(r.output.find("--threads 5000: this machine has") != std::string::npos);

  r = run_shell("timeout 120 " + kBin + " train --config " + kTinyConfig + " --set model.dim=65536 --set model.heads=1 --out " +
                d + "/s4");
  CHECK(r.code == 2);
  CHECK(r.output.find("more than this machine's") != std::string::npos);
  CHECK_FALSE(mnemo::test::path_exists(d + "/s4/checkpoints/latest"));
}

TEST_CASE("cli hostile: a FIFO in a session (manifest, metrics.log, latest) is named by export and train --resume, never waited on") {
  const std::string d = mnemo::test::temp_dir("hostile-fifo-session");
  const std::string s = d + "/run";
  auto r = run_cli("train --config " + kTinyConfig + " --steps 2 --out " + s);
  REQUIRE(r.code == 0);
  for (const char* rel : {"metrics.log", "checkpoints/latest", "manifest.json"}) {
    CAPTURE(rel);
    const std::string p = s + "/" + rel;
    const std::string keep = p + ".kept";
    REQUIRE(::rename(p.c_str(), keep.c_str()) == 0);
    REQUIRE(::mkfifo(p.c_str(), 0644) == 0);
    // CSV only: what is read (and refused) is the same for every format, and a PNG and SVG of
    // each figure cost about 7 CPU s once the session opens (the FIFO at checkpoints/latest).
    r = run_shell("timeout 60 " + kBin + " export --session " + s + " --format csv --out " + d + "/export-" +
                  std::to_string(p.size()));
    CHECK(r.code != 124);
    if (std::string(rel) != "checkpoints/latest") {
      CHECK(r.code == 2);
      CHECK(r.output.find("FIFO") != std::string::npos);
    }
    r = run_shell("timeout 120 " + kBin + " train --config " + kTinyConfig + " --steps 3 --resume --out " + s);
    CHECK(r.code != 124);
    if (std::string(rel) != "checkpoints/latest") CHECK(r.code == 2);
    ::unlink(p.c_str());
    REQUIRE(::rename(keep.c_str(), p.c_str()) == 0);
  }
}

TEST_CASE("cli hostile: export never overwrites a user's file in --out - it replaces only what an earlier export listed") {
  const std::string d = mnemo::test::temp_dir("hostile-export");
  const std::string s = d + "/run";
  REQUIRE(run_cli("train --config " + kTinyConfig + " --steps 2 --out " + s).code == 0);
  // The exports run in the test process (test::run_cli_here: the program's own run_cli): what is
  // checked is their exit status, messages and files; the FIFO case above starts the program.
  const std::string out = d + "/figures";
  ::mkdir(out.c_str(), 0755);
  mnemo::test::write_file(out + "/loss.csv", "my own numbers\n");
  auto r = run_cli_here("export --session " + s + " --figure loss --out " + out);
  CHECK(r.code == 2);
  CHECK(r.output.find("already holds 'loss.csv', which Mnemoscope did not write") != std::string::npos);
  CHECK(mnemo::test::read_file(out + "/loss.csv") == "my own numbers\n");
  CHECK_FALSE(mnemo::test::path_exists(out + "/loss.png"));  // nothing was written
  // Into a folder of its own, twice: the second run replaces the first's files.
  const std::string mine = d + "/mine";
  REQUIRE(run_cli_here("export --session " + s + " --figure loss --out " + mine).code == 0);
  CHECK(mnemo::test::path_exists(mine + "/loss.csv"));
  CHECK(mnemo::test::path_exists(mine + "/manifest.json"));
  r = run_cli_here("export --session " + s + " --figure loss --out " + mine);
  CHECK(r.code == 0);
  // A user's file beside them is left alone and does not stop the export.
  mnemo::test::write_file(mine + "/notes.txt", "mine\n");
  CHECK(run_cli_here("export --session " + s + " --figure loss --out " + mine).code == 0);
  CHECK(mnemo::test::read_file(mine + "/notes.txt") == "mine\n");
}

#ifdef MNEMO_WITH_GUI
TEST_CASE("hostile: a tour reads documents and weights only beside it or in the shipped assets") {
  const std::string zoo = std::string(MNEMO_SOURCE_DIR) + "/assets/models";
  const std::string d = mnemo::test::temp_dir("hostile-tour");
  const std::string tour = d + "/t.json";
  mnemo::test::write_file(d + "/mine.txt", "a document beside the tour\n");
  auto text = [](const std::string& doc) {
    return R"({"format": "mnemoscope-tour", "version": 1, "title": "t", "stops": [{"model": "memformer-copy",
      "document": ")" + doc + R"(", "panels": ["document"], "caption": "c"}]})";
  };
  for (const char* bad : {"../../../../etc/passwd", "/etc/passwd"}) {
    CAPTURE(bad);
    try {
      (void)mnemo::app::parse_tour(text(bad), tour, zoo);
      FAIL("the tour read " << bad);
    } catch (const mnemo::app::TourError& e) {
      CHECK(std::string(e.what()).find("is outside the tour's folder") != std::string::npos);
      CHECK(std::string(e.what()).find("mnemoscope gui --doc PATH") != std::string::npos);
    }
  }
  // A link beside the tour that leads out is followed to where it leads, and refused.
  REQUIRE(::symlink("/etc/passwd", (d + "/link.txt").c_str()) == 0);
  CHECK_THROWS_AS((void)mnemo::app::parse_tour(text("link.txt"), tour, zoo), mnemo::app::TourError);
  CHECK(mnemo::app::parse_tour(text("mine.txt"), tour, zoo).stops.at(0).document == d + "/mine.txt");
  CHECK_NOTHROW((void)mnemo::app::parse_tour(text(std::string(MNEMO_SOURCE_DIR) + "/assets/tours/rmt-copy.txt"), tour, zoo));
}

TEST_CASE("hostile: gui ends when the xvfb-run it runs under is killed") {
  if (run_shell("command -v xvfb-run && command -v Xvfb").code != 0) MNEMO_SKIP("xvfb-run is not installed");
  const std::string script =
      "xvfb-run -a -s '-screen 0 800x600x24' " + kBin + " gui --doc " + kSample +
      " --random >/dev/null 2>&1 & X=$!; G=; for i in $(seq 300); do G=$(pgrep -P $X -x mnemoscope); "
      "[ -n \"$G\" ] && break; sleep 0.1; done; [ -z \"$G\" ] && { echo NOGUI; kill $X; exit 3; }; "
      "V=$(pgrep -P $X Xvfb); sleep 2; kill -KILL $X; "
      "for i in $(seq 150); do kill -0 $G 2>/dev/null || { echo GONE; [ -n \"$V\" ] && kill $V; exit 0; }; sleep 0.1; done; "
      "echo ALIVE; kill -KILL $G; [ -n \"$V\" ] && kill $V; exit 1";
  const auto r = run_shell("bash -c \"" + [&] {
    std::string e;
    for (char c : script) {
      if (c == '"' || c == '$' || c == '\\' || c == '`') e += '\\';
      e += c;
    }
    return e;
  }() + "\"");
  if (r.output.find("NOGUI") != std::string::npos) MNEMO_SKIP("the gui did not start under xvfb-run here: " + r.output);
  CAPTURE(r.output);
  CHECK(r.output.find("GONE") != std::string::npos);
  CHECK(r.code == 0);
}
#endif

TEST_CASE("cli: a mistyped subcommand or flag gets a 'did you mean' with the nearest known name") {
  auto r = run_cli_here("eval --chekpoint x");
  CHECK(r.code == 2);
  CHECK(r.output.find("did you mean --checkpoint (not --chekpoint)?") != std::string::npos);
  r = run_cli_here("stpe --doc x");
  CHECK(r.code == 2);
  CHECK(r.output.find("did you mean 'step'?") != std::string::npos);
  r = run_cli_here("step --doc x --out y --zzzzzz");  // nothing near it: no guess
  CHECK(r.code == 2);
  CHECK(r.output.find("did you mean") == std::string::npos);
}

#ifdef MNEMO_WITH_GUI
TEST_CASE("gui: Ctrl+E's default folder for a shipped document is in the user's home, not inside the program's assets") {
  auto view_of = [](const std::string& path) {
    auto info = std::make_shared<mnemo::app::ViewSource>();
    info->doc = std::make_shared<const mnemo::Document>(mnemo::make_document("abc", path));
    mnemo::app::PublishedView v;
    v.info = info;
    return v;
  };
  const std::string assets = std::string(MNEMO_SOURCE_DIR) + "/assets";
  const char* home = std::getenv("HOME");
  REQUIRE(home != nullptr);
  CHECK(mnemo::app::default_export_dir(view_of(assets + "/models/memformer-copy.txt"), assets) ==
        std::string(home) + "/mnemoscope-export");
  CHECK(mnemo::app::default_export_dir(view_of("/tmp/notes/a.txt"), assets) == "/tmp/notes/mnemoscope-export");
  CHECK(mnemo::app::default_export_dir(view_of("a.txt"), assets) == "./mnemoscope-export");
}
#endif
