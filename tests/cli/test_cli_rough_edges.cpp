// The rough edges a new user hit on the command line, each tried again as they were met:
// step into a folder of an earlier run, messages that named the wrong flag or printed
// "0.000000", an --out that cannot be created, export --figure's help, flags that do not
// apply to gui --session, and --steps' three meanings.
#include "app/bench/stats.h"
#include "app/cli/format.h"
#include "app/cli/owned_dir.h"
#include "core/nn/torch_compat.h"
#include "core/train/checkpoint.h"
#include "tests/support/cli_here.h"
#include "tests/support/helpers.h"
#include "tests/support/skip.h"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <map>
#include <fstream>
#include <sstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace {
using mnemo::test::run_cli;
using mnemo::test::run_cli_here;  // bad input and refusals: messages and exit codes, without a process each
const std::string& kTinyModelFlags = mnemo::test::kTinyStepFlags;
const std::string kSampleDocument = std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt";
}  // namespace

TEST_CASE("cli: step refuses a non-empty --out (naming it) unless --force, which clears it first") {
  const std::string dir = mnemo::test::temp_dir("step-out");
  const std::string out = dir + "/out";
  // An earlier run of another document: four steps.
  auto r = run_cli("step --doc " + kSampleDocument + " --out " + out + kTinyModelFlags + " --from 0 --to 3 --format csv");
  REQUIRE(r.code == 0);
  REQUIRE(mnemo::test::path_exists(out + "/step-0003"));
  const std::string manifest = mnemo::test::read_file(out + "/manifest.json");
  // A second run into it is refused, and nothing there changes.
  const std::string other = dir + "/other.txt";
  mnemo::test::write_file(other, "another document, short");
  r = run_cli("step --doc " + other + " --out " + out + kTinyModelFlags + " --from 0 --to 0 --format csv");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("--out '" + out + "' is not empty") != std::string::npos);
  CHECK(r.output.find("--force") != std::string::npos);
  CHECK(mnemo::test::read_file(out + "/manifest.json") == manifest);
  // --force clears it: only this run's files remain.
  r = run_cli("step --doc " + other + " --out " + out + kTinyModelFlags + " --from 0 --to 0 --format csv --force");
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  CHECK(mnemo::test::path_exists(out + "/step-0000"));
  CHECK_FALSE(mnemo::test::path_exists(out + "/step-0001"));
  CHECK_FALSE(mnemo::test::path_exists(out + "/step-0003"));
  CHECK(mnemo::test::read_file(out + "/manifest.json").find("other.txt") != std::string::npos);
  // A bad model with --force clears nothing (every check comes first).
  r = run_cli("step --doc " + other + " --out " + out + kTinyModelFlags + " --slots 0 --force");
  CHECK(r.code == 2);
  CHECK(mnemo::test::path_exists(out + "/step-0000"));
}

TEST_CASE("cli: step says when a loss does not measure the model - mtn-qa stepped through its untrained LM head") {
  const std::string zoo = std::string(MNEMO_SOURCE_DIR) + "/assets/models/mtn-qa.safetensors";
  if (!mnemo::test::file_exists(zoo)) MNEMO_SKIP("no zoo model " + zoo);
  const std::string dir = mnemo::test::temp_dir("step-qa-warning");
  // The qa model stepped as a language model: warned before the first segment.
  auto r = run_cli("step --doc " + kSampleDocument + " --checkpoint " + zoo + " --out " + dir + "/qa --from 0 --to 1 --format csv");
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("warning: This model was trained on the qa task") != std::string::npos);
  CHECK(r.output.find("never trained") != std::string::npos);
  CHECK(r.output.find("warning: This model was trained on the qa task") < r.output.find("  segment 0"));
}

TEST_CASE("cli: step --force removes only the files an earlier step listed - a user's file or folder is refused, "
          "named, and nothing is removed") {
  const std::string dir = mnemo::test::temp_dir("step-force-own");
  const std::string out = dir + "/out";
  auto r = run_cli("step --doc " + kSampleDocument + " --out " + out + kTinyModelFlags + " --from 0 --to 1 --format csv");
  REQUIRE(r.code == 0);
  const std::string step_cmd = "step --doc " + kSampleDocument + " --out " + out + kTinyModelFlags + " --from 0 --to 0 --format csv";
  // The user's notes beside the figures, a thesis in a subfolder, a note inside a step folder.
  mnemo::test::write_file(out + "/notes.txt", "my notes");
  std::filesystem::create_directories(out + "/sub");
  mnemo::test::write_file(out + "/sub/thesis.tex", "\\documentclass{article}");
  const std::string before = mnemo::test::read_file(out + "/manifest.json");
  // Without --force: refused, and the advice does not offer a --force that would fail.
  r = run_cli(step_cmd);
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("--force would not help") != std::string::npos);
  CHECK(r.output.find("'notes.txt'") != std::string::npos);
  // With --force: refused, naming both, and nothing at all removed.
  r = run_cli(step_cmd + " --force");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("did not write") != std::string::npos);
  CHECK(r.output.find("'notes.txt'") != std::string::npos);
  CHECK(r.output.find("'sub/'") != std::string::npos);
  CHECK(mnemo::test::read_file(out + "/notes.txt") == "my notes");
  CHECK(mnemo::test::path_exists(out + "/sub/thesis.tex"));
  CHECK(mnemo::test::path_exists(out + "/step-0001/trace.safetensors"));
  CHECK(mnemo::test::read_file(out + "/manifest.json") == before);
  // A user's file inside a step folder is just as safe.
  std::filesystem::rename(out + "/notes.txt", out + "/step-0001/notes.txt");
  std::filesystem::rename(out + "/sub", dir + "/sub");
  r = run_cli(step_cmd + " --force");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("'step-0001/notes.txt'") != std::string::npos);
  CHECK(mnemo::test::read_file(out + "/step-0001/notes.txt") == "my notes");
  // Moved out: --force clears the earlier run's files (and only them) and writes this run's.
  std::filesystem::rename(out + "/step-0001/notes.txt", dir + "/notes.txt");
  r = run_cli(step_cmd + " --force");
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  CHECK(mnemo::test::path_exists(out + "/step-0000/trace.safetensors"));
  CHECK_FALSE(mnemo::test::path_exists(out + "/step-0001"));
  // The manifest lists every file this run wrote, and nothing else is in the folder.
  const auto m = nlohmann::json::parse(mnemo::test::read_file(out + "/manifest.json"));
  CHECK(m["complete"] == true);
  std::set<std::string> listed(m["files"].begin(), m["files"].end());
  listed.insert("manifest.json");
  std::set<std::string> found;
  for (auto& e : std::filesystem::recursive_directory_iterator(out))
    if (e.is_regular_file()) found.insert(std::filesystem::relative(e.path(), out).generic_string());
  CHECK(found == listed);
  CHECK(listed.count("step-0000/trace.safetensors") == 1);
  // A folder whose manifest is not Mnemoscope's (or has no file list) is never cleared.
  const std::string foreign = dir + "/foreign";
  std::filesystem::create_directories(foreign);
  mnemo::test::write_file(foreign + "/manifest.json", "{\"name\": \"my package\"}");
  r = run_cli("step --doc " + kSampleDocument + " --out " + foreign + kTinyModelFlags + " --to 0 --format csv --force");
  CHECK(r.code == 2);
  CHECK(mnemo::test::read_file(foreign + "/manifest.json") == "{\"name\": \"my package\"}");
  // A manifest listing paths outside its folder removes nothing outside it.
  const std::string evil = dir + "/evil";
  std::filesystem::create_directories(evil);
  mnemo::test::write_file(evil + "/manifest.json",
                          "{\"program\": \"mnemoscope\", \"files\": [\"../notes.txt\", \"/etc/hostname\"]}");
  r = run_cli("step --doc " + kSampleDocument + " --out " + evil + kTinyModelFlags + " --to 0 --format csv --force");
  CAPTURE(r.output);
  CHECK(r.code == 0);
  CHECK(mnemo::test::read_file(dir + "/notes.txt") == "my notes");
}

