// Recorded training sessions: probe recordings round-trip into the snapshots the
// engine made, the metrics log reads back as continuous curves across a resume (NaN kept),
// `mnemoscope export --session` writes curves and maps without a model, and `train` killed
// with SIGKILL at random moments always leaves a loadable latest checkpoint and resumes.
#include "core/io/session.h"
#include "core/models/factory.h"
#include "core/train/recorder.h"
#include "core/train/run_log.h"
#include "core/trace/keys.h"
#include "families/mtn/core/keys.h"
#include "core/train/trainer.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <thread>

using namespace mnemo;

namespace {

nlohmann::json tiny_json(const std::string& model) {
  return test::tiny_copy_run(
      nlohmann::json::parse(R"({"steps": 6, "batch": 4, "lr": 1e-2, "warmup": 2, "schedule": "linear", "clip": 1.0,
    "eval_every": 2, "eval_batches": 2, "save_every": 3, "record_every": 2, "seed": 4})"),
      model);
}

std::vector<std::string> list_dir(const std::string& d) {
  std::vector<std::string> out;
  if (DIR* dir = ::opendir(d.c_str())) {
    while (dirent* e = ::readdir(dir))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.push_back(e->d_name);
    ::closedir(dir);
  }
  return out;
}

int count_temp_files(const std::string& session) {
  int n = 0;
  for (const char* sub : {"", "/checkpoints", "/traces"})
    for (const auto& f : list_dir(session + sub))
      if (f.find(".tmp") != std::string::npos) ++n;
  return n;
}

}  // namespace

TEST_CASE("recording: a probe recording reads back into the engine's snapshots, and summarises by model") {
  for (std::string model : {"rmt", "memformer"}) {
    CAPTURE(model);
    TrainingConfig cfg = TrainingConfig::from_json(tiny_json(model));
    Trainer trainer(cfg);
    Document probe = probe_document(trainer.task(), 8);
    // The probe is test example 0 of the task: "<src>><src><src>" of 3 symbols.
    CHECK(probe.size() == 3 + 1 + 6);
    CHECK(probe.bytes[3] == '>');
    CHECK(probe.bytes.substr(4, 3) == probe.bytes.substr(0, 3));

    const bool was_training = trainer.model()->is_training();
    ProbeRecording rec = record_probe(trainer.model(), probe, trainer.task().segment_len(), 7);
    CHECK(trainer.model()->is_training() == was_training);  // the training mode is restored
    const std::string dir = test::temp_dir("recording-" + model);
    auto session = io::Session::create(dir + "/s", {{"kind", "test"}});
    const std::string path = session.save_trace(7, rec.tensors, rec.metadata);
    std::map<std::string, std::string> meta;
    ReplayedProbe back = read_recording(io::load_safetensors(path, &meta), meta, path);
    CHECK(back.train_step == 7);
    CHECK(back.doc.bytes == probe.bytes);
    REQUIRE(back.segments.size() == 2);

    // The same model stepped by a fresh engine gives the same traces.
    Engine engine(trainer.model(), probe, trainer.task().segment_len(), recording_trace_spec());
    trainer.model()->eval();
    for (int64_t i = 0; i < 2; ++i) {
      SnapshotPtr s = engine.step_forward();
      const auto& r = *back.segments[static_cast<size_t>(i)];
      CHECK(r.segment == i);
      CHECK(r.first_token == s->first_token);
      CHECK(r.length == s->length);
      CHECK(r.trace.tensors.size() == s->trace.tensors.size());
      for (const auto& [k, t] : s->trace.tensors) {
        CAPTURE(k);
        REQUIRE(r.trace.has(k));
        CHECK(torch::equal(r.trace.at(k), t));
      }
      if (std::isfinite(s->loss)) CHECK(r.loss == doctest::Approx(s->loss));
    }
    trainer.model()->train();

    nlohmann::json sum = summarize_recording(back);
    if (model == "rmt") {
      REQUIRE(sum.contains("rmt_block_mass"));
      for (const auto& [layer, v] : sum["rmt_block_mass"].items()) {
        REQUIRE(v.size() == 3);
        for (const auto& x : v) CHECK((x.get<double>() >= 0.0 && x.get<double>() <= 1.0 + 1e-6));
      }
      CHECK_FALSE(sum.contains("slot_types"));
    } else {
      REQUIRE(sum.contains("slot_types"));
      const double total = sum["slot_types"]["retain"].get<double>() + sum["slot_types"]["mix"].get<double>() +
                           sum["slot_types"]["overwrite"].get<double>();
      CHECK(total == doctest::Approx(1.0));
      REQUIRE(sum.contains("forget_norm"));
      CHECK(sum["forget_norm"]["min"].get<double>() <= sum["forget_norm"]["p50"].get<double>());
      CHECK(sum["forget_norm"]["p50"].get<double>() <= sum["forget_norm"]["max"].get<double>());
    }
  }
}

