// Replay and the training dashboard without a window: a session recorded by the
// trainer is replayed through the ReplayController (no model is built: the panels show the
// recorded traces), the dashboard follows the metrics log as it grows (a NaN step included,
// a resume rebuilding the curves), and its export writes every chart.
// (tests/support/gui_test.h includes LibTorch before doctest: glog's CHECK clashes with doctest's.)
#include "tests/support/gui_test.h"  // helpers, doctest and, with the GUI, the null backend and wait_worker
#ifdef MNEMO_WITH_GUI
#include "app/gui/shell/layout.h"
#include "app/gui/model/replay.h"
#include "app/gui/model/training_process.h"
#include "core/io/session.h"
#include "core/train/recorder.h"
#include "core/train/trainer.h"

#include "app/gui/panels/widgets/assert.h"
#include "app/gui/panels/widgets/fonts.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <stdexcept>

using namespace mnemo;
using namespace mnemo::app;

namespace {



// A session as `mnemoscope train` writes it, from a tiny model of `model`: step records
// 1..steps and probe recordings at 0 and every 2 steps. Returns the directory.
std::string record_session(const std::string& name, const std::string& model, int steps) {
  auto j = test::tiny_copy_run(
      nlohmann::json::parse(R"({"steps": 100, "batch": 4, "lr": 1e-2, "warmup": 2, "eval_every": 0})"), model);
  TrainingConfig cfg = TrainingConfig::from_json(j);
  Trainer t(cfg);
  const std::string dir = test::temp_dir("dash-" + name) + "/s";
  auto s = io::Session::create(dir, {{"kind", "train"}, {"config", cfg.to_json()}});
  const Document probe = probe_document(t.task(), 8);
  record_into_session(s, t.model(), probe, t.task().segment_len(), 0);
  for (int i = 0; i < steps; ++i) {
    // Memformer predicts the next segment, which the copy task's last target does not
    // give; its records are written as if trained (the recordings are real).
    StepMetrics m;
    if (model == "memformer") {
      m.step = i + 1;
      m.loss = 3.0 - 0.1 * i;
      m.lr = 1e-2;
    } else {
      m = t.train_step();
    }
    s.append_metrics({{"type", "step"}, {"step", m.step}, {"loss", m.loss}, {"accuracy", m.accuracy}, {"lr", m.lr},
                      {"grad_norm", m.grad_norm}, {"tokens_per_s", m.tokens_per_s}, {"peak_rss_mib", 100.0 + i}});
    if (m.step % 2 == 0) {
      record_into_session(s, t.model(), probe, t.task().segment_len(), m.step);
      s.append_metrics({{"type", "eval"}, {"step", m.step}, {"split", "valid"}, {"loss", m.loss}, {"accuracy", 0.5}});
    }
  }
  return dir;
}

}  // namespace

TEST_CASE("replay: a recorded session steps through its probe with no model - bad requests are errors, not crashes") {
  const std::string dir = record_session("replay", "rmt", 4);
  ReplayController r(dir);
  CHECK(r.latest());
  CHECK_FALSE(r.latest()->info);  // nothing selected yet
  REQUIRE(r.select_recording(4));
  ViewPtr v = r.latest();
  REQUIRE(v->info);
  REQUIRE(v->step);
  CHECK(v->info->num_segments == 2);
  CHECK(v->info->cfg.model == "rmt");
  CHECK(v->position == 0);
  CHECK_FALSE(v->step->attention.empty());  // the RMT attention of the recording
  r.step(+1);
  CHECK(r.latest()->position == 1);
  r.step(+1);  // past the end: stays
  CHECK(r.latest()->position == 1);
  // Another recording keeps the segment shown.
  REQUIRE(r.select_recording(0));
  CHECK(r.latest()->position == 1);
  CHECK(r.recording_step() == 0);
  CHECK(r.take_errors().empty());
  CHECK_FALSE(r.select_recording(3));  // not recorded
  r.apply_model(ModelConfig{}, 0, "");
  r.open_document("/etc/hostname");
  auto errs = r.take_errors();
  REQUIRE(errs.size() == 3);
  CHECK(errs[0].find("cannot replay step 3") != std::string::npos);
  CHECK(errs[1].find("no model to change") != std::string::npos);
  CHECK(r.recording_step() == 0);  // the previous recording stays
  CHECK_THROWS_AS(ReplayController(dir + "/nope"), std::runtime_error);
}