namespace {
// Starts the built program with `args` (stdout and stderr to `log`); returns its pid.
pid_t start_mnemoscope(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> all = {MNEMO_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fd);
  return pid;
}

// The files below `dir` (relative) and the files its step manifest lists (with manifest.json).
std::set<std::string> files_below(const std::string& dir) {
  std::set<std::string> found;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (!e.is_directory()) found.insert(std::filesystem::relative(e.path(), dir).generic_string());
  return found;
}
std::set<std::string> files_listed(const std::string& dir) {
  const auto m = nlohmann::json::parse(mnemo::test::read_file(dir + "/manifest.json"));
  std::set<std::string> listed(m["files"].begin(), m["files"].end());
  listed.insert("manifest.json");
  return listed;
}
}  // namespace

TEST_CASE("cli: step takes its folder's single-writer lock - a second step into it is refused while the first runs, "
          "and a killed run's folder is cleared by --force") {
  const std::string dir = mnemo::test::temp_dir("step-lock");
  const std::string out = dir + "/out";
  // A first run far longer than this test (6000 segments of 4 bytes; it is killed below).
  const std::string sample = mnemo::test::read_file(kSampleDocument);
  std::string long_doc;
  for (int i = 0; i < 8; ++i) long_doc += sample;
  mnemo::test::write_file(dir + "/long.txt", long_doc);
  const pid_t first = start_mnemoscope({"step", "--doc", dir + "/long.txt", "--out", out, "--slots", "4", "--segment-len", "4",
                                        "--dim", "16", "--heads", "2", "--layers", "1", "--dec-layers", "1", "--to", "6000",
                                        "--format", "csv"},
                                       dir + "/first.log");
  REQUIRE(first > 0);
  const auto t0 = std::chrono::steady_clock::now();
  while (!mnemo::test::path_exists(out + "/step-0003") && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(mnemo::test::path_exists(out + "/step-0003"));
  const std::string second = "step --doc " + kSampleDocument + " --out " + out + kTinyModelFlags + " --to 1 --format csv";
  for (const std::string& force : {std::string(" --force"), std::string()}) {
    auto r = run_cli(second + force);
    CAPTURE(r.output);
    CHECK(r.code == 2);
    CHECK(r.output.find("--out '" + out + "': another `mnemoscope step` is writing into this folder; wait for it to end") !=
          std::string::npos);
  }
  int st = 0;
  REQUIRE(::waitpid(first, &st, WNOHANG) == 0);  // the refusals came while it ran
  ::kill(first, SIGKILL);                          // most likely inside a segment
  ::waitpid(first, &st, 0);
  // The refused runs removed nothing: every file the first run listed is there.
  for (const auto& f : files_listed(out)) CHECK_MESSAGE(mnemo::test::path_exists(out + "/" + f), f);
  // Its lock went with it, and --force clears what it wrote, the folder it was in the middle of too.
  auto r = run_cli(second + " --force");
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  CHECK(files_below(out) == files_listed(out));
  CHECK_FALSE(mnemo::test::path_exists(out + "/step-0003"));
}

TEST_CASE("cli: step stopped inside a segment by a full disk or a kill - --force clears the folder it was writing") {
  const std::string dir = mnemo::test::temp_dir("step-cut");
  const std::string step_cmd = "step --doc " + kSampleDocument + kTinyModelFlags + " --to 3 --format csv";
  // The sizes of a whole run: the file-size limit below lets its manifest through, not a trace.
  auto r = run_cli(step_cmd + " --out " + dir + "/whole");
  REQUIRE(r.code == 0);
  const auto trace_bytes = std::filesystem::file_size(dir + "/whole/step-0000/trace.safetensors");
  const auto manifest_bytes = std::filesystem::file_size(dir + "/whole/manifest.json");
  const auto limit_kib = (trace_bytes - 1) / 1024;
  REQUIRE(limit_kib * 1024 > manifest_bytes);
  // RLIMIT_FSIZE stands in for a full disk (the write fails, exit 2) and, with SIGXFSZ left to
  // kill, for a kill in the middle of a write (a temp file is left behind).
  for (const std::string& signal : {std::string("trap '' XFSZ; "), std::string()}) {
    CAPTURE(signal);
    const std::string out = dir + "/out";
    std::filesystem::remove_all(out);
    r = mnemo::test::run_shell("bash -c \"" + signal + "ulimit -f " + std::to_string(limit_kib) + "; exec " +
                               std::string(MNEMO_BINARY) + " " + step_cmd + " --out " + out + "\"");
    CAPTURE(r.output);
    CHECK(r.code != 0);
    if (!signal.empty()) {
      CHECK(r.code == 2);
      CHECK(r.output.find("File too large") != std::string::npos);
    }
    REQUIRE(mnemo::test::path_exists(out + "/step-0000"));
    CHECK(mnemo::app::unlisted_entries(out).empty());  // all of it the run's
    r = run_cli(step_cmd + " --out " + out + " --force");
    CAPTURE(r.output);
    REQUIRE(r.code == 0);
    CHECK(files_below(out) == files_listed(out));
    CHECK(nlohmann::json::parse(mnemo::test::read_file(out + "/manifest.json")).count("pending") == 0);
  }
  // A pending folder outside the output folder is never honoured.
  const std::string evil = dir + "/evil";
  std::filesystem::create_directories(evil);
  std::filesystem::create_directories(dir + "/keep");
  mnemo::test::write_file(dir + "/keep/mine.txt", "mine");
  mnemo::test::write_file(evil + "/manifest.json", "{\"program\": \"mnemoscope\", \"files\": [], \"pending\": [\"../keep\", \"/tmp\"]}");
  r = run_cli(step_cmd + " --out " + evil + " --force");
  CAPTURE(r.output);
  CHECK(r.code == 0);
  CHECK(mnemo::test::read_file(dir + "/keep/mine.txt") == "mine");
}

TEST_CASE("cli: messages name the right flag and print numbers as given") {
  const std::string dir = mnemo::test::temp_dir("msgs");
  auto r = run_cli_here("step --doc " + kSampleDocument + " --out " + dir + "/o" + kTinyModelFlags + " --temperature 0");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("--temperature: config field 'temperature' = 0 is out of range (0, 100]") != std::string::npos);
  CHECK(r.output.find("0.000000") == std::string::npos);
  r = run_cli_here("step --doc " + kSampleDocument + " --out " + dir + "/o --linear hashed --dim 60 --heads 2");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("--dim 60 must be a multiple of --hash-bits") != std::string::npos);
  CHECK(r.output.find("error: --model") == std::string::npos);
  r = run_cli_here("step --doc " + kSampleDocument + " --out /proc/mnemo-foo" + kTinyModelFlags);
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("--out '/proc/mnemo-foo' cannot be created") != std::string::npos);
  CHECK_FALSE(mnemo::test::path_exists(dir + "/o"));
  // export --figure lists the figure names in its help.
  r = run_cli("export --help");  // CLI11 prints help on std::cout: the process boundary
  CHECK(r.code == 0);
  const auto at = r.output.find("--figure");
  REQUIRE(at != std::string::npos);
  const std::string help = r.output.substr(at, 600);
  CHECK(help.find("loss") != std::string::npos);
  CHECK(help.find("hash-entropy") != std::string::npos);
  CHECK(help.find("block-mass") != std::string::npos);
}

