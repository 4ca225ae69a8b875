#include "app/gui/model/training_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace mnemo::app {

TrainingProcess::~TrainingProcess() {
  if (pid_ > 0 && (state_ == State::kRunning || state_ == State::kPaused)) {
    if (state_ == State::kPaused) ::kill(-pid_, SIGCONT);
    ::kill(pid_, SIGTERM);
    int st = 0;
    ::waitpid(pid_, &st, 0);
  }
}

bool TrainingProcess::start(const std::string& config, const std::string& out, bool resume,
                            const std::vector<std::string>& sets, std::string* error, int nproc) {
  poll();
  if (state_ == State::kRunning || state_ == State::kPaused) {
    if (error) *error = "a training run is still going (" + out_ + "); stop it first";
    return false;
  }
  if (out.empty() || (!resume && config.empty())) {
    if (error) *error = resume ? "resume: no session directory given" : "start: give a config (sessions/*.json) and an output directory";
    return false;
  }
  std::vector<std::string> args = {program_, "train", "--out", out};
  if (!config.empty() && !resume) {
    args.push_back("--config");
    args.push_back(config);
  }
  if (resume) args.push_back("--resume");
  if (nproc > 1) {
    args.push_back("--nproc");
    args.push_back(std::to_string(nproc));
  }
  for (const auto& s : sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  // The log goes beside the session and train makes the session itself, but the folder that
  // holds both may not exist yet: on a fresh account ~/.local/share/mnemoscope/sessions does not.
  const std::string log = out + ".log";
  const std::filesystem::path parent = std::filesystem::path(out).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    std::filesystem::create_directories(parent, ec);
    if (ec) {
      if (error) *error = "cannot create the folder " + parent.string() + " for the training session: " + ec.message() +
                          "; pick a session directory in a folder you can write to";
      return false;
    }
  }
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (error) *error = "cannot write the training log " + log + ": " + std::strerror(errno) + "; pick a writable directory";
    return false;
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    if (error) *error = std::string("cannot start training: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    ::setpgid(0, 0);  // its own process group: pause/resume reach every rank of a --nproc run
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    const int null_in = ::open("/dev/null", O_RDONLY);
    if (null_in >= 0) ::dup2(null_in, 0);
    ::execv(argv[0], argv.data());
    const char msg[] = "mnemoscope: cannot start the training program\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(fd);
  ::setpgid(pid, pid);  // also from here, so the group exists before the first signal
  pid_ = pid;
  out_ = out;
  state_ = State::kRunning;
  exit_code_ = -1;
  return true;
}

void TrainingProcess::pause() {
  if (poll() == State::kRunning && ::kill(-pid_, SIGSTOP) == 0) state_ = State::kPaused;
}

void TrainingProcess::resume() {
  if (poll() == State::kPaused && ::kill(-pid_, SIGCONT) == 0) state_ = State::kRunning;
}

void TrainingProcess::stop() {
  const State s = poll();
  if (s != State::kRunning && s != State::kPaused) return;
  if (s == State::kPaused) ::kill(-pid_, SIGCONT);
  ::kill(pid_, SIGTERM);  // a --nproc launcher forwards it to its ranks
  state_ = State::kRunning;
}

void TrainingProcess::checkpoint_now() {
  if (poll() == State::kRunning) ::kill(pid_, SIGUSR1);
}

TrainingProcess::State TrainingProcess::poll() {
  if (pid_ <= 0 || state_ == State::kExited || state_ == State::kIdle) return state_;
  int st = 0;
  const pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    state_ = State::kExited;
    exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    pid_ = -1;
  }
  return state_;
}

std::string TrainingProcess::last_line() const {
  if (out_.empty()) return "";
  std::ifstream in(log_path(), std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = size > 4096 ? size - 4096 : 0;
  in.seekg(from);
  std::string tail((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& c : tail)
    if (c == '\r') c = '\n';
  size_t end = tail.find_last_not_of("\n ");
  if (end == std::string::npos) return "";
  size_t begin = tail.rfind('\n', end);
  return tail.substr(begin == std::string::npos ? 0 : begin + 1, end - (begin == std::string::npos ? 0 : begin + 1) + 1);
}

}  // namespace mnemo::app