TEST_CASE("recording: an MTN trained on QA (answer tagging) records its probe: answer probabilities, no loss") {
  // A plain document has no answer labels: the engine steps it with no targets, so the probe
  // of a QA run records P(answer) per token instead of failing on next-token ids.
  auto j = test::tiny_mtn_qa_json(1);
  Trainer trainer(TrainingConfig::from_json(j));
  CHECK_FALSE(trainer.model()->predicts_tokens());
  Document probe = probe_document(trainer.task(), 8);
  ProbeRecording rec = record_probe(trainer.model(), probe, trainer.task().segment_len(), 1);
  const auto meta = nlohmann::json::parse(rec.metadata.at("probe"));
  const int64_t segs = meta.at("segments").get<int64_t>();
  REQUIRE(segs >= 2);
  for (int64_t i = 0; i < segs; ++i) {
    CAPTURE(i);
    CHECK(meta.at("loss")[static_cast<size_t>(i)].is_null());
    const std::string key = "s" + std::to_string(i) + "/" + keys::kQaAnswerProb;
    auto it = std::find_if(rec.tensors.begin(), rec.tensors.end(), [&](const auto& kv) { return kv.first == key; });
    REQUIRE(it != rec.tensors.end());
    const auto p = it->second;
    CHECK(p.min().item<float>() >= 0.f);
    CHECK(p.max().item<float>() <= 1.f);
  }
}

TEST_CASE("recording: a file that is not a recording is rejected naming it") {
  io::NamedTensors t = {{"x", torch::zeros({2})}};
  CHECK_THROWS_WITH_AS(read_recording(t, {}, "traces/step-1.safetensors"),
                       doctest::Contains("recording 'traces/step-1.safetensors' has no \"probe\" metadata"), std::runtime_error);
  std::map<std::string, std::string> meta = {{"probe", R"({"segments": 3, "segment_len": 4})"}};
  auto bytes = torch::full({5}, 'a', torch::kUInt8);
  io::NamedTensors t2 = {{"probe.bytes", bytes}};
  // 5 bytes in segments of 4 is 2 segments, not 3.
  CHECK_THROWS_WITH_AS(read_recording(t2, meta, "f"), doctest::Contains("says 3 segments"), std::runtime_error);
}