#ifdef MNEMO_WITH_GUI
TEST_CASE("cli: gui --session rejects model flags it would ignore, naming them") {
  auto r = run_cli_here("gui --session /tmp/no-such-session --model memformer --slots 8 --quit");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("--model, --slots do not apply") != std::string::npos);
  r = run_cli_here("gui --session /tmp/no-such-session --seed 3 --quit");
  CHECK(r.code == 2);
  CHECK(r.output.find("--seed does not apply") != std::string::npos);
}

TEST_CASE("cli: gui flags that cannot work exit 2 naming the flag before any window opens") {
  // No display: a flag that passed these checks would reach the window (and say there is none).
  mnemo::test::EnvGuard no_display("DISPLAY", "");
  mnemo::test::EnvGuard no_wayland("WAYLAND_DISPLAY", "");
  auto r = run_cli_here("gui --doc " + kSampleDocument + kTinyModelFlags + " --select-slot 99 --quit");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("--select-slot 99 is out of range: the memformer has 4 memory entries (0..3)") != std::string::npos);
  r = run_cli_here("gui --doc " + kSampleDocument + kTinyModelFlags + " --select-slot -2 --quit");
  CHECK(r.code == 2);
  r = run_cli_here("gui --doc " + kSampleDocument + kTinyModelFlags + " --export /proc/mnemo-export-x --quit");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("--export '/proc/mnemo-export-x'") != std::string::npos);
  r = run_cli_here("gui --doc " + kSampleDocument + kTinyModelFlags + " --screenshot /proc/mnemo-x.png --quit");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("--screenshot '/proc/mnemo-x.png': cannot write in '/proc'") != std::string::npos);
  // A replayed session has no model for a tour to step.
  const std::string dir = mnemo::test::temp_dir("gui-session-tour");
  REQUIRE(run_cli("--threads 1 train --config " + std::string(MNEMO_SOURCE_DIR) + "/sessions/copy-rmt-tiny.json --out " +
                  dir + "/run --steps 2 --set train.eval_every=0 --set train.record_every=0").code == 0);
  r = run_cli_here("gui --session " + dir + "/run --tour " + std::string(MNEMO_SOURCE_DIR) +
              "/assets/tours/rmt-carries-a-copy.json --quit");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("--tour steps the zoo models") != std::string::npos);
  // A selection beyond the replayed session's own model is refused too.
  r = run_cli_here("gui --session " + dir + "/run --select-slot 500 --quit");
  CHECK(r.code == 2);
  CHECK(r.output.find("--select-slot 500 is out of range: the rmt has") != std::string::npos);
}

TEST_CASE("cli: a display that cannot be reached exits 2 with the fix - gui, tour --export and bench ui alike") {
  // $DISPLAY set, but no X server behind it: glfwInit fails. Every window path says what to do
  // (xvfb-run) and exits 2, never a bare glfwInit message with exit 1.
  mnemo::test::EnvGuard bad_display("DISPLAY", ":59173");
  mnemo::test::EnvGuard no_wayland("WAYLAND_DISPLAY", "");
  const std::string dir = mnemo::test::temp_dir("unreachable-display");
  const std::string tour = std::string(MNEMO_SOURCE_DIR) + "/assets/tours/rmt-carries-a-copy.json";
  for (const std::string& args : {"gui --doc " + kSampleDocument + kTinyModelFlags + " --quit",
                                  "tour " + tour + " --export " + dir + "/slides",
                                  std::string("bench ui --frames 10")}) {
    auto r = run_cli(args);
    CAPTURE(args);
    CAPTURE(r.output);
    CHECK(r.code == 2);
    CHECK(r.output.find("glfwInit failed") != std::string::npos);  // the cause, named
    CHECK(r.output.find("xvfb-run") != std::string::npos);         // and the fix
  }
}
TEST_CASE("cli: --steps has distinct names - the old spelling still works with a deprecation note") {
  // gui: --segments (checked before the window: a bad value names the flag used).
  auto r = run_cli_here("gui --doc " + kSampleDocument + kTinyModelFlags + " --segments -3 --quit");
  CHECK(r.code == 2);
  CHECK(r.output.find("--segments -3 is out of range") != std::string::npos);
  r = run_cli_here("gui --doc " + kSampleDocument + kTinyModelFlags + " --steps -3 --quit");
  CHECK(r.code == 2);
  CHECK(r.output.find("--steps -3 is out of range") != std::string::npos);
  // With a good value the note comes before anything else (here: no display, or the run).
  mnemo::test::EnvGuard no_display("DISPLAY", "");
  mnemo::test::EnvGuard no_wayland("WAYLAND_DISPLAY", "");
  r = run_cli_here("gui --doc " + kSampleDocument + kTinyModelFlags + " --steps 2 --quit");
  CAPTURE(r.output);
  CHECK(r.output.find("note: gui --steps is deprecated") != std::string::npos);
  CHECK(r.output.find("use --segments 2") != std::string::npos);
}
#endif

TEST_CASE("cli: export --step-range, and the old --steps with a deprecation note") {
  auto r = run_cli_here("export --session /tmp/no-such-session --steps 0-5");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("note: export --steps is deprecated") != std::string::npos);
  CHECK(r.output.find("--step-range 0-5") != std::string::npos);
  r = run_cli_here("export --session /tmp/no-such-session --step-range 5-x");
  CHECK(r.code == 2);
  CHECK(r.output.find("--step-range") != std::string::npos);
  r = run_cli_here("export --session /tmp/no-such-session --steps 1-2 --step-range 1-2");
  CHECK(r.code == 2);
  CHECK(r.output.find("give only --step-range") != std::string::npos);
}

TEST_CASE("cli: train --device cuda trains on the GPU where there is one, else exit 2 naming the fix, nothing written") {
  const std::string dir = mnemo::test::temp_dir("train-device");
  const std::string cfg = std::string(MNEMO_SOURCE_DIR) + "/sessions/copy-rmt-tiny.json";
  auto info = run_cli("info");
  REQUIRE(info.code == 0);
  const bool gpu = info.output.find("LibTorch CUDA: available") != std::string::npos;
  auto r = run_cli("train --config " + cfg + " --out " + dir + "/run --steps 2 --device cuda --set train.record_every=0");
  CAPTURE(r.output);
  if (gpu) {
    CHECK(r.code == 0);
    CHECK(mnemo::test::path_exists(dir + "/run/checkpoints"));
  } else {
    CHECK(r.code == 2);
    CHECK(r.output.find("--device cuda: this LibTorch sees no CUDA device") != std::string::npos);
    CHECK(r.output.find("use --device cpu") != std::string::npos);
    CHECK_FALSE(mnemo::test::path_exists(dir + "/run"));
  }
  // NCCL reduces CUDA tensors: refused with the CPU device before anything is joined or written.
  r = run_cli_here("train --config " + cfg + " --out " + dir + "/nccl --steps 2 --dist-backend nccl --rank 0 --world-size 2 "
              "--master 127.0.0.1:1");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("--dist-backend nccl reduces CUDA tensors: add --device cuda") != std::string::npos);
  CHECK_FALSE(mnemo::test::path_exists(dir + "/nccl"));
  r = run_cli_here("train --config " + cfg + " --out " + dir + "/x --device tpu");
  CHECK(r.code != 0);
  CHECK(r.output.find("--device") != std::string::npos);
}

