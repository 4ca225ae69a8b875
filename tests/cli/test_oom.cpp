// Out of memory survived (docs/reliability.md#out-of-memory): `step` and `train` run in a
// child process whose address space is capped with setrlimit(RLIMIT_AS), so a segment or a
// training batch cannot be allocated. They must say "out of memory at <what>, needed ~X" and
// exit 2; the session's last checkpoint must still load.
#include "core/io/session.h"
#include "core/platform/memory.h"
#include "core/train/run_log.h"
#include "tests/support/helpers.h"
#include "tests/support/skip.h"

#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <regex>

namespace {

using mnemo::test::CliRun;

// Room above what a tiny run needs: enough for a small step or batch, far too little for a
// segment of 65536 tokens or a batch of millions.
constexpr rlim_t kRoom = rlim_t{1} << 30;

// Runs the built program with `args` in a child under RLIMIT_AS = `limit` bytes (0: none),
// stdout and stderr captured. Everything the child needs is prepared before fork().
CliRun run_limited(const std::string& args, rlim_t limit) {
  const std::string cmd = std::string(MNEMO_BINARY) + " " + args;
  CliRun r;
  int fds[2];
  if (::pipe(fds) != 0) return r;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    if (limit) {
      struct rlimit rl {limit, limit};
      ::setrlimit(RLIMIT_AS, &rl);
    }
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) r.output.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// VmPeak (bytes) of `mnemoscope ARGS`, sampled from /proc/PID/status every 50 ms while it
// runs: the address space a run of that size needs here (LibTorch's libraries, thread stacks).
rlim_t vm_peak_of(const std::string& args) {
  const std::string cmd = "sh -c '" + std::string(MNEMO_BINARY) + " " + args +
                          " >/dev/null 2>&1 & p=$!; peak=0; while kill -0 $p 2>/dev/null; do "
                          "v=$(awk \"/VmPeak/{print \\$2}\" /proc/$p/status 2>/dev/null); "
                          "[ -n \"$v\" ] && [ \"$v\" -gt \"$peak\" ] && peak=$v; sleep 0.05; done; echo $peak'";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return 0;
  unsigned long long kib = 0;
  if (std::fscanf(p, "%llu", &kib) != 1) kib = 0;
  ::pclose(p);
  return static_cast<rlim_t>(kib) * 1024;
}

}  // namespace

TEST_CASE("out of memory: step and train under RLIMIT_AS say what needed how much, exit 2, and keep the checkpoint") {
  const std::string dir = mnemo::test::temp_dir("oom");
  const std::string doc = std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt";
  const std::string tiny = " --model rmt --slots 2 --segment-len 16 --dim 16 --heads 2 --layers 1";
  const rlim_t base = vm_peak_of("step --doc " + doc + " --out " + dir + "/probe" + tiny + " --format csv");
  REQUIRE(base > 0);
  const rlim_t limit = base + kRoom;
  INFO("address-space cap " << (limit >> 20) << " MiB (a tiny step peaks at " << (base >> 20) << " MiB)");

  // The tiny step runs under the cap ...
  CliRun ok = run_limited("step --doc " + doc + " --out " + dir + "/ok" + tiny + " --to 0 --format csv", limit);
  INFO(ok.output);
  REQUIRE(ok.code == 0);
  // ... a segment of 65536 tokens cannot: its attention alone needs 16 GiB per head.
  CliRun big = run_limited("step --doc " + doc + " --out " + dir + "/big" + tiny + " --segment-len 65536 --to 0 --format csv",
                           limit);
  INFO(big.output);
  CHECK(big.code == 2);
  CHECK(big.output.find("mnemoscope: error: out of memory at segment 0 of '" + doc + "' (rmt, 65536 tokens per segment), needed ~") !=
        std::string::npos);
  CHECK(std::regex_search(big.output, std::regex(R"(needed ~[0-9.]+ (KiB|MiB|GiB|TiB))")));
  CHECK(big.output.find("internal error") == std::string::npos);

  // Training: a session with a checkpoint at step 2, then a resume whose batch cannot be
  // allocated under the cap.
  const std::string cfg = dir + "/tiny.json";
  std::ofstream(cfg) << R"({"model": {"model": "rmt", "slots": 2, "segment_len": 8, "dim": 16, "heads": 2, "layers": 1, "ff": 32},
    "task": {"name": "copy", "source_len": 3, "symbols": 4, "segments": 2, "train_size": 64, "valid_size": 8, "test_size": 8},
    "train": {"steps": 2, "batch": 4, "lr": 0.01, "warmup": 1, "eval_every": 0, "save_every": 1, "record_every": 0, "seed": 1}})";
  CliRun trained = run_limited("train --config " + cfg + " --out " + dir + "/run", limit);
  INFO(trained.output);
  REQUIRE(trained.code == 0);
  CliRun oom = run_limited("train --out " + dir + "/run --resume --steps 4 --set train.batch=1000000", limit);
  INFO(oom.output);
  CHECK(oom.code == 2);
  CHECK(oom.output.find("mnemoscope: error: out of memory at training step 3 (batch 1000000 x 2 segments of 5 tokens), "
                        "needed ~") != std::string::npos);
  CHECK(oom.output.find("the last checkpoint (step 2) is kept") != std::string::npos);
  // The checkpoint loads, and the log names the failure.
  auto s = mnemo::io::Session::open(dir + "/run", 3, mnemo::io::SessionAccess::kReadOnly);
  auto latest = s.load_latest();
  REQUIRE(latest);
  CHECK(latest->step == 2);
  CHECK(latest->skipped.empty());
  const auto log = mnemo::parse_run_log(s.read_metrics());
  REQUIRE_FALSE(log.errors.empty());
  CHECK(log.errors.back()["message"].get<std::string>().rfind("out of memory at training step 3", 0) == 0);
  // And training continues from it with a batch that fits.
  CliRun resumed = run_limited("train --out " + dir + "/run --resume --steps 3 --set train.batch=4", limit);
  INFO(resumed.output);
  CHECK(resumed.code == 0);
}