TEST_CASE("run log: a resume drops the records a crash lost, NaN comes back as NaN, curves by name") {
  std::vector<nlohmann::json> recs;
  for (int s = 1; s <= 5; ++s) recs.push_back({{"type", "step"}, {"step", s}, {"loss", 1.0 / s}, {"lr", 0.1}});
  recs.push_back({{"type", "eval"}, {"step", 4}, {"split", "valid"}, {"loss", 0.5}, {"accuracy", 0.25}});
  recs.push_back({{"type", "probe"}, {"step", 4}, {"slot_types", {{"retain", 0.5}, {"mix", 0.25}, {"overwrite", 0.25}}}});
  recs.push_back({{"type", "resume"}, {"step", 3}});  // steps 4 and 5 were lost
  recs.push_back({{"type", "step"}, {"step", 4}, {"loss", nullptr}, {"lr", 0.1}, {"non_finite", true}});
  recs.push_back({{"type", "error"}, {"step", 4}, {"message", "loss is NaN at step 4"}});
  RunLog log = parse_run_log(recs);
  CHECK(log.resumes == 1);
  REQUIRE(log.steps.size() == 4);
  CHECK(log.evals.empty());
  CHECK(log.probes.empty());
  CHECK(log.errors.size() == 1);
  auto loss = log.curves("loss");
  REQUIRE(loss.size() == 1);  // no valid evaluations left
  CHECK(loss[0].x == std::vector<double>{1, 2, 3, 4});
  CHECK(loss[0].y[2] == doctest::Approx(1.0 / 3));
  CHECK(std::isnan(loss[0].y[3]));
  CHECK(log.curves("perplexity")[0].y[0] == doctest::Approx(std::exp(1.0)));
  CHECK(log.curves("slot-types").empty());
  CHECK(log.last_step() == 4);
  CHECK_THROWS_WITH_AS(log.curves("losss"), doctest::Contains("unknown curve 'losss'; known: loss"), std::invalid_argument);
}

TEST_CASE("run log: a resume at a step drops that step's final evaluations and keeps its periodic one") {
  std::vector<nlohmann::json> recs;
  for (int s = 1; s <= 4; ++s) recs.push_back({{"type", "step"}, {"step", s}, {"loss", 1.0}});
  recs.push_back({{"type", "eval"}, {"step", 4}, {"split", "valid"}, {"loss", 0.5}});
  recs.push_back({{"type", "eval"}, {"step", 4}, {"split", "valid"}, {"loss", 0.5}, {"final", true}});
  recs.push_back({{"type", "eval"}, {"step", 2}, {"split", "test"}, {"loss", 0.7}, {"final", true}});  // not at 4
  recs.push_back({{"type", "resume"}, {"step", 4}});
  RunLog log = parse_run_log(recs);
  REQUIRE(log.evals.size() == 2);  // in step order
  CHECK(log.evals[0]["step"] == 2);
  CHECK(log.evals[1]["step"] == 4);
  CHECK_FALSE(log.evals[1].value("final", false));
  CHECK(log.steps.size() == 4);
}