TEST_CASE("cli: bench step --against-python: the Python eager Memformer and RMT compute the C++ models' losses and memory") {
  auto r = run_cli("--threads 1 bench step --segments 3 --repeats 1 --against-python");
  CAPTURE(r.output);
  if (r.output.find("has no PyTorch") != std::string::npos) {
    MNEMO_SKIP("/usr/bin/python3 has no PyTorch (Debian's python3-torch)");
    return;
  }
  REQUIRE(r.code == 0);
  CHECK(r.output.find("same model: 3 segment losses agree within") != std::string::npos);
  CHECK(r.output.find("C++ is") != std::string::npos);
  // RMT (relative attention, read/write memory tokens), on a document shorter than a segment
  // and on one of several segments (padding, the last token predicting the next segment's).
  for (const char* doc : {"/sessions/copy-rmt.json", "/assets/sample.txt"}) {
    CAPTURE(doc);
    r = run_cli("--threads 1 bench step --config " + std::string(MNEMO_SOURCE_DIR) +
                "/sessions/copy-rmt.json --segments 4 --repeats 1 --against-python --doc " + MNEMO_SOURCE_DIR + doc);
    CAPTURE(r.output);
    REQUIRE(r.code == 0);
    CHECK(r.output.find("same model: ") != std::string::npos);
  }
  // Another model, or a missing interpreter: refused, naming the problem.
  r = run_cli("bench step --config " + std::string(MNEMO_SOURCE_DIR) + "/sessions/copy-trxl.json --against-python");
  CHECK(r.code == 2);
  CHECK(r.output.find("the Python reference has Memformer and RMT with dense projections") != std::string::npos);
  r = run_cli("bench step --segments 2 --repeats 1 --against-python --python /nonexistent/python3");
  CHECK(r.code == 2);
  CHECK(r.output.find("cannot run /nonexistent/python3") != std::string::npos);
}

TEST_CASE("cli: bench train --against-python: PyTorch eager trains the same model to the same step losses") {
  const std::string dir = mnemo::test::temp_dir("bench-train");
  // Tiny configs of every family the Python package has (Memformer with MRBP, RMT with hashed
  // layers, Transformer-XL, the Transformer), on a generated task (no data set needed). A large
  // learning rate, so that a step the Python side took differently (schedule, clipping, weight
  // decay groups) shows in the next step's loss.
  const std::string task = R"("task": {"name": "copy", "source_len": 3, "symbols": 4, "segments": 3, "train_size": 64, "valid_size": 16, "test_size": 16},
    "train": {"steps": 10, "batch": 4, "lr": 0.05, "warmup": 2, "schedule": "cosine", "weight_decay": 0.1, "clip": 0.5, "eval_every": 0, "save_every": 0, "record_every": 0, "seed": 1)";
  const std::vector<std::pair<std::string, std::string>> models = {
      {"memformer", R"({"model": "memformer", "slots": 2, "segment_len": 6, "dim": 16, "heads": 2, "layers": 1, "dec_layers": 1, "ff": 32})"},
      {"rmt-hashed", R"({"model": "rmt", "slots": 2, "segment_len": 6, "dim": 16, "heads": 2, "layers": 1, "ff": 32, "linear": "hashed", "hash_bits": 4})"},
      {"trxl", R"({"model": "trxl", "slots": 2, "segment_len": 6, "dim": 16, "heads": 2, "layers": 2, "ff": 32})"},
      {"transformer", R"({"model": "transformer", "slots": 2, "segment_len": 6, "dim": 16, "heads": 2, "layers": 1, "ff": 32})"}};
  // Memformer predicts the next segment: the copy-recall task gives every segment one.
  const std::string recall = R"("task": {"name": "copy-recall", "source_len": 4, "symbols": 4, "segments": 3, "seed": 1},)" +
                             task.substr(task.find("\"train\""));
  std::string list;
  for (const auto& [name, model] : models) {
    const std::string strategy = name == "memformer" ? R"(, "strategy": "mrbp"})" : "}";
    std::ofstream(dir + "/" + name + ".json") << "{\"model\": " << model << ", " << (name == "memformer" ? recall : task)
                                              << strategy << "}";
    list += (list.empty() ? "" : ",") + dir + "/" + name + ".json";
  }
  auto r = run_cli("--threads 1 bench train --warmup 1 --steps 3 --against-python --tolerance 1e-4 --configs " + list);
  CAPTURE(r.output);
  if (r.output.find("has no PyTorch") != std::string::npos) {
    MNEMO_SKIP("/usr/bin/python3 has no PyTorch (Debian's python3-torch)");
    return;
  }
  REQUIRE(r.code == 0);
  for (const auto& [name, model] : models) {
    CAPTURE(name);
    CHECK(r.output.find(name + ".json") != std::string::npos);
  }
  // Four steps each, every step loss within 1e-4 of the C++ trainer's; the speeds and ratios printed.
  size_t n = 0;
  for (size_t at = r.output.find("4 within "); at != std::string::npos; at = r.output.find("4 within ", at + 1)) ++n;
  CHECK(n == models.size());
  CHECK(r.output.find("DISAGREE") == std::string::npos);
  CHECK(r.output.find("Python tok/s") != std::string::npos);
  CHECK(r.output.find("memformer.json: the C++ side trains with strategy mrbp") != std::string::npos);
  // A truncated BPTT is another objective, and a missing interpreter: refused, naming the problem.
  std::ofstream(dir + "/short.json") << "{\"model\": " << models[1].second << ", " << task << R"(, "bptt_depth": 1}})";
  r = run_cli("bench train --steps 1 --against-python --configs " + dir + "/short.json");
  CHECK(r.code == 2);
  CHECK(r.output.find("short.json truncates BPTT (train.bptt_depth 1)") != std::string::npos);
  r = run_cli("bench train --steps 1 --against-python --python /nonexistent/python3 --configs " + dir + "/trxl.json");
  CHECK(r.code == 2);
  CHECK(r.output.find("cannot run /nonexistent/python3") != std::string::npos);
  // --precision bf16: both sides under CPU autocast agree within its tolerance, and the step
  // losses are not fp32's (the matmuls did run in bfloat16); another precision is refused.
  auto losses = [](const std::string& out, const std::string& name) {
    const std::string tag = name + ".json step losses, C++:";
    const size_t at = out.find(tag);
    REQUIRE(at != std::string::npos);
    const size_t from = at + tag.size(), end = out.find_first_of(";\n", from);
    std::istringstream in(out.substr(from, end - from));
    std::vector<double> v;
    for (double x; in >> x;) v.push_back(x);
    return v;
  };
  const std::string mem = dir + "/memformer.json";
  r = run_cli("--threads 1 bench train --warmup 1 --steps 2 --against-python --precision bf16 --configs " + mem);
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("bf16 autocast (matmuls in bfloat16") != std::string::npos);
  CHECK(r.output.find("3 within ") != std::string::npos);
  CHECK(r.output.find("DISAGREE") == std::string::npos);
  const std::vector<double> bf16 = losses(r.output, "memformer");
  r = run_cli("--threads 1 bench train --warmup 1 --steps 2 --configs " + mem);
  REQUIRE(r.code == 0);
  CHECK(r.output.find(", fp32, each config") != std::string::npos);
  const std::vector<double> fp32 = losses(r.output, "memformer");
  REQUIRE(bf16.size() == 3);
  REQUIRE(fp32.size() == 3);
  CHECK(bf16[0] != fp32[0]);
  CHECK(std::abs(bf16[0] - fp32[0]) < 0.05 * fp32[0]);
  r = run_cli("bench train --steps 1 --precision fp16 --configs " + mem);
  CHECK(r.code == 2);
  CHECK(r.output.find("--precision must be fp32 or bf16, not 'fp16'") != std::string::npos);
  r = run_cli("bench train --steps 1 --precision bf16 --device cuda --configs " + mem);
  CHECK(r.code == 2);
  CHECK(r.output.find("CPU autocast only (--device cpu)") != std::string::npos);
}