TEST_CASE("dashboard: replays and follows a session in the null-backend GUI, NaN marked, resume rebuilds, export writes every chart") {
  for (std::string model : {"rmt", "memformer"}) {
    CAPTURE(model);
    const std::string dir = record_session("follow-" + model, model, 6);
    ui::NullTextureApi textures;
    test::NullImGui ui(1600.f, 900.f);
    {
      ReplayController replay(dir);
      Shell shell(&textures, ui.fonts, nullptr, nullptr);
      shell.open_dashboard(dir, &replay);
      REQUIRE(shell.dashboard().model().run_log());
      CHECK(shell.dashboard().model().run_log()->steps.size() == 6);
      CHECK(replay.recording_step() == 6);  // the newest recording is shown
      auto session = io::Session::open(dir);
      for (int f = 0; f < 100; ++f) {
        ImGuiIO& io = ImGui::GetIO();
        io.MousePos = ImVec2(static_cast<float>((f * 97) % 1600), static_cast<float>(500 + (f * 37) % 380));
        io.MouseDown[0] = f % 9 == 4;
        if (f == 30) session.append_metrics({{"type", "step"}, {"step", 7}, {"loss", nullptr}, {"non_finite", true}});
        if (f == 31) shell.dashboard().model().poll();
        if (f == 40) {
          session.append_metrics({{"type", "resume"}, {"step", 4}});
          session.append_metrics({{"type", "step"}, {"step", 5}, {"loss", 0.5}});
          shell.dashboard().model().poll();
        }
        if (f == 60) io.DisplaySize = ImVec2(1280.f, 720.f);
        if (f == 70) replay.jump(1);
        ui.frame(shell, replay.latest(), replay);
        if (f == 32) {
          const RunLog& log = *shell.dashboard().model().run_log();
          REQUIRE(log.steps.size() == 7);
          CHECK(std::isnan(log.curves("loss")[0].y.back()));
        }
        if (f == 41) CHECK(shell.dashboard().model().run_log()->steps.size() == 5);  // 1..4, then the new 5
      }
      CHECK(replay.take_errors().empty());
      CHECK(replay.latest()->position == 1);

      // The dashboard export: every chart with data, PNG + SVG + CSV.
      ExportRequest req;
      req.panel = PanelId::kDashboard;
      req.run_log = std::make_shared<const RunLog>(*shell.dashboard().model().run_log());
      req.dir = dir + "/export";
      auto paths = export_panel(req);
      CHECK(test::file_exists(dir + "/export/dashboard/loss.png"));
      CHECK(test::file_exists(dir + "/export/dashboard/loss.csv"));
      CHECK(test::file_exists(dir + "/export/dashboard/lr.svg"));
      CHECK(test::file_exists(dir + "/export/dashboard/peak-memory.png"));
      if (model == "rmt") CHECK(test::file_exists(dir + "/export/dashboard/block-mass.png"));
      else CHECK(test::file_exists(dir + "/export/dashboard/slot-types.png"));
      CHECK(paths.size() >= 15);
    }
  }
}