TEST_CASE("run log: final evaluations - one row per split and ablation, and a curve point only where no periodic one was made") {
  std::vector<nlohmann::json> recs;
  for (int s = 1; s <= 5; ++s) recs.push_back({{"type", "step"}, {"step", s}, {"loss", 1.0}});
  recs.push_back({{"type", "eval"}, {"step", 4}, {"split", "valid"}, {"loss", 0.5}, {"accuracy", 0.6}});
  recs.push_back({{"type", "eval"}, {"step", 4}, {"split", "valid"}, {"zero_memory", true}, {"loss", 0.9}, {"accuracy", 0.2}});
  // The run ends at step 5 (not a multiple of eval_every): its final evaluations end the curves.
  recs.push_back({{"type", "eval"}, {"step", 5}, {"split", "test"}, {"loss", 0.45}, {"accuracy", 0.7}, {"final", true}});
  recs.push_back({{"type", "eval"}, {"step", 5}, {"split", "valid"}, {"zero_memory", true}, {"loss", 0.8}, {"accuracy", 0.3},
                  {"final", true}});
  recs.push_back({{"type", "eval"}, {"step", 5}, {"split", "valid"}, {"loss", 0.4}, {"accuracy", 0.75}, {"final", true},
                  {"bits_per_token", 0.577}});
  RunLog log = parse_run_log(recs);
  auto acc = log.curves("accuracy");  // the steps carry no accuracy: valid, then memory zeroed
  REQUIRE(acc.size() == 2);
  CHECK(acc[0].name == "valid");
  CHECK(acc[0].x == std::vector<double>{4, 5});
  CHECK(acc[0].y == std::vector<double>{0.6, 0.75});
  CHECK(acc[1].name == kValidZeroMemoryCurve);
  CHECK(acc[1].x == std::vector<double>{4, 5});
  CHECK(acc[1].y == std::vector<double>{0.2, 0.3});
  auto f = log.final_results();
  REQUIRE(f.size() == 3);  // valid, valid zeroed, test: in that order whatever the log's order
  CHECK((f[0].split == "valid" && !f[0].zero_memory && f[0].step == 5 && f[0].accuracy == 0.75));
  CHECK(f[0].bits_per_token == doctest::Approx(0.577));
  CHECK((f[1].split == "valid" && f[1].zero_memory && f[1].loss == 0.8));
  CHECK((f[2].split == "test" && !f[2].zero_memory));
  CHECK(f[2].bits_per_token == doctest::Approx(0.45 / std::log(2.0)));  // from the loss when not recorded
  CHECK(describe_final(f[1]) == "valid (memory zeroed): loss 0.8000, accuracy 0.3000");
  {  // A session that logs no accuracy (e.g. one written by a Python loop) shows none, not "nan".
    auto no_acc = recs;
    no_acc.push_back({{"type", "eval"}, {"step", 5}, {"split", "valid"}, {"loss", 0.4}, {"final", true}});
    auto g = parse_run_log(no_acc).final_results();
    REQUIRE(g.size() == 3);
    CHECK(std::isnan(g[0].accuracy));
    CHECK(describe_final(g[0]) == "valid: loss 0.4000");
  }

  // A periodic evaluation at the final step keeps the final one off the curve (no double point).
  recs.push_back({{"type", "eval"}, {"step", 5}, {"split", "valid"}, {"loss", 0.41}, {"accuracy", 0.74}});
  RunLog both = parse_run_log(recs);
  auto acc2 = both.curves("accuracy");
  CHECK(acc2[0].x == std::vector<double>{4, 5});
  CHECK(acc2[0].y == std::vector<double>{0.6, 0.74});
  CHECK(both.final_results().size() == 3);
}

TEST_CASE("run log follower: reads only what was appended, sees new recordings, rebuilds after a resume") {
  const std::string dir = test::temp_dir("follow-run") + "/s";
  auto s = io::Session::create(dir, {{"kind", "test"}});
  RunLogFollower f(dir);
  CHECK_FALSE(f.poll());  // nothing yet
  s.append_metrics({{"type", "step"}, {"step", 1}, {"loss", 2.0}});
  s.append_metrics({{"type", "step"}, {"step", 2}, {"loss", 1.0}});
  CHECK(f.poll());
  CHECK(f.log().steps.size() == 2);
  const uint64_t e0 = f.epoch();
  CHECK_FALSE(f.poll());
  s.save_trace(2, {{"probe.bytes", torch::zeros({1}, torch::kUInt8)}});
  s.append_metrics({{"type", "step"}, {"step", 3}, {"loss", 0.5}});
  CHECK(f.poll());
  CHECK(f.log().steps.size() == 3);
  CHECK(f.trace_steps() == std::vector<int64_t>{2});
  CHECK(f.epoch() == e0);  // appended only
  s.append_metrics({{"type", "resume"}, {"step", 2}});
  s.append_metrics({{"type", "step"}, {"step", 3}, {"loss", 0.25}});
  CHECK(f.poll());
  CHECK(f.epoch() == e0 + 1);  // step 3 of the lost run was dropped
  REQUIRE(f.log().steps.size() == 3);
  CHECK(f.log().steps[2]["loss"].get<double>() == 0.25);
  CHECK(f.problem().empty());
}