TEST_CASE("cli: bench train --device and --set - on a GPU both sides train there to the same step losses - no GPU, a bad device or a bad --set exit 2") {
  const std::string dir = mnemo::test::temp_dir("bench-train-device");
  const std::string cfg = dir + "/rmt.json";
  std::ofstream(cfg) << R"({"model": {"model": "rmt", "slots": 2, "segment_len": 6, "dim": 16, "heads": 2, "layers": 1, "ff": 32},
    "task": {"name": "copy", "source_len": 3, "symbols": 4, "segments": 3, "train_size": 64, "valid_size": 16, "test_size": 16},
    "train": {"steps": 10, "batch": 4, "lr": 0.05, "warmup": 2, "weight_decay": 0.1, "clip": 0.5, "eval_every": 0, "save_every": 0, "record_every": 0, "seed": 1}})";
  // --set reaches the trainer: 3 windows of 3 x 6 tokens per step, named in the header.
  auto r = run_cli("--threads 1 bench train --warmup 0 --steps 1 --set train.batch=3 --configs " + cfg);
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("device cpu, fp32, each config in a fresh process, --set train.batch=3") != std::string::npos);
  r = run_cli_here("bench train --steps 1 --set train.batch=0 --configs " + cfg);
  CHECK(r.code == 2);
  CHECK(r.output.find("--set 'train.batch=0'") != std::string::npos);
  // An interpreter named without a path is looked up in PATH, as a shell does.
  r = run_cli("bench train --warmup 0 --steps 1 --against-python --python python3 --configs " + cfg);
  CHECK(r.output.find("cannot run python3") == std::string::npos);
  r = run_cli_here("bench train --steps 1 --device tpu --configs " + cfg);
  CHECK(r.code == 2);
  CHECK(r.output.find("--device must be cpu or cuda, not 'tpu'") != std::string::npos);
  if (mnemo::cuda_devices() < 1) {
    r = run_cli_here("bench train --steps 1 --device cuda --configs " + cfg);
    CHECK(r.code == 2);
    CHECK(r.output.find("sees no CUDA device (a CPU build, or no GPU on this machine); use --device cpu") != std::string::npos);
    MNEMO_SKIP_WITHOUT_CUDA("no CUDA device: bench train --device cuda cannot run here");
  }
  // The Python side: MNEMO_TEST_PYTHON names an interpreter with PyTorch (a GPU machine's is
  // seldom Debian's /usr/bin/python3).
  const char* py = std::getenv("MNEMO_TEST_PYTHON");
  const std::string python = py && *py ? py : "/usr/bin/python3";
  r = run_cli("--threads 1 bench train --warmup 1 --steps 3 --device cuda --against-python --tolerance 1e-4 --python " + python +
              " --configs " + cfg);
  CAPTURE(r.output);
  if (r.output.find("has no PyTorch") != std::string::npos) {
    MNEMO_SKIP(python + " has no PyTorch: set MNEMO_TEST_PYTHON to one that has");
    return;
  }
  REQUIRE(r.code == 0);
  CHECK(r.output.find("device cuda (each step timed to its last kernel)") != std::string::npos);
  CHECK(r.output.find("4 within ") != std::string::npos);
  CHECK(r.output.find("DISAGREE") == std::string::npos);
}

TEST_CASE("cli: train refuses a next-segment model on a task that gives no next segment - exit 2, nothing written") {
  // Memformer's decoder predicts the next segment; the copy task gives within-segment targets
  // only. Before: an internal error from the first rollout, with a stack trace and a half-made
  // session directory. (Building a Trainer alone does not refuse it: probes use such models.)
  const std::string dir = mnemo::test::temp_dir("next-segment");
  std::ofstream(dir + "/c.json") << R"({"model": {"model": "memformer", "slots": 2, "segment_len": 6, "dim": 16, "heads": 2, "layers": 1, "dec_layers": 1, "ff": 32},
    "task": {"name": "copy", "source_len": 3, "symbols": 4, "segments": 3, "train_size": 64, "valid_size": 16, "test_size": 16},
    "train": {"steps": 2, "batch": 4, "eval_every": 0, "save_every": 0, "record_every": 0}})";
  auto r = run_cli("--threads 1 train --config " + dir + "/c.json --out " + dir + "/run");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("config field 'model.model' = memformer predicts the next segment, but task 'copy' gives segment 0 "
                      "none to predict") != std::string::npos);
  CHECK(r.output.find("internal error") == std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/run"));
  // Following the advice works: the same model on copy-recall trains.
  std::ofstream(dir + "/d.json") << R"({"model": {"model": "memformer", "slots": 2, "segment_len": 6, "dim": 16, "heads": 2, "layers": 1, "dec_layers": 1, "ff": 32},
    "task": {"name": "copy-recall", "source_len": 4, "symbols": 4, "segments": 3, "seed": 1},
    "train": {"steps": 2, "batch": 4, "eval_every": 0, "save_every": 0, "record_every": 0}})";
  r = run_cli("--threads 1 train --config " + dir + "/d.json --out " + dir + "/run2");
  CAPTURE(r.output);
  CHECK(r.code == 0);
}