TEST_CASE("dashboard: a damaged metrics.log is read past - the gap is named as export names it and drawn on the charts") {
  const std::string dir = record_session("gap", "rmt", 6);
  // Damage the payload of the third step record.
  const auto clean = io::read_framed_log(dir + "/metrics.log");
  std::vector<size_t> step_records;
  for (size_t i = 0; i < clean.records.size(); ++i)
    if (clean.records[i].find("\"type\":\"step\"") != std::string::npos) step_records.push_back(i);
  REQUIRE(step_records.size() == 6);
  std::string bytes = test::read_file(dir + "/metrics.log");
  bytes[clean.offsets[step_records[2]] + 20] ^= 0x40;
  test::write_file(dir + "/metrics.log", bytes);
  io::LogReadResult read;
  const auto session = io::Session::open(dir, 3, io::SessionAccess::kReadOnly);
  const auto records = session.read_metrics(&read);
  const RunLog want = parse_run_log(records, read);
  REQUIRE(want.gaps.size() == 1);
  CHECK(want.steps.size() == 5);

  ui::NullTextureApi textures;
  test::NullImGui ui(1600.f, 900.f);
  ReplayController replay(dir);
  Shell shell(&textures, ui.fonts, nullptr, nullptr);
  shell.open_dashboard(dir, &replay);
  const RunLog* log = shell.dashboard().model().run_log();
  REQUIRE(log);
  REQUIRE(log->gaps.size() == 1);
  CHECK(describe_gap(log->gaps[0]) == describe_gap(want.gaps[0]));
  CHECK(log->steps.size() == 5);
  for (int f = 0; f < 60; ++f) {  // the pointer sweeps the charts: bands, tooltips
    ImGui::GetIO().MousePos = ImVec2(static_cast<float>((f * 53) % 1600), static_cast<float>(520 + (f * 29) % 360));
    ui.frame(shell, replay.latest(), replay);
  }
  CHECK(replay.take_errors().empty());
}

TEST_CASE("cli: gui --session and --compare reject what is not a session before any window opens") {
  auto run = [](const std::string& args) {
    test::CliRun r = test::run_cli(args);
    return std::make_pair(r.code, r.output);
  };
  const std::string dir = test::temp_dir("gui-session-cli");
  auto a = run("gui --session " + dir + "/missing --session-wait 0 --quit");
  CHECK(a.first == 2);
  CHECK(a.second.find("--session: " + dir + "/missing: not a session") != std::string::npos);
  // Waited for, then said with what to do.
  a = run("gui --session " + dir + "/missing --session-wait 0.3 --quit");
  CHECK(a.first == 2);
  CHECK(a.second.find("gui: waiting up to 0.3 s for a training session in " + dir + "/missing") != std::string::npos);
  CHECK(a.second.find("--session: no training session appeared in '" + dir + "/missing' within 0.3 s; start `mnemoscope "
                      "train --out " + dir + "/missing`") != std::string::npos);
  // What Session::create makes before its manifest (checkpoints/, traces/) is a session being
  // created: waited for, not refused as "not a session" (a race seen under load).
  {
    const std::string half = dir + "/half";
    test::run_shell("mkdir -p " + half + "/checkpoints " + half + "/traces");
    auto h = run("gui --session " + half + " --session-wait 0.3 --quit");
    CHECK(h.first == 2);
    CHECK(h.second.find("gui: waiting up to 0.3 s for a training session in " + half) != std::string::npos);
    CHECK(h.second.find("no training session appeared in '" + half + "'") != std::string::npos);
  }
  // A session that appears while it waits is opened: with no display the next check (the
  // window) is what fails, so the session's were passed.
  {
    test::EnvGuard no_display("DISPLAY", "");
    test::EnvGuard no_wayland("WAYLAND_DISPLAY", "");
    const std::string run_dir = dir + "/later";
    const test::CliRun r = test::run_shell("(sleep 1; " + std::string(MNEMO_BINARY) + " --threads 1 train --config " +
                                           std::string(MNEMO_SOURCE_DIR) + "/sessions/copy-rmt-tiny.json --out " + run_dir +
                                           " --steps 2 --set train.eval_every=0 --set train.record_every=0 >/dev/null 2>&1) & " +
                                           std::string(MNEMO_BINARY) + " gui --session " + run_dir +
                                           " --session-wait 60 --quit 2>&1; s=$?; wait; exit $s");
    CAPTURE(r.output);
    CHECK(r.code == 2);
    CHECK(r.output.find("gui: waiting up to 60 s") != std::string::npos);
    CHECK(r.output.find("no display for the window") != std::string::npos);
  }
  // A folder that holds other files and no manifest is no session: said at once.
  test::write_file(dir + "/notes.txt", "x");
  auto n = run("gui --session " + dir + " --quit");
  CHECK(n.first == 2);
  CHECK(n.second.find("waiting") == std::string::npos);
  auto b = run("gui --compare " + dir + " --quit");
  CHECK(b.first == 2);
  CHECK(b.second.find("--compare overlays a second session") != std::string::npos);
  auto c = run("gui --session " + dir + " --doc /etc/hostname --quit");
  CHECK(c.first == 2);
}

