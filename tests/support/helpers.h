// Small helpers shared by the test suites: tiny configs, temp directories, files, the
// environment, and running the built program.
#pragma once
#include "core/models/config.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace mnemo::test {

// The repository's root and the built `mnemoscope`, absolute paths (tests/support/paths.cpp).
const char* source_dir();
const char* program_path();
#define MNEMO_SOURCE_DIR (::mnemo::test::source_dir())
#define MNEMO_BINARY (::mnemo::test::program_path())

// A tiny Memformer config for fast tests.
inline ModelConfig tiny_memformer(int64_t slots = 4, int64_t len = 8) {
  ModelConfig c;
  c.slots = slots;
  c.segment_len = len;
  c.dim = 16;
  c.heads = 2;
  c.layers = 2;
  c.dec_layers = 1;
  c.ff = 32;
  c.n_cls = 1;
  c.temperature = 0.25;
  return c;
}

// A tiny decoder-only model (rmt, rmt-write-only, trxl, trxl-rmt, transformer) for fast tests.
inline ModelConfig tiny_decoder(const std::string& kind, int64_t slots = 3, int64_t len = 6) {
  ModelConfig c;
  c.model = kind;
  c.slots = slots;
  c.segment_len = len;
  c.dim = 16;
  c.heads = 2;
  c.layers = 2;
  c.ff = 32;
  return c;
}

// A tiny training config of MTN on the QA task (answer tagging), 2 reading chunks + the query.
inline nlohmann::json tiny_mtn_qa_json(int64_t record_every = 0) {
  auto j = nlohmann::json::parse(R"({
    "model": {"model": "mtn", "slots": 4, "segment_len": 48, "dim": 16, "heads": 2, "ff": 32, "n1_layers": 1, "n2_layers": 1},
    "task": {"name": "qa", "chunk_len": 48, "doc_chunks": 2, "facts": 1, "candidates": 2, "train_size": 32,
             "valid_size": 8, "test_size": 8},
    "train": {"steps": 2, "batch": 4, "eval_batches": 1, "record_every": 0}})");
  j["train"]["record_every"] = record_every;
  return j;
}

// The tiny run the training tests share (trainer, recording, the dashboard's training, the
// distributed CLI): a 1-layer RMT (dim 16) copying 3 of 4 symbols across 2 segments; a few
// milliseconds a step. `train` is the test's own "train" section; a Memformer gets 3 slots and
// one decoder layer. Tests edit the fields they are about.
inline nlohmann::json tiny_copy_run(const nlohmann::json& train, const std::string& model = "rmt") {
  auto j = nlohmann::json::parse(R"({
    "model": {"model": "rmt", "slots": 2, "segment_len": 6, "dim": 16, "heads": 2, "layers": 1, "ff": 32},
    "task": {"name": "copy", "source_len": 3, "symbols": 4, "segments": 2, "train_size": 64, "valid_size": 16, "test_size": 16}
  })");
  j["model"]["model"] = model;
  if (model == "memformer") {
    j["model"]["slots"] = 3;
    j["model"]["dec_layers"] = 1;
  }
  j["train"] = train;
  return j;
}

// The tiny default model (Memformer) as command-line flags, for `step` runs of the CLI tests.
inline const std::string kTinyStepFlags = " --slots 4 --segment-len 16 --dim 16 --heads 2 --layers 1 --dec-layers 1";

// A seeded CPU generator.
inline torch::Generator cpu_generator(uint64_t seed) { return torch::make_generator<at::CPUGeneratorImpl>(seed); }

inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

// A fresh empty temp directory.
inline std::string temp_dir(const std::string& tag) {
  std::string tmpl = "/tmp/mnemo-test-" + tag + "-XXXXXX";
  char* p = ::mkdtemp(tmpl.data());
  return p ? std::string(p) : std::string();
}

// Runs a shell command line (stderr merged into output); code -1 when it could not be
// started or did not exit normally.
struct CliRun {
  int code = -1;
  std::string output;
};
inline CliRun run_shell(const std::string& command_line) {
  const std::string cmd = command_line + " 2>&1";
  CliRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int st = ::pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

#ifdef MNEMO_BINARY
// Runs the built `mnemoscope` with `args`, as run_shell.
inline CliRun run_cli(const std::string& args) { return run_shell(std::string(MNEMO_BINARY) + " " + args); }
#endif

inline bool path_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// Writes `text` to `path` (binary), creating or truncating it.
inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}
// The whole file ("" when it cannot be read).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A file that exists and is not empty.
inline bool file_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && st.st_size > 0;
}

// Sets an environment variable for a scope and restores what was there.
class EnvGuard {
 public:
  EnvGuard(const char* name, const std::string& value) : name_(name) {
    if (const char* v = std::getenv(name)) {
      had_ = true;
      old_ = v;
    }
    ::setenv(name, value.c_str(), 1);
  }
  ~EnvGuard() {
    if (had_) ::setenv(name_.c_str(), old_.c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

}  // namespace mnemo::test