TEST_CASE("cli: train --init-from starts from the file's weights (fine-tuning) - a misfit, a missing file or --resume exits 2 writing nothing") {
  const std::string dir = mnemo::test::temp_dir("init-from");
  const std::string cfg = dir + "/tiny.json";
  mnemo::test::write_file(cfg, mnemo::test::tiny_copy_run(nlohmann::json::parse(R"({"steps": 1, "batch": 4, "lr": 1e-9,
    "warmup": 0, "eval_every": 0, "save_every": 0, "record_every": 0, "seed": 1})")).dump());
  const std::string w = dir + "/w.safetensors";
  REQUIRE(run_cli("export-weights --config " + cfg + " --seed 7 --out " + w).code == 0);
  const auto init = mnemo::read_weights_file(w);
  // The largest difference between a session's last checkpoint and the exported weights.
  auto max_diff = [&](const std::string& session) {
    const auto got = mnemo::read_weights_file(session);
    REQUIRE(got.weights.size() == init.weights.size());
    double d = 0;
    for (size_t i = 0; i < got.weights.size(); ++i) {
      REQUIRE(got.weights[i].first == init.weights[i].first);
      d = std::max(d, (got.weights[i].second - init.weights[i].second).abs().max().item<double>());
    }
    return d;
  };
  auto a = run_cli("train --config " + cfg + " --out " + dir + "/a --init-from " + w);
  INFO(a.output);
  REQUIRE(a.code == 0);
  CHECK(a.output.find("initialised from " + w + " (a weights)") != std::string::npos);
  CHECK(max_diff(dir + "/a") < 1e-6);  // one step at lr 1e-9 from the file's weights
  // Every weight from the file, no dropout: train.seed changes nothing, and the note says so
  // and what does (task.seed); following it gives another run.
  const std::string real = " --set train.lr=0.01 --set train.steps=3";
  CHECK(a.output.find("so train.seed changes nothing in this run; task.seed draws other training examples") !=
        std::string::npos);
  REQUIRE(run_cli("train --config " + cfg + " --out " + dir + "/s1 --init-from " + w + real + " --set train.seed=1").code == 0);
  REQUIRE(run_cli("train --config " + cfg + " --out " + dir + "/s2 --init-from " + w + real + " --set train.seed=2").code == 0);
  REQUIRE(run_cli("train --config " + cfg + " --out " + dir + "/t2 --init-from " + w + real + " --set task.seed=2").code == 0);
  {
    const auto s1 = mnemo::read_weights_file(dir + "/s1"), s2 = mnemo::read_weights_file(dir + "/s2"),
               t2 = mnemo::read_weights_file(dir + "/t2");
    double seed_diff = 0, task_diff = 0;
    for (size_t i = 0; i < s1.weights.size(); ++i) {
      seed_diff = std::max(seed_diff, (s1.weights[i].second - s2.weights[i].second).abs().max().item<double>());
      task_diff = std::max(task_diff, (s1.weights[i].second - t2.weights[i].second).abs().max().item<double>());
    }
    CHECK(seed_diff == 0.0);
    CHECK(task_diff > 1e-6);
  }
  auto b = run_cli("train --config " + cfg + " --out " + dir + "/b");  // its own initialisation (seed 1)
  REQUIRE(b.code == 0);
  CHECK(max_diff(dir + "/b") > 0.1);
  // A zoo-style session as the source works too (its latest checkpoint).
  CHECK(run_cli("train --config " + cfg + " --out " + dir + "/c --init-from " + dir + "/a").code == 0);
  // Nothing is written for a misfit, a missing file, or --init-from with --resume.
  auto d = run_cli_here("train --config " + cfg + " --out " + dir + "/d --init-from " + w + " --set model.slots=3");
  CHECK(d.code == 2);
  CHECK(d.output.find("--init-from: ") != std::string::npos);
  CHECK(d.output.find("model.slots: 2") != std::string::npos);
  CHECK(d.output.find("Fine-tuning needs the model") != std::string::npos);
  auto e = run_cli_here("train --config " + cfg + " --out " + dir + "/e --init-from " + dir + "/nothing.safetensors");
  CHECK(e.code == 2);
  CHECK(e.output.find("--init-from: ") != std::string::npos);
  CHECK_FALSE(mnemo::test::path_exists(dir + "/d"));
  CHECK_FALSE(mnemo::test::path_exists(dir + "/e"));
  // A zoo model by its name, as the model picker and --compare-model take it.
  auto z = run_cli("train --config " + std::string(MNEMO_SOURCE_DIR) + "/sessions/zoo-memformer-copy.json --out " + dir +
                   "/z --init-from memformer-copy --steps 1 --set train.batch=2 --set train.eval_every=0 --set "
                   "train.record_every=0");
  INFO(z.output);
  CHECK(z.code == 0);
  CHECK(z.output.find("models/memformer-copy.safetensors (a zoo model") != std::string::npos);
  auto f = run_cli_here("train --out " + dir + "/a --resume --init-from " + w);
  CHECK(f.code == 2);
  CHECK(f.output.find("pass one of them") != std::string::npos);
  // --init-matching: the misfit above takes what fits (every tensor but the memory's, whose
  // shape follows model.slots), lists the rest, and records them in the manifest.
  CHECK(d.output.find("--init-matching") != std::string::npos);  // the misfit's message offers it
  auto g = run_cli("train --config " + cfg + " --out " + dir + "/g --init-from " + w +
                   " --init-matching --set model.slots=3");
  INFO(g.output);
  REQUIRE(g.code == 0);
  CHECK(g.output.find("--init-matching: ") != std::string::npos);
  CHECK(g.output.find("not used from the file: ") != std::string::npos);
  CHECK(g.output.find("train.seed changes nothing") == std::string::npos);  // the memory's tensors take the seed
  std::ifstream mf(dir + "/g/manifest.json");
  const auto manifest = nlohmann::json::parse(mf);
  REQUIRE(manifest.contains("init_from"));
  CHECK(manifest["init_from"]["matching"] == true);
  CHECK_FALSE(manifest["init_from"]["fresh"].empty());
  CHECK(manifest["init_from"]["fresh"] == manifest["init_from"]["unused"]);  // the memory's tensors, both sides
  const auto got = mnemo::read_weights_file(dir + "/g");
  std::map<std::string, torch::Tensor> was(init.weights.begin(), init.weights.end());
  int same = 0;
  for (const auto& [n, t] : got.weights)
    if (was.count(n) && was[n].sizes() == t.sizes()) {
      CHECK((t - was[n]).abs().max().item<double>() < 1e-6);  // one step at lr 1e-9
      ++same;
    }
  CHECK(same > 0);
  auto h = run_cli_here("train --config " + cfg + " --out " + dir + "/h --init-matching");
  CHECK(h.code == 2);
  CHECK(h.output.find("pass --init-from W too") != std::string::npos);
  CHECK_FALSE(mnemo::test::path_exists(dir + "/h"));
}

TEST_CASE("cli: step and eval --doc run a checkpoint as it was trained - --segment-len re-cuts the document, labelled and warned") {
  // The zoo's rmt-copy takes segments of up to 37 tokens but was trained on the copy task's 13
  // (6 segments of an example of 73 tokens); the tour document is such an example.
  const std::string doc = std::string(MNEMO_SOURCE_DIR) + "/assets/tours/rmt-copy.txt";
  const std::string ckpt = std::string(MNEMO_SOURCE_DIR) + "/assets/models/rmt-copy.safetensors";
  const std::string dir = mnemo::test::temp_dir("step-as-trained");
  auto loss_of = [](const std::string& out, int segment) {
    const std::string key = "  segment " + std::to_string(segment) + "  loss(next token) ";
    const auto p = out.find(key);
    return p == std::string::npos ? -1.0 : std::stod(out.substr(p + key.size()));
  };
  auto r = run_cli("--threads 1 step --doc " + doc + " --checkpoint " + ckpt + " --out " + dir + "/a --from 0 --to 2 --format csv");
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("stepping segments 0..2 of 6 (segments of 13 tokens, as trained)") != std::string::npos);
  CHECK(r.output.find("warning") == std::string::npos);
  // Segment 2 holds copied symbols only: recalled from memory, as in training.
  CHECK(loss_of(r.output, 2) >= 0.0);
  CHECK(loss_of(r.output, 2) < 0.01);
  const auto manifest = nlohmann::json::parse(mnemo::test::read_file(dir + "/a/manifest.json"));
  CHECK(manifest["segment_len"] == 13);
  CHECK(manifest["trained_segment_len"] == 13);
  CHECK(manifest["segments"] == 6);
  // Another segmentation is allowed, labelled and warned about: the model fails on it.
  r = run_cli("--threads 1 step --doc " + doc + " --checkpoint " + ckpt + " --out " + dir + "/b --segment-len 37 --to 1 --format csv");
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("of 2 (segments of 37 tokens (trained on segments of 13))") != std::string::npos);
  CHECK(r.output.find("warning: the model was trained on segments of 13 tokens and is stepped in segments of 37, a "
                      "segmentation it never saw") != std::string::npos);
  CHECK(r.output.find("leave out --segment-len to step it as trained") != std::string::npos);
  CHECK(loss_of(r.output, 1) > 1.0);
  // More than the model takes: exit 2 naming the flag and the most it takes; nothing written.
  r = run_cli_here("step --doc " + doc + " --checkpoint " + ckpt + " --out " + dir + "/c --segment-len 38");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("--segment-len 38 is out of range 1..37: the rmt model takes segments of at most 37 tokens") !=
        std::string::npos);
  CHECK_FALSE(mnemo::test::path_exists(dir + "/c"));
  // Without a checkpoint --segment-len is the model's own segment length, as before.
  r = run_cli("--threads 1 step --doc " + doc + " --model rmt --slots 4 --dim 16 --heads 2 --layers 1 --segment-len 20 --out " +
              dir + "/d --to 0 --format csv");
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("of 4 (segments of 20 tokens)") != std::string::npos);
  // eval --doc cuts as trained too.
  r = run_cli("--threads 1 eval --checkpoint " + ckpt + " --doc " + doc + " --json");
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  CHECK(j["segment_len"] == 13);
  CHECK(j["trained_segment_len"] == 13);
  CHECK(j["segments"] == 6);
}

