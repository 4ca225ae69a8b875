// The mnemoscope CLI, run as a user would: bad input exits 2 naming the flag or file
// and writes nothing; a good run writes traces and figures.
#include "core/io/safetensors.h"
#include "tests/support/cli_here.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>

using mnemo::test::CliRun;
using mnemo::test::path_exists;
using mnemo::test::run_cli;

namespace {

const std::string& kTiny = mnemo::test::kTinyStepFlags;

}  // namespace

TEST_CASE("cli: bad input exits 2 with a message naming the flag or file, and writes nothing") {
  const std::string dir = mnemo::test::temp_dir("cli");
  const std::string good = std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt";
  { std::ofstream(dir + "/empty.txt"); }
  { std::ofstream(dir + "/afile") << "x"; }
  struct Case {
    std::string args, expect;
  };
  const std::string out = dir + "/out";
  std::vector<Case> cases = {
      {"step --doc " + dir + "/missing.txt --out " + out + kTiny, "--doc: document '" + dir + "/missing.txt' cannot be opened"},
      {"step --doc " + dir + "/empty.txt --out " + out + kTiny, "is empty"},
      {"step --doc " + dir + " --out " + out + kTiny, "is a directory"},
      {"step --doc " + good + " --out " + out + kTiny + " --segment-len 0",
       "--segment-len: config field 'segment_len' = 0 is out of range 1..65536"},
      {"step --doc " + good + " --out " + out + kTiny + " --segment-len 65537",
       "--segment-len: config field 'segment_len' = 65537 is out of range 1..65536"},
      {"step --doc " + good + " --out " + out + kTiny + " --slots 0", "--slots: config field 'slots' = 0 is out of range 1..65536"},
      {"step --doc " + good + " --out " + out + kTiny + " --temperature 0", "--temperature"},
      {"step --doc " + good + " --out " + out + kTiny + " --temperature -1",
       "--temperature: config field 'temperature' = -1 is out of range (0, 100]"},
      {"step --doc " + good + " --out " + dir + "/afile/sub" + kTiny, "--out '" + dir + "/afile/sub' cannot be created"},
      {"step --doc " + good + " --out " + dir + "/afile" + kTiny, "exists and is not a directory"},
      {"step --doc " + good + " --out " + out + kTiny + " --format png,gif", "--format: unknown format 'gif'"},
      {"step --doc " + good + " --out " + out + kTiny + " --config " + dir + "/missing.json", "--config"},
      {"step --doc " + good + " --out " + out + kTiny + " --checkpoint " + dir + "/afile", "--checkpoint"},
      {"step --doc " + good + " --out " + out + kTiny + " --from 999", "--from 999 is out of range"},
      {"step --doc " + good + " --out " + out + kTiny + " --model nope",
       "--model: config field 'model' = 'nope' must be \"memformer\", \"rmt\", \"rmt-write-only\", \"trxl\", "
       "\"trxl-rmt\", \"transformer\", \"mtn\", \"mtn-naive\" or \"no-memory\""},
      {"step --out " + out, "--doc"},
      {"step --doc " + good + " --out " + out + kTiny + " --linear sparse",
       "--linear: config field 'linear' = 'sparse' must be \"dense\" or \"hashed\""},
      {"step --doc " + good + " --out " + out + kTiny + " --linear hashed --hash-bits 17",
       "--hash-bits: config field 'hash_bits' = 17 is out of range 1..16"},
      {"step --doc " + good + " --out " + out + kTiny + " --linear hashed --hash-bits 5", "hash_bits"},
#ifdef MNEMO_WITH_GUI
      // Checked before any window opens (so also without a display).
      {"gui --doc " + good + kTiny + " --model rmt --linear hashed --hash-bits 5 --quit", "hash_bits"},
      {"gui --doc " + good + kTiny + " --model mtn --linear dense --hash-bits 0 --quit",
       "--hash-bits: config field 'hash_bits' = 0 is out of range 1..16"},
#endif
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    CliRun r = mnemo::test::run_cli_here(c.args);  // in this process: the next case starts the program
    CAPTURE(r.output);
    CHECK(r.code == 2);
    CHECK(r.output.find(c.expect) != std::string::npos);
    CHECK_FALSE(path_exists(out));
  }
}