TEST_CASE("training from the app: start, pause, resume, checkpoint now, stop (saves), continue to the end") {
  const std::string dir = test::temp_dir("train-proc");
  auto j = test::tiny_copy_run(nlohmann::json::parse(
      R"({"steps": 400, "batch": 4, "lr": 1e-2, "warmup": 2, "eval_every": 0, "save_every": 0, "record_every": 50})"));
  const std::string cfg = dir + "/tiny.json";
  std::ofstream(cfg) << j.dump();
  const std::string out = dir + "/run";
  DashboardModel dash;
  dash.training().set_program(MNEMO_BINARY);
  std::string err;
  REQUIRE(dash.start_training(cfg, out, &err));
  TrainingProcess& tp = dash.training();
  CHECK_FALSE(dash.start_training(cfg, out, &err));  // one run at a time
  CHECK(err.find("still going") != std::string::npos);
  auto wait_for = [](const std::function<bool()>& ok, double seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    while (!ok()) {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::duration<double>(seconds)) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  };
  // The dashboard follows the run once its session exists.
  REQUIRE(wait_for([&] { dash.poll(); return dash.run_log() && dash.run_log()->steps.size() >= 5; }, 60));
  CHECK(dash.dir() == out);
  tp.pause();
  CHECK(tp.state() == TrainingProcess::State::kPaused);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a step in flight finishes
  dash.poll();
  const size_t paused_at = dash.run_log()->steps.size();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  dash.poll();
  CHECK(dash.run_log()->steps.size() == paused_at);  // no progress while paused
  tp.resume();
  CHECK(tp.state() == TrainingProcess::State::kRunning);
  tp.checkpoint_now();
  REQUIRE(wait_for([&] { return !io::Session::open(out, 3, io::SessionAccess::kReadOnly).checkpoint_steps().empty(); }, 60));
  tp.stop();
  REQUIRE(wait_for([&] { return tp.poll() == TrainingProcess::State::kExited; }, 60));
  CHECK(tp.exit_code() == 130);  // stopped: saved
  auto latest = io::Session::open(out, 3, io::SessionAccess::kReadOnly).load_latest();
  REQUIRE(latest);
  CHECK(latest->step < 400);
  CHECK(tp.last_line().find("--resume") != std::string::npos);
  // Continue: --resume to the end.
  REQUIRE(dash.start_training("", out, &err));
  REQUIRE(wait_for([&] { return tp.poll() == TrainingProcess::State::kExited; }, 120));
  CHECK(tp.exit_code() == 0);
  CHECK(io::Session::open(out, 3, io::SessionAccess::kReadOnly).load_latest()->step == 400);
  dash.poll();
  CHECK(dash.run_log()->steps.size() == 400);
  CHECK(dash.run_log()->resumes == 1);
  // A run that cannot start says why.
  TrainingProcess bad;
  CHECK_FALSE(bad.start("", "", false, {}, &err));
  CHECK(err.find("give a config") != std::string::npos);
}