TEST_CASE("cli: gui takes --segment-len with a checkpoint as the segmentation - at most the model's, exit 2 naming it") {
#ifndef MNEMO_WITH_GUI
  MNEMO_SKIP("this build has no desktop app (MNEMO_GUI=OFF), so no gui command");
#endif
  mnemo::test::EnvGuard no_display("DISPLAY", "");
  mnemo::test::EnvGuard no_wayland("WAYLAND_DISPLAY", "");
  const std::string doc = std::string(MNEMO_SOURCE_DIR) + "/assets/tours/rmt-copy.txt";
  const std::string ckpt = std::string(MNEMO_SOURCE_DIR) + "/assets/models/rmt-copy.safetensors";
  auto r = run_cli_here("gui --doc " + doc + " --checkpoint " + ckpt + " --segment-len 99 --quit");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("--segment-len 99 is out of range 1..37") != std::string::npos);
}

TEST_CASE("cli: step on a synthetic task's episode gives the loss over the tokens the task scores beside the mean over all") {
  const std::string dir = mnemo::test::temp_dir("step-scored");
  const std::string doc = std::string(MNEMO_SOURCE_DIR) + "/assets/tours/rmt-copy.txt";
  const std::string ckpt = std::string(MNEMO_SOURCE_DIR) + "/assets/models/rmt-copy.safetensors";
  auto r = run_cli("step --doc " + doc + " --checkpoint " + ckpt + " --out " + dir + "/s --to 2 --format csv");
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("'scored' is the mean over the tokens the task scores") != std::string::npos);
  // Segment 0 predicts only random source symbols; segment 1 two copied ones among them.
  CHECK(r.output.find("segment 0  loss(next token) 6.") != std::string::npos);
  CHECK(r.output.find("  scored: none") != std::string::npos);
  const auto at = r.output.find("segment 1  loss(next token) 6.");
  REQUIRE(at != std::string::npos);
  const auto sc = r.output.find("scored ", at);
  REQUIRE(sc != std::string::npos);
  CHECK(std::stod(r.output.substr(sc + 7)) < 0.01);
  CHECK(r.output.find("(2 tokens)", sc) < r.output.find('\n', sc));
  // Re-cut at another length: no episode layout to name, no scored column.
  r = run_cli("step --doc " + doc + " --checkpoint " + ckpt + " --out " + dir + "/t --to 1 --format csv --segment-len 20");
  CHECK(r.code == 0);
  CHECK(r.output.find("  scored") == std::string::npos);
  CHECK(r.output.find("'scored' is") == std::string::npos);
}

TEST_CASE("cli: step --random stamps every figure as a randomly initialised model - a checkpoint's figures have no stamp") {
  const std::string dir = mnemo::test::temp_dir("step-random-stamp");
  auto r = run_cli("step --random --seed 3 --doc " + std::string(kSampleDocument) + " --out " + dir + "/r --to 0 --format svg,csv");
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  int svgs = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/r/step-0000"))
    if (e.path().extension() == ".svg") {
      CAPTURE(e.path().string());
      CHECK(mnemo::test::read_file(e.path().string()).find("randomly initialised memformer (seed 3): not a trained model") !=
            std::string::npos);
      ++svgs;
    }
  CHECK(svgs >= 3);
  r = run_cli("step --doc " + std::string(MNEMO_SOURCE_DIR) + "/assets/models/memformer-copy.txt --checkpoint " +
              std::string(MNEMO_SOURCE_DIR) + "/assets/models/memformer-copy.safetensors --out " + dir + "/c --to 0 --format svg");
  REQUIRE(r.code == 0);
  CHECK(mnemo::test::read_file(dir + "/c/step-0000/slot_types.svg").find("not a trained model") == std::string::npos);
}

TEST_CASE("cli: model flags that differ from a checkpoint's model are refused by step and gui alike, naming fields and flags") {
  mnemo::test::EnvGuard no_display("DISPLAY", "");
  mnemo::test::EnvGuard no_wayland("WAYLAND_DISPLAY", "");
  const std::string zoo = std::string(MNEMO_SOURCE_DIR) + "/assets/models/";
  const std::string dir = mnemo::test::temp_dir("flags-vs-checkpoint");
  std::vector<std::string> cmds = {"step --out " + dir + "/s --to 0"};
#ifdef MNEMO_WITH_GUI
  cmds.push_back("gui --quit");  // a build without the app (MNEMO_GUI=OFF) has no gui command
#endif
  for (const std::string& cmd : cmds) {
    CAPTURE(cmd);
    // A field the weights depend on.
    auto r = run_cli_here(cmd + " --doc " + kSampleDocument + " --checkpoint " + zoo + "memformer-copy.safetensors --slots 4");
    CAPTURE(r.output);
    CHECK(r.code == 2);
    CHECK(r.output.find("holds a model other than --slots asks for; differing fields (the file's value vs the flags'): "
                        "model.slots: 8 vs 4. Trained weights fix the model: leave out --slots") != std::string::npos);
    CHECK(r.output.find("flags's") == std::string::npos);
    CHECK(r.output.find("--config") == std::string::npos);  // none was given
    // A field the weights do not depend on (a transformer has no slots): refused too, not ignored.
    r = run_cli_here(cmd + " --doc " + kSampleDocument + " --checkpoint " + zoo + "memoryformer-lm.safetensors --slots 8 --heads 1");
    CAPTURE(r.output);
    CHECK(r.code == 2);
    CHECK(r.output.find("--heads, --slots ask for") != std::string::npos);
    // A --config of another model.
    r = run_cli_here(cmd + " --doc " + kSampleDocument + " --checkpoint " + zoo + "memformer-copy.safetensors --config " +
                std::string(MNEMO_SOURCE_DIR) + "/sessions/zoo-rmt-copy.json");
    CAPTURE(r.output);
    CHECK(r.code == 2);
    CHECK(r.output.find("model.model: \"memformer\" vs \"rmt\"") != std::string::npos);
    CHECK(r.output.find("leave out --config (the file's own config is used)") != std::string::npos);
    CHECK_FALSE(mnemo::test::path_exists(dir + "/s"));
  }
  // Flags equal to the file's own config are fine.
  auto r = run_cli("--threads 1 step --out " + dir + "/ok --to 0 --doc " + kSampleDocument + " --checkpoint " + zoo +
                   "memformer-copy.safetensors --slots 8 --format csv");
  CAPTURE(r.output);
  CHECK(r.code == 0);
}

