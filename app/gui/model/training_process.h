// Training from the desktop app (docs/gui.md#training-dashboard-and-replay): `mnemoscope train` run as a child process of the
// app, controlled with signals, and watched through its session files like any CLI run
// (the dashboard follows the directory). A process rather than a thread in the app: the
// run writes exactly the session a CLI run writes (crash-safe, resumable), a crash or NaN in
// training cannot take the app down, and pause/resume cost nothing (SIGSTOP / SIGCONT).
//   start   train --config F --out DIR [--set ...] [--nproc N]   (or --out DIR --resume to continue)
//   pause   SIGSTOP          resume  SIGCONT   (to the child's process group: with --nproc N,
//           the launcher and its N ranks; a distributed run paused longer than its
//           --dist-timeout may fail on resume, as the ranks cannot tell a pause from a hang)
//   stop    SIGTERM: train stops after the current step, saves a checkpoint, exits 130
//   checkpoint now  SIGUSR1: train saves after the current step
// Its stdout/stderr go to DIR.log (beside the session directory; the folder holding both is
// created when missing, as on a fresh account's default sessions folder); last_line() is the
// newest progress line. Not thread-safe: use from the UI thread.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace mnemo::app {

class TrainingProcess {
 public:
  enum class State { kIdle, kRunning, kPaused, kExited };
  explicit TrainingProcess(std::string program = "/proc/self/exe") : program_(std::move(program)) {}
  ~TrainingProcess();  // a run still going is stopped (SIGTERM: it saves) and waited for
  TrainingProcess(const TrainingProcess&) = delete;
  TrainingProcess& operator=(const TrainingProcess&) = delete;
  // The mnemoscope binary to run (default: this program; tests pass the built binary).
  void set_program(std::string program) { program_ = std::move(program); }

  // Starts a new run into `out` (must not exist) or, with resume, continues `out`. Returns
  // false with *error set when a run is still going or the process cannot be started.
  // nproc > 1: a local distributed run (`train --nproc N`, docs/training.md#distributed).
  bool start(const std::string& config, const std::string& out, bool resume, const std::vector<std::string>& sets,
             std::string* error, int nproc = 1);
  void pause();
  void resume();
  void stop();
  void checkpoint_now();
  // Reaps the process when it has exited; call every frame (cheap).
  State poll();
  State state() const { return state_; }
  int exit_code() const { return exit_code_; }  // after kExited: 0 done, 130 stopped, 1 NaN, 2 bad input
  const std::string& out_dir() const { return out_; }
  std::string log_path() const { return out_ + ".log"; }
  // The newest non-empty line of the log (progress or error), "" when none.
  std::string last_line() const;

 private:
  std::string program_;
  pid_t pid_ = -1;
  State state_ = State::kIdle;
  int exit_code_ = -1;
  std::string out_;
};

}  // namespace mnemo::app