TEST_CASE("cli: a binary file steps - step writes traces with the canonical keys and figures") {
  const std::string dir = mnemo::test::temp_dir("cli-ok");
  {
    std::ofstream f(dir + "/blob.bin", std::ios::binary);
    for (int i = 0; i < 40; ++i) f.put(static_cast<char>((i * 37) & 0xff));
  }
  CliRun r = run_cli("step --doc " + dir + "/blob.bin --out " + dir + "/out" + kTiny +
                     " --from 0 --to 2 --format png,svg,csv");
  CAPTURE(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("randomly initialised") != std::string::npos);
  for (const char* f : {"step-0000/trace.safetensors", "step-0002/writer_attention_mean.png",
                        "step-0002/writer_attention_head1.svg", "step-0002/writer_attention_mean.csv",
                        "step-0001/slot_types.png", "step-0001/slot_types.csv", "step-0001/forgetting.svg",
                        "manifest.json"}) {
    CAPTURE(f);
    CHECK(path_exists(dir + "/out/" + f));
  }
  CHECK_FALSE(path_exists(dir + "/out/step-0003"));
  auto t = mnemo::io::load_safetensors(dir + "/out/step-0001/trace.safetensors");
  std::map<std::string, torch::Tensor> m(t.begin(), t.end());
  for (const char* k : {"input.tokens", "input.offsets", "lm.loss", "memformer.writer_attn", "memformer.read_attn.0",
                        "memformer.memory_prev", "memformer.memory", "memformer.forget_norm", "memformer.slot_type"}) {
    CAPTURE(k);
    CHECK(m.count(k) == 1);
  }
  CHECK(m["memformer.writer_attn"].sizes() == torch::IntArrayRef({1, 2, 4, 1 + 16 + 1}));
  CHECK((m["memformer.slot_type"].scalar_type() == torch::kInt8));
  CHECK(m["input.tokens"][0][0].item<int64_t>() == ((16 * 37) & 0xff));
}

TEST_CASE("cli: export-weights then step --checkpoint reproduces the same traces") {
  const std::string dir = mnemo::test::temp_dir("cli-ckpt");
  const std::string doc = std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt";
  CliRun w = run_cli("export-weights --out " + dir + "/w.safetensors --seed 5" + kTiny);
  CAPTURE(w.output);
  REQUIRE(w.code == 0);
  CliRun a = run_cli("step --doc " + doc + " --out " + dir + "/a --seed 5 --format csv --to 1" + kTiny);
  CliRun b = run_cli("step --doc " + doc + " --out " + dir + "/b --seed 99 --checkpoint " + dir +
                     "/w.safetensors --format csv --to 1" + kTiny);
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  CHECK(b.output.find("weights from") != std::string::npos);
  auto ta = mnemo::io::load_safetensors(dir + "/a/step-0001/trace.safetensors");
  auto tb = mnemo::io::load_safetensors(dir + "/b/step-0001/trace.safetensors");
  REQUIRE(ta.size() == tb.size());
  for (size_t i = 0; i < ta.size(); ++i) CHECK(torch::equal(ta[i].second, tb[i].second));
  // A checkpoint for another config is refused by name.
  CliRun c = run_cli("step --doc " + doc + " --out " + dir + "/c --checkpoint " + dir +
                     "/w.safetensors --slots 5 --segment-len 16 --dim 16 --heads 2 --layers 1 --dec-layers 1");
  CAPTURE(c.output);
  CHECK(c.code == 2);
  CHECK(c.output.find("model.slots: 4 vs 5") != std::string::npos);
  CHECK(c.output.find("leave out --slots") != std::string::npos);
}

TEST_CASE("cli: info reports LibTorch and CUDA") {
  CliRun r = run_cli("info");
  CHECK(r.code == 0);
  CHECK(r.output.find("LibTorch") != std::string::npos);
  CHECK(r.output.find("kernels:") != std::string::npos);
}

TEST_CASE("cli: plot draws one series per group from a CSV and rejects unknown columns") {
  const std::string dir = mnemo::test::temp_dir("plot");
  {
    std::ofstream f(dir + "/c.csv");
    f << "run,step,loss\na,1,3.0\na,2,2.5\nb,1,3.2\nb,2,\nb,3,2.0\n";
  }
  CliRun ok = run_cli("plot --csv " + dir + "/c.csv --x step --y loss --group run --title T --out " + dir + "/fig");
  CHECK(ok.code == 0);
  CHECK(ok.output.find("(2 series)") != std::string::npos);
  CHECK(path_exists(dir + "/fig.png"));
  CHECK(path_exists(dir + "/fig.svg"));
  CliRun bad = run_cli("plot --csv " + dir + "/c.csv --x step --y nope --out " + dir + "/bad");
  CHECK(bad.code == 2);
  CHECK(bad.output.find("no column 'nope'") != std::string::npos);
  CHECK(!path_exists(dir + "/bad.png"));
  // An --out whose folder is missing, or that is a folder: exit 2, nothing written.
  CliRun nodir = run_cli("plot --csv " + dir + "/c.csv --x step --y loss --out " + dir + "/missing/fig");
  CHECK(nodir.code == 2);
  CHECK(nodir.output.find("folder '" + dir + "/missing' does not exist") != std::string::npos);
  CliRun isdir = run_cli("plot --csv " + dir + "/c.csv --x step --y loss --out " + dir);
  CHECK(isdir.code == 2);
  CHECK(isdir.output.find("must be a path without extension") != std::string::npos);
}