TEST_CASE("out of memory: CUDA's allocator error takes the CPU's path, naming the activity and the GPU request") {
  // The error LibTorch's CUDA caching allocator throws (c10::OutOfMemoryError, its message as
  // PyTorch 2.x words it). No GPU is needed to check the path it takes: the one every caller
  // (CLI, train, the app's worker) uses for the CPU allocator's error.
  const std::string cuda_text =
      "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.11 GiB of which "
      "3.06 MiB is free. Of the allocated memory 78.20 GiB is allocated by PyTorch.";
  try {
    mnemo::platform::MemoryActivity step("training step 7 (batch 32 x 6 segments)");
    throw c10::OutOfMemoryError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, cuda_text);
  } catch (const std::exception& e) {
    const auto msg = mnemo::platform::out_of_memory_message(e);
    REQUIRE(msg);
    CHECK(*msg == "out of memory at training step 7 (batch 32 x 6 segments), needed ~20.00 MiB on the GPU");
  }
  // LibTorch 1.x words it without the device sentence; anything else is not an OOM.
  const c10::Error old({__func__, __FILE__, 1}, "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 7.79 GiB total)");
  CHECK(mnemo::platform::out_of_memory_message(old, "building the model") ==
        "out of memory at building the model, needed ~2.00 GiB on the GPU");
  const c10::Error other({__func__, __FILE__, 1}, "CUDA error: an illegal memory access was encountered");
  CHECK_FALSE(mnemo::platform::out_of_memory_message(other).has_value());
}

TEST_CASE("out of memory: a real CUDA allocation past the GPU's memory takes the same path (GPU only)") {
  if (!torch::cuda::is_available()) {
    MNEMO_SKIP_WITHOUT_CUDA("no CUDA device is visible (or LibTorch was built without CUDA)");
  }
  // 1 TiB: more than any one GPU has. The caching allocator's own error, in this LibTorch's
  // own words, must come out as the CPU allocator's does, and the device must stay usable.
  try {
    mnemo::platform::MemoryActivity step("training step 1 (batch 1 x 1 segments of 1 tokens)");
    const auto t = torch::empty({int64_t{1} << 40}, torch::TensorOptions().dtype(torch::kUInt8).device(torch::kCUDA));
    CHECK(t.numel() == 0);  // not reached
    FAIL("1 TiB was allocated on the GPU");
  } catch (const std::exception& e) {
    INFO(e.what());
    const auto msg = mnemo::platform::out_of_memory_message(e);
    REQUIRE(msg);
    CHECK(msg->rfind("out of memory at training step 1 (batch 1 x 1 segments of 1 tokens), needed ~", 0) == 0);
    CHECK(std::regex_search(*msg, std::regex(R"(needed ~1024\.00 GiB on the GPU$|needed ~1\.00 TiB on the GPU$)")));
  }
  auto small = torch::ones({1024}, torch::TensorOptions().device(torch::kCUDA));
  CHECK(small.sum().item<double>() == 1024.0);
}