TEST_CASE("run log: damage in the middle is skipped and named by its bytes and steps, alike in the follower") {
  const std::string dir = test::temp_dir("gap-run") + "/s";
  {
    auto s = io::Session::create(dir, {{"kind", "test"}});
    for (int i = 1; i <= 60; ++i) s.append_metrics({{"type", "step"}, {"step", i}, {"loss", 1.0 / i}});
  }
  const std::string path = dir + "/metrics.log";
  const auto clean = io::read_framed_log(path);
  REQUIRE(clean.offsets.size() == 60);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // 64 scrambled bytes starting inside record 31 (step 32), in its length checksum.
  const size_t at = clean.offsets[31] + 5;
  for (size_t i = 0; i < 64; ++i) bytes[at + i] = static_cast<char>((i * 53 + 7) & 0xff);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  size_t last = 31;
  while (last + 1 < 60 && clean.offsets[last + 1] < at + 64) ++last;
  const auto session = io::Session::open(dir, 3, io::SessionAccess::kReadOnly);
  io::LogReadResult read;
  const auto records = session.read_metrics(&read);
  const RunLog log = parse_run_log(records, read);
  CHECK(log.steps.size() == 60 - (last - 31 + 1));
  CHECK(log.last_step() == 60);
  REQUIRE(log.gaps.size() == 1);
  const std::string want = "skipped bytes " + std::to_string(clean.offsets[31]) + "-" + std::to_string(clean.offsets[last + 1]) +
                           " of metrics.log (checksum mismatch in record length) between step 31 and step " +
                           std::to_string(last + 2);
  CHECK(describe_gap(log.gaps[0]) == want);
  // The follower (the dashboard) reads the log in pieces and names the gap the same way.
  RunLogFollower f(dir);
  CHECK(f.poll());
  REQUIRE(f.log().gaps.size() == 1);
  CHECK(describe_gap(f.log().gaps[0]) == want);
  CHECK(f.log().steps.size() == log.steps.size());
  CHECK(f.problem().empty());
  // A torn tail: not reported at the first poll that sees it (it may be a record being
  // written), reported when it is still there at the next.
  {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out.write("\x20\x00\x00", 3);
  }
  f.poll();
  CHECK(f.problem().empty());
  f.poll();
  CHECK(f.problem() == "torn tail: incomplete record header at byte " + std::to_string(bytes.size()));
  // A record that is not JSON is a gap too.
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  io::FramedLogWriter(path).append("not json");
  io::FramedLogWriter(path).append(R"({"type":"step","step":61,"loss":0.1})");
  RunLogFollower g(dir);
  g.poll();
  REQUIRE(g.log().gaps.size() == 2);
  CHECK(describe_gap(g.log().gaps[1]) == "skipped bytes " + std::to_string(bytes.size()) + "-" +
                                             std::to_string(bytes.size() + 20) +
                                             " of metrics.log (record is not valid JSON) between step 60 and step 61");
}