TEST_CASE("training from the app on a fresh account: Start into the default sessions folder creates the folders it needs") {
  // A new user's HOME: no ~/.local/share at all (Train > Start failed with "cannot write the
  // training log ...: No such file or directory").
  const std::string home = test::temp_dir("fresh-home");
  test::EnvGuard h("HOME", home), x("XDG_DATA_HOME", ""), m("MNEMO_SESSIONS", "");
  const std::string dir = test::temp_dir("fresh-cfg");
  auto j = test::tiny_copy_run(nlohmann::json::parse(
      R"({"steps": 2, "batch": 4, "lr": 1e-2, "warmup": 1, "eval_every": 0, "save_every": 0, "record_every": 0})"));
  const std::string cfg = dir + "/fresh-tiny.json";
  std::ofstream(cfg) << j.dump();
  DashboardModel dash;
  dash.training().set_program(MNEMO_BINARY);
  std::string err;
  REQUIRE_MESSAGE(dash.start_training(cfg, "", &err), err);  // "" = the session field left at its default
  TrainingProcess& tp = dash.training();
  const auto t0 = std::chrono::steady_clock::now();
  while (tp.poll() != TrainingProcess::State::kExited && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::string session = home + "/.local/share/mnemoscope/sessions/fresh-tiny";
  INFO(test::read_file(session + ".log"));
  REQUIRE(tp.state() == TrainingProcess::State::kExited);
  CHECK(tp.exit_code() == 0);
  CHECK(tp.out_dir() == session);
  CHECK(test::path_exists(session + "/checkpoints/step-000000002.safetensors"));
  // A folder that cannot be made (a file in its way) is refused naming it and the fix.
  test::write_file(dir + "/blocked", "a file");
  CHECK_FALSE(dash.start_training(cfg, dir + "/blocked/sessions/run", &err));
  CHECK(err.find("cannot create the folder " + dir + "/blocked/sessions for the training session") != std::string::npos);
  CHECK(err.find("pick a session directory in a folder you can write to") != std::string::npos);
}

TEST_CASE("training from the app: the dashboard's probe example is the test example the run records - a bad one exits 2") {
  const std::string dir = test::temp_dir("probe-example");
  auto j = test::tiny_copy_run(nlohmann::json::parse(
      R"({"steps": 1, "batch": 4, "lr": 1e-2, "warmup": 1, "eval_every": 0, "save_every": 0, "record_every": 1})"));
  const std::string cfg = dir + "/tiny.json";
  std::ofstream(cfg) << j.dump();
  DashboardModel dash;
  dash.training().set_program(MNEMO_BINARY);
  CHECK(dash.start_sets().empty());  // the config's own probe
  dash.set_probe_example(-7);
  CHECK(dash.probe_example() == -1);
  dash.set_probe_example(2);
  CHECK(dash.start_sets() == std::vector<std::string>{"train.record_example=2"});
  auto run = [&](const std::string& out) {
    std::string err;
    REQUIRE_MESSAGE(dash.start_training(cfg, out, &err), err);
    TrainingProcess& tp = dash.training();
    const auto t0 = std::chrono::steady_clock::now();
    while (tp.poll() != TrainingProcess::State::kExited && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    REQUIRE(tp.state() == TrainingProcess::State::kExited);
    return tp.exit_code();
  };
  REQUIRE(run(dir + "/run") == 0);
  auto session = io::Session::open(dir + "/run");
  REQUIRE(!session.trace_steps().empty());
  const std::string path = session.trace_path(session.trace_steps().front());
  std::map<std::string, std::string> meta;
  const ReplayedProbe back = read_recording(io::load_safetensors(path, &meta), meta, path);
  const Task task(TaskConfig::from_json(j["task"]));
  CHECK(std::string(back.doc.bytes) == task.example(Split::kTest, 2).text());
  CHECK(std::string(back.doc.bytes) != task.example(Split::kTest, 0).text());
  // Past the test split (16 examples): train refuses it (exit 2) and makes no session.
  dash.set_probe_example(16);
  CHECK(run(dir + "/bad") == 2);
  CHECK_FALSE(test::path_exists(dir + "/bad/manifest.json"));
}

TEST_CASE("dashboard: a distributed run's line names the world size, each rank's tokens/s and the slowest rank") {
  DistributedStatus d;
  CHECK(distributed_summary(d).empty());  // one process
  d.world_size = 2;
  d.rank_tokens_per_s = {12345.0, 980.0};
  d.rank_seconds = {0.5, 0.75};
  d.slowest_rank = 1;
  d.allreduce_share = 0.042;
  CHECK(distributed_summary(d) ==
        "2 ranks \xC2\xB7 rank 0 12.3k tok/s \xC2\xB7 rank 1 980 tok/s \xC2\xB7 slowest: rank 1 \xC2\xB7 allreduce 4% of the step");
  // From step records as train writes them: the newest one counts.
  RunLog log = parse_run_log({{{"type", "step"}, {"step", 1}, {"seconds", 1.0}, {"world_size", 2},
                               {"rank_seconds", {0.9, 0.2}}, {"rank_tokens_per_s", {100.0, 450.0}}, {"allreduce_seconds", 0.1}},
                              {{"type", "step"}, {"step", 2}, {"seconds", 2.0}, {"world_size", 2},
                               {"rank_seconds", {0.3, 0.6}}, {"rank_tokens_per_s", {300.0, 150.0}}, {"allreduce_seconds", 0.5}}});
  const DistributedStatus s = log.distributed_status();
  CHECK(s.world_size == 2);
  CHECK(s.step == 2);
  CHECK(s.slowest_rank == 1);
  CHECK(s.allreduce_share == doctest::Approx(0.25));
  CHECK(s.rank_tokens_per_s == std::vector<double>{300.0, 150.0});
  REQUIRE(log.curves("rank-tokens-per-s").size() == 2);
  CHECK(log.curves("rank-tokens-per-s")[1].y == std::vector<double>{450.0, 150.0});
  CHECK(log.curves("allreduce-share")[0].y == std::vector<double>{0.1, 0.25});
}

TEST_CASE("training from the app with 2 processes: every rank pauses and resumes, stop saves, the header names the ranks") {
  const std::string dir = test::temp_dir("train-proc2");
  auto j = test::tiny_copy_run(nlohmann::json::parse(
      R"({"steps": 100000, "batch": 4, "lr": 1e-2, "warmup": 2, "eval_every": 0, "save_every": 0, "record_every": 0})"));
  const std::string cfg = dir + "/tiny.json";
  std::ofstream(cfg) << j.dump();
  const std::string out = dir + "/run";
  DashboardModel dash;
  dash.training().set_program(MNEMO_BINARY);
  dash.set_train_nproc(2);
  std::string err;
  REQUIRE(dash.start_training(cfg, out, &err));
  TrainingProcess& tp = dash.training();
  auto wait_for = [](const std::function<bool()>& ok, double seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    while (!ok()) {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::duration<double>(seconds)) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  };
  REQUIRE(wait_for([&] { dash.poll(); return dash.run_log() && dash.run_log()->steps.size() >= 5; }, 90));
  const std::string line = distributed_summary(dash.run_log()->distributed_status());
  CHECK_MESSAGE(line.find("2 ranks") == 0, line);
  CHECK_MESSAGE(line.find("slowest: rank") != std::string::npos, line);
  tp.pause();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  dash.poll();
  const size_t paused_at = dash.run_log()->steps.size();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  dash.poll();
  CHECK(dash.run_log()->steps.size() == paused_at);  // rank 0 is stopped too, not only the launcher
  tp.resume();
  REQUIRE(wait_for([&] { dash.poll(); return dash.run_log()->steps.size() > paused_at + 3; }, 60));
  tp.stop();
  REQUIRE(wait_for([&] { return tp.poll() == TrainingProcess::State::kExited; }, 60));
  CHECK(tp.exit_code() == 130);
  auto latest = io::Session::open(out, 3, io::SessionAccess::kReadOnly).load_latest();
  REQUIRE(latest);
  CHECK(latest->step > 0);
}

TEST_CASE("dashboard config editor: loads, rejects a bad field by name without writing, saves a good edit atomically") {
  const std::string dir = test::temp_dir("cfg-edit");
  DashboardModel dash;
  std::string err;
  CHECK_FALSE(dash.edit_config(dir + "/missing.json", &err));
  CHECK(err.find("cannot open config") != std::string::npos);
  const std::string src = std::string(MNEMO_SOURCE_DIR) + "/sessions/copy-rmt-tiny.json";
  REQUIRE(dash.edit_config(src, &err));
  std::ifstream in(src);
  nlohmann::json j = nlohmann::json::parse(in);
  j["train"]["lr"] = -1;
  CHECK_FALSE(dash.save_config(j.dump(), dir + "/bad.json", &err));
  CHECK(err.find("train.lr") != std::string::npos);
  CHECK_FALSE(test::file_exists(dir + "/bad.json"));
  CHECK_FALSE(dash.save_config("{ not json", dir + "/bad.json", &err));
  CHECK(err.find("not valid JSON") != std::string::npos);
  j["train"]["lr"] = 0.002;
  j["train"]["steps"] = 7;
  REQUIRE(dash.save_config(j.dump(), dir + "/good.json", &err));
  TrainingConfig c = TrainingConfig::load(dir + "/good.json");
  CHECK(c.train.steps == 7);
  CHECK(c.train.lr == doctest::Approx(0.002));
}

TEST_CASE("dashboard: the layout gives it the lower part and tiles the rest") {
  LayoutHint hint;
  hint.memformer = false;
  hint.dashboard = true;
  const ImVec2 wp(0, 22), ws(1920, 1058);
  const PanelRect d = default_panel_rect(PanelId::kDashboard, wp, ws, hint);
  CHECK(d.size.x == doctest::Approx(1920));
  CHECK(d.pos.y + d.size.y == doctest::Approx(1080));
  for (PanelId id : {PanelId::kControls, PanelId::kDocument, PanelId::kAttention}) {
    const PanelRect r = default_panel_rect(id, wp, ws, hint);
    CHECK(r.pos.y + r.size.y <= d.pos.y + 0.5f);
  }
}
#endif

#ifdef MNEMO_WITH_GUI
TEST_CASE("gui --session --export: the export request carries the dashboard's curves with the maps - the title names the session") {
  const std::string dir = record_session("export-all", "rmt", 4);
  ui::NullTextureApi textures;
  test::NullImGui ui(1600.f, 900.f);
  ReplayController replay(dir);
  Shell shell(&textures, ui.fonts, nullptr, nullptr);
  shell.open_dashboard(dir, &replay);
  for (int f = 0; f < 4; ++f) ui.frame(shell, replay.latest(), replay);
  // What `gui --session DIR --export OUT` and File > Export all panels ask for.
  const ExportRequest req = shell.export_request(PanelId::kControls, replay.latest(), dir + "/out");
  REQUIRE(req.run_log);
  auto paths = export_panel(req);
  CHECK(test::file_exists(dir + "/out/dashboard/loss.png"));
  CHECK(test::file_exists(dir + "/out/dashboard/loss.csv"));
  bool map = false;
  for (const auto& p : paths) map = map || p.find("seg-0000-attention") != std::string::npos;
  CHECK(map);
  const std::string title = window_title(*replay.latest());
  CHECK(title.find("session " + dir) != std::string::npos);
  CHECK(title.find("traces/") == std::string::npos);
}
#endif