TEST_CASE("cli: train validates every flag before it writes: a bad value leaves no session and no repaired log") {
  const std::string dir = mnemo::test::temp_dir("train-validate");
  const std::string cfg = std::string(MNEMO_SOURCE_DIR) + "/sessions/copy-rmt-tiny.json";
  CliRun neg = run_cli("train --config " + cfg + " --out " + dir + "/run --hash-stats-every -1");
  CHECK(neg.code == 2);
  CHECK(neg.output.find("--hash-stats-every must be >= 0") != std::string::npos);
  CHECK(!path_exists(dir + "/run"));
  CliRun zero = run_cli("train --config " + cfg + " --out " + dir + "/run --steps 0");
  CHECK(zero.code == 2);
  CHECK(zero.output.find("--steps 0 must be >= 1") != std::string::npos);
  CHECK(!path_exists(dir + "/run"));
  // A resume with a bad flag leaves the session's torn tail where it was (nothing is repaired).
  CliRun ok = run_cli("train --config " + cfg + " --out " + dir + "/run --steps 2 --set train.record_every=0");
  REQUIRE(ok.code == 0);
  {
    std::ofstream f(dir + "/run/metrics.log", std::ios::app | std::ios::binary);
    f.write("\x20\x00", 2);
  }
  struct stat before {};
  ::stat((dir + "/run/metrics.log").c_str(), &before);
  CliRun bad = run_cli("train --out " + dir + "/run --resume --set train.batch=0");
  CHECK(bad.code == 2);
  CHECK(bad.output.find("train.batch") != std::string::npos);
  struct stat after {};
  ::stat((dir + "/run/metrics.log").c_str(), &after);
  CHECK(after.st_size == before.st_size);
}

TEST_CASE("cli: a config error names the flag or the --set that set the field in front") {
  const std::string dir = mnemo::test::temp_dir("cli-field-flags");
  const std::string good = std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt";
  CliRun r = run_cli("step --doc " + good + " --out " + dir + "/out" + kTiny + " --slots 0");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.rfind("mnemoscope: error: --slots: config field 'slots' = 0 is out of range 1..65536\n", 0) == 0);
  CHECK_FALSE(path_exists(dir + "/out"));
  r = run_cli("step --doc " + good + " --out " + dir + "/out" + kTiny + " --layers 300");
  CAPTURE(r.output);
  CHECK(r.output.rfind("mnemoscope: error: --layers: config field 'layers' = 300 is out of range 1..256\n", 0) == 0);

  const std::string cfg = dir + "/tiny.json";
  mnemo::test::write_file(cfg, R"({"model": {"model": "rmt", "slots": 2, "segment_len": 8, "dim": 16, "heads": 2, "layers": 1},
                                   "task": {"name": "copy", "source_len": 4, "symbols": 4, "segments": 2},
                                   "train": {"steps": 2, "batch": 2}})");
  r = run_cli("train --config " + cfg + " --out " + dir + "/run --set train.eval_every=0 --set train.lr=0");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.rfind("mnemoscope: error: --set 'train.lr=0': config field 'train.lr' = 0 is out of range (0, 10]\n", 0) ==
        0);
  r = run_cli("train --config " + cfg + " --out " + dir + "/run --set model.slots=many");
  CAPTURE(r.output);
  CHECK(r.output.rfind("mnemoscope: error: --set 'model.slots=many': config field 'model.slots' must be an integer, got "
                       "\"many\"\n",
                       0) == 0);
  // A field no --set gave is the config's.
  r = run_cli("train --config " + cfg + " --out " + dir + "/run --set task.segments=1");
  CAPTURE(r.output);
  CHECK(r.output.rfind("mnemoscope: error: --config: '" + cfg + "' with --set: config field 'model.segment_len' = 8 is "
                       "shorter than the task's segments",
                       0) == 0);
  CHECK_FALSE(path_exists(dir + "/run"));
}