TEST_CASE("cli: train records probe traces - export writes curves and maps without a model - bad flags exit 2") {
  const std::string dir = test::temp_dir("export-cli");
  const std::string cfg = dir + "/tiny.json";
  std::ofstream(cfg) << tiny_json("rmt").dump(2);
  const std::string out = dir + "/run";
  auto r = test::run_cli("train --config " + cfg + " --out " + out);
  INFO(r.output);
  REQUIRE(r.code == 0);
  auto session = io::Session::open(out);
  CHECK(session.trace_steps() == std::vector<int64_t>{0, 2, 4, 6});
  RunLog log = parse_run_log(session.read_metrics());
  CHECK(log.probes.size() == 4);
  CHECK(log.curves("block-mass").size() == 3);  // one layer: reading, writing, rewriting
  // The copy task scores the copied symbols: the probe's loss over those is its own curve.
  auto probe_loss = log.curves("probe-loss");
  REQUIRE(probe_loss.size() == 2);
  CHECK(probe_loss[0].name == "probe loss");
  CHECK(probe_loss[1].name == "probe loss, scored tokens");
  CHECK(probe_loss[1].x == std::vector<double>{0, 2, 4, 6});
  CHECK(log.probes[0]["scored_tokens"] == 6);  // "abc>abcabc": the two copies of the 3 symbols
  CHECK(log.steps.back()["peak_rss_mib"].get<double>() > 1.0);

  auto e = test::run_cli("export --session " + out +
                         " --figure loss,block-mass,maps --steps 2-4 --format csv,svg --out " + dir + "/fig");
  INFO(e.output);
  CHECK(e.code == 0);
  CHECK(test::path_exists(dir + "/fig/loss.svg"));
  CHECK(test::path_exists(dir + "/fig/loss.csv"));
  CHECK(test::path_exists(dir + "/fig/block-mass.svg"));
  CHECK_FALSE(test::path_exists(dir + "/fig/lr.svg"));
  CHECK_FALSE(test::path_exists(dir + "/fig/maps/step-000000000"));  // outside --steps
  CHECK(test::path_exists(dir + "/fig/maps/step-000000002/segment-0001"));
  CHECK(test::path_exists(dir + "/fig/maps/step-000000004/segment-0000"));
  {
    std::ifstream in(dir + "/fig/loss.csv");
    std::string header, row;
    std::getline(in, header);
    CHECK(header == "series,step,value");
    int rows = 0;
    while (std::getline(in, row)) ++rows;
    // train steps 2, 3, 4, the valid evaluations at 2 and 4, and the same with memory zeroed
    CHECK(rows == 3 + 2 + 2);
  }
  CHECK_FALSE(test::path_exists(dir + "/fig/final_evaluation.csv"));  // the run ended at step 6, outside --steps 2-4
  {
    // The whole run: its end-of-run evaluations, valid and test, each with the memory zeroed.
    auto all = test::run_cli("export --session " + out + " --figure loss --format csv --out " + dir + "/fig-all");
    INFO(all.output);
    CHECK(all.code == 0);
    CHECK(all.output.find("final evaluation (4 rows)") != std::string::npos);
    std::ifstream in(dir + "/fig-all/final_evaluation.csv");
    std::string line;
    std::vector<std::string> lines;
    while (std::getline(in, line)) lines.push_back(line.substr(0, line.find(',', line.find(',', line.find(',') + 1) + 1)));
    CHECK(lines == std::vector<std::string>{"split,zero_memory,step", "valid,false,6", "valid,true,6", "test,false,6",
                                            "test,true,6"});
  }

  // Without --out the session goes under --sessions (default: the user data directory).
  auto rs =
      test::run_cli("train --config " + cfg + " --sessions " + dir + "/root --steps 2 --set train.record_every=0");
  INFO(rs.output);
  CHECK(rs.code == 0);
  CHECK(test::path_exists(dir + "/root/tiny/manifest.json"));
  CHECK(io::Session::open(dir + "/root/tiny").trace_steps().empty());  // recording off

  auto bad = test::run_cli("export --session " + out + " --figure lost");
  CHECK(bad.code == 2);
  CHECK(bad.output.find("--figure 'lost' is not a figure") != std::string::npos);
  auto bad2 = test::run_cli("export --session " + out + " --steps 9-3");
  CHECK(bad2.code == 2);
  CHECK(bad2.output.find("--steps '9-3'") != std::string::npos);
  auto bad3 = test::run_cli("export --session " + dir + "/nothing");
  CHECK(bad3.code == 2);
  CHECK(bad3.output.find("--session") != std::string::npos);
  // A range with no data: exit 2, nothing written (not even the folder).
  auto none = test::run_cli("export --session " + out + " --steps 500-600 --out " + dir + "/empty");
  CHECK(none.code == 2);
  CHECK(none.output.find("--steps 500-600: nothing to export in that range (its records reach step 6, recordings at "
                         "steps 0..6); nothing was written") != std::string::npos);
  CHECK_FALSE(test::path_exists(dir + "/empty"));
  // The same under the flag's own name: the message names the flag that was given.
  auto none_r = test::run_cli("export --session " + out + " --step-range 500-600 --out " + dir + "/empty");
  CHECK(none_r.code == 2);
  CHECK(none_r.output.find("--step-range 500-600: nothing to export in that range") != std::string::npos);
  CHECK(none_r.output.find("--steps 500") == std::string::npos);
  CHECK_FALSE(test::path_exists(dir + "/empty"));
  // A figure the run has no data for, alone: the same.
  auto none2 = test::run_cli("export --session " + out + " --figure hash-entropy --out " + dir + "/empty2");
  CHECK(none2.code == 2);
  CHECK(none2.output.find("--figure hash-entropy: the session has nothing to export") != std::string::npos);
  CHECK_FALSE(test::path_exists(dir + "/empty2"));
  // An --out that is a file: exit 2 before anything is written.
  std::ofstream(dir + "/afile") << "x";
  auto file_out = test::run_cli("export --session " + out + " --figure loss --out " + dir + "/afile/sub");
  CHECK(file_out.code == 2);
  CHECK(file_out.output.find("--out '" + dir + "/afile/sub' cannot be created") != std::string::npos);
}