TEST_CASE("cli: eval --set on a model field the weights fix exits 2 naming the --set flag to leave out - one they do not fix "
          "(a Transformer-XL's cache length) evaluates") {
  const std::string zoo = std::string(MNEMO_SOURCE_DIR) + "/assets/models/";
  auto r = run_cli_here("--threads 1 eval --checkpoint " + zoo + "memformer-copy.safetensors --batches 1 --set model.slots=4 "
                   "--set task.segments=4");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("model.slots: 8 vs 4") != std::string::npos);
  CHECK(r.output.find("Leave out --set model.slots=4 (the file's own model config is used)") != std::string::npos);
  CHECK(r.output.find("Leave out --config") == std::string::npos);  // none was given
  // Following the advice works: the task field alone is fine.
  r = run_cli("--threads 1 eval --checkpoint " + zoo + "memformer-copy.safetensors --batches 1 --set task.segments=4");
  CAPTURE(r.output);
  CHECK(r.code == 0);
  // A cache length is not in the weights: a Transformer-XL evaluates with a longer cache
  // (docs/experiments/text-memory.md section 11 measures what a longer cache adds).
  r = run_cli("--threads 1 eval --checkpoint " + zoo + "trxl-copy.safetensors --batches 1 --set model.slots=64");
  CAPTURE(r.output);
  CHECK(r.code == 0);
  CHECK(r.output.find("bits/token") != std::string::npos);
}

TEST_CASE("bench: a report names OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE when the environment sets them") {
  // This machine's sessions set both, which makes OpenBLAS run another core type's kernels
  // (docs/benchmarks.md): a bench's machine line must say so, and say nothing when unset.
  std::map<std::string, std::string> saved;
  for (const char* v : {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"})
    if (const char* x = std::getenv(v)) saved[v] = x;
  ::unsetenv("OPENBLAS_CORETYPE");
  ::unsetenv("OPENBLAS_L2_SIZE");
  CHECK(mnemo::app::bench::blas_environment_note().empty());
  CHECK(mnemo::app::bench::machine_line().find("OPENBLAS") == std::string::npos);
  ::setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  const std::string line = mnemo::app::bench::machine_line();
  CHECK(line.rfind("machine: ", 0) == 0);
  CHECK(line.find("the environment sets OPENBLAS_CORETYPE=Haswell, so OpenBLAS") != std::string::npos);
  CHECK(line.find("env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE") != std::string::npos);
  ::setenv("OPENBLAS_L2_SIZE", "512", 1);
  CHECK(mnemo::app::bench::blas_environment_note().find("OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512") !=
        std::string::npos);
  ::unsetenv("OPENBLAS_CORETYPE");
  ::unsetenv("OPENBLAS_L2_SIZE");
  for (const auto& [k, v] : saved) ::setenv(k.c_str(), v.c_str(), 1);
}

TEST_CASE("progress line: silent for a short run, a line per tenth in a log once slow, one redrawn line on a terminal") {
  double now = 0;
  auto clock = [&now] { return now; };
  SUBCASE("a short run in a log prints nothing") {
    std::ostringstream out;
    {
      mnemo::app::ProgressLine p(out, "eval: scoring", false, clock);
      for (int i = 1; i <= 100; ++i) {
        now += 0.05;  // 5 s in all
        p.update(i, 100);
      }
    }
    CHECK(out.str().empty());
  }
  SUBCASE("a slow run in a log prints each further tenth after the quiet time, with what is left, and the total") {
    std::ostringstream out;
    mnemo::app::ProgressLine p(out, "eval: scoring", false, clock);
    for (int i = 1; i <= 200; ++i) {
      now += 1.0;  // 200 s in all: the first line comes at 10 s (5 %: no tenth yet), then 20 s = 10 %
      p.update(i, 200);
    }
    p.finish();
    const std::string s = out.str();
    CHECK(s.find("eval: scoring: segment 20 of 200 (10.0%), 20s, about 3m00s left\n") == 0);
    CHECK(s.find("segment 180 of 200 (90.0%), 3m00s, about 20s left\n") != std::string::npos);
    CHECK(s.find("segment 200 of 200") == std::string::npos);  // the end is the total line
    CHECK(s.find("segment 10 of 200") == std::string::npos);
    size_t lines = 0;
    for (char c : s) lines += c == '\n';
    CHECK(lines == 10);  // nine tenths and the total
    CHECK(s.substr(s.rfind('\n', s.size() - 2) + 1) == "eval: scoring: 200 of 200 segments in 3m20s\n");
  }
  SUBCASE("a terminal gets one line redrawn at most every half second, ended by a newline") {
    std::ostringstream out;
    {
      mnemo::app::ProgressLine p(out, "eval --by-slot", true, clock);
      for (int i = 1; i <= 40; ++i) {
        now += 0.125;  // 5 s: quiet for the first second, then a redraw every 0.5 s and at the end
        p.update(i, 40);
      }
    }
    const std::string s = out.str();
    size_t redraws = 0;
    for (char c : s) redraws += c == '\r';
    CHECK(redraws == 9);  // segments 8, 12, ..., 40
    CHECK(s.find("\reval --by-slot: segment 8 of 40 (20.0%), 1s, about 4s left\x1b[K") == 0);
    CHECK(s.find("segment 40 of 40 (100.0%), 5s\x1b[K\n") != std::string::npos);
    CHECK(s.back() == '\n');
  }
}

TEST_CASE("cli: plot reads the CSV it checked: a FIFO and a CSV over the cap are refused by name, nothing written") {
  const std::string dir = mnemo::test::temp_dir("plot-hostile");
  const std::string fifo = dir + "/pipe.csv";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto f = run_cli("plot --csv " + fifo + " --x step --y loss --out " + dir + "/fig");
  CHECK(f.code == 2);
  CHECK(f.output.find("--csv: '" + fifo + "' is a FIFO (named pipe), not a file; pass the file itself") != std::string::npos);
  // One byte past the cap (a sparse file: no disk used), refused from its size before reading.
  const std::string big = dir + "/big.csv";
  {
    std::ofstream(big) << "step,loss\n";
  }
  REQUIRE(::truncate(big.c_str(), (256ll << 20) + 1) == 0);
  const auto b = run_cli("plot --csv " + big + " --x step --y loss --out " + dir + "/fig");
  CHECK(b.code == 2);
  CHECK(b.output.find("--csv: '" + big + "' is 268435457 bytes, larger than the limit of 268435456 bytes") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/fig.png"));
  CHECK_FALSE(std::filesystem::exists(dir + "/fig.svg"));
}