// MNEMO_KILL_TRIALS=50 ./build/mnemo_tests -tc='*SIGKILL*' runs the full 50 trials.
TEST_CASE("train killed with SIGKILL at random moments: latest always loads, no temp files remain, resume finishes") {
  int trials = 3;
  if (const char* env = std::getenv("MNEMO_KILL_TRIALS")) trials = std::max(1, std::atoi(env));
  const std::string dir = test::temp_dir("kill9");
  auto j = tiny_json("rmt");
  j["train"]["steps"] = 60;
  j["train"]["save_every"] = 1;  // checkpoint every step: kills land inside writes
  j["train"]["record_every"] = 3;
  j["train"]["eval_every"] = 10;
  const std::string cfg = dir + "/tiny.json";
  std::ofstream(cfg) << j.dump(2);
  std::mt19937 rng(1234);
  int killed_mid_run = 0;
  // A kill can land after the run's end; more trials (up to 10) run until one lands mid-run.
  int t = 0;
  for (; t < trials || (killed_mid_run == 0 && t < trials + 10); ++t) {
    CAPTURE(t);
    const std::string out = dir + "/run" + std::to_string(t);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      const int null_fd = ::open("/dev/null", O_WRONLY);
      ::dup2(null_fd, 1);
      ::dup2(null_fd, 2);
      ::execl(MNEMO_BINARY, MNEMO_BINARY, "train", "--config", cfg.c_str(), "--out", out.c_str(), (char*)nullptr);
      ::_exit(127);
    }
    // Wait for the first checkpoint, then kill after a random delay.
    const auto start = std::chrono::steady_clock::now();
    while (!test::path_exists(out + "/checkpoints/latest") &&
           std::chrono::steady_clock::now() - start < std::chrono::seconds(60))
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 200000)(rng)));
    ::kill(pid, SIGKILL);
    int st = 0;
    ::waitpid(pid, &st, 0);
    const bool was_killed = WIFSIGNALED(st);

    auto session = io::Session::open(out);  // removes temp files of the interrupted write
    CHECK(count_temp_files(out) == 0);
    auto latest = session.load_latest();
    REQUIRE(latest.has_value());
    CHECK(latest->skipped.empty());
    CHECK(latest->step >= 1);
    // Resume finishes the run from there.
    auto res = test::run_cli("train --out " + out + " --resume");
    INFO(res.output);
    CHECK(res.code == 0);
    // A kill can land after the last checkpoint was written but before the process exited: then
    // the run is complete and --resume says so instead of resuming.
    const bool mid_run = was_killed && latest->step < 60;
    killed_mid_run += mid_run;
    if (mid_run) CHECK(res.output.find("resuming " + out + " from step " + std::to_string(latest->step)) != std::string::npos);
    else if (was_killed) CHECK(res.output.find("already at step 60 of 60") != std::string::npos);
    auto done = io::Session::open(out).load_latest();
    REQUIRE(done.has_value());
    CHECK(done->step == 60);
    // Metrics are continuous: steps 1..60 exactly once after the resume record.
    RunLog log = parse_run_log(io::Session::open(out).read_metrics());
    REQUIRE(log.steps.size() == 60);
    for (size_t i = 0; i < log.steps.size(); ++i) CHECK(log.steps[i]["step"].get<int64_t>() == static_cast<int64_t>(i) + 1);
  }
  MESSAGE(killed_mid_run << " of " << t << " trials were killed mid-run");
  CHECK(killed_mid_run >= 1);
}

TEST_CASE("recording: train.record_example chooses the probe - read, checked against the test split, round-tripped - "
          "the chosen example is recorded - export's map titles name the training step") {
  // The field: read, range-checked, written back.
  nlohmann::json j = tiny_json("rmt");
  CHECK(TrainingConfig::from_json(j).train.record_example == 0);  // test example 0 unless chosen
  j["train"]["record_example"] = 3;
  TrainingConfig cfg = TrainingConfig::from_json(j);
  CHECK(cfg.train.record_example == 3);
  CHECK(TrainingConfig::from_json(cfg.to_json()).train.record_example == 3);
  CHECK(cfg.to_json()["train"]["record_example"] == 3);
  j["train"]["record_example"] = -1;
  try {
    TrainingConfig::from_json(j);
    FAIL("a negative record_example was accepted");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("train.record_example") != std::string::npos);
  }

  // The probe is that test example, as the task itself writes it (Task::example), not example 0.
  Trainer trainer(cfg);
  const auto& task = dynamic_cast<const Task&>(trainer.task());
  const Document p3 = probe_document(task, 8, 3);
  CHECK(std::string(p3.bytes) == task.example(Split::kTest, 3).text());
  CHECK(std::string(p3.bytes) != task.example(Split::kTest, 0).text());
  CHECK(std::string(probe_document(task, 8).bytes) == task.example(Split::kTest, 0).text());
  CHECK(p3.path == "probe:copy/test/3");
  // Past the test split (16 examples): refused, naming the field and the range.
  try {
    check_probe_example(task, 16);
    FAIL("record_example 16 of a 16-example split was accepted");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "train.record_example = 16: the test split of task 'copy' has 16 examples (0..15); "
                                   "choose one of those");
  }

  // Through `train --set`: the recordings step example 3; export's maps say which training step.
  const std::string dir = test::temp_dir("record-example");
  const std::string cfg_path = dir + "/tiny.json";
  std::ofstream(cfg_path) << tiny_json("rmt").dump(2);
  auto r = test::run_cli("train --config " + cfg_path + " --out " + dir + "/run --set train.record_example=3");
  INFO(r.output);
  REQUIRE(r.code == 0);
  auto session = io::Session::open(dir + "/run");
  REQUIRE(session.trace_steps() == std::vector<int64_t>{0, 2, 4, 6});
  {
    const std::string path = session.trace_path(4);
    std::map<std::string, std::string> meta;
    ReplayedProbe back = read_recording(io::load_safetensors(path, &meta), meta, path);
    CHECK(std::string(back.doc.bytes) == task.example(Split::kTest, 3).text());
  }
  auto e = test::run_cli("export --session " + dir + "/run --figure maps --steps 4-4 --format svg --out " + dir + "/fig");
  INFO(e.output);
  REQUIRE(e.code == 0);
  const std::string svg = test::read_file(dir + "/fig/maps/step-000000004/segment-0001/rmt_attention_l0_mean.svg");
  CHECK(svg.find("segment 1, training step 4") != std::string::npos);

  // A probe past the split: exit 2 before the session is made.
  auto bad = test::run_cli("train --config " + cfg_path + " --out " + dir + "/bad --set train.record_example=16");
  CHECK(bad.code == 2);
  CHECK(bad.output.find("train.record_example = 16: the test split of task 'copy' has 16 examples (0..15)") !=
        std::string::npos);
  CHECK_FALSE(test::path_exists(dir + "/bad"));
  // Without recordings the field is not checked (nothing is probed).
  auto off = test::run_cli("train --config " + cfg_path + " --out " + dir + "/off --steps 1 --set train.record_every=0 "
                           "--set train.record_example=16");
  CHECK(off.code == 0);
}
