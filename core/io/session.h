// A session directory (docs/formats.md#sessions):
//   manifest.json   format version, model/train/data config, creation time, program version
//   checkpoints/    step-<NNNNNNNNN>.safetensors, each written atomically; `latest` names the
//                   newest good one (written atomically too); only the last keep_last are kept
//   metrics.log     append-only framed JSON records (core/io/framed_log.h)
//   traces/         step-<NNNNNNNNN>.safetensors recorded traces of a probe document
// Crash safety: every file is either complete or absent; temp files left by a crash are
// removed when the session is opened; a corrupt newest checkpoint falls back to the
// previous good one, and the fallback is reported.
#pragma once
#include "core/errors.h"
#include "core/io/framed_log.h"
#include "core/io/safetensors.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mnemo::io {

// Session format version (docs/formats.md "Format version"): manifest.json's integer
// "format_version" is the major version, "format_minor" (absent = 0) the minor one. A minor
// version only adds things an older reader may ignore; a new major version changes what
// existing files mean, so a reader rejects a newer major version with a message naming both.
inline constexpr int kSessionFormatVersion = 1;  // major
inline constexpr int kSessionFormatMinor = 0;

// A session problem a user can act on; what() names the file and the fix.
struct SessionError : FormatError {
  using FormatError::FormatError;
};

// Where sessions live by default: `root` when given, else $MNEMO_SESSIONS, else
// $XDG_DATA_HOME/mnemoscope/sessions (~/.local/share/mnemoscope/sessions).
std::string sessions_root(const std::string& root = "");
// Where `train --config F` puts its session without --out: sessions_root(root)/<F's name
// without directory and .json>.
std::string default_session_dir(const std::string& config, const std::string& root = "");

struct LoadedCheckpoint {
  int64_t step = -1;
  std::string path;
  NamedTensors tensors;
  std::map<std::string, std::string> metadata;
  std::vector<std::string> skipped;  // "file: reason" for each newer checkpoint that failed to load
};

// kReadOnly: for watching a session another process is writing (the app following a CLI
// run) or replaying one: opening removes nothing, creates nothing, and every write throws.
enum class SessionAccess { kWrite, kReadOnly };

// Checks manifest.json's format version; `where` names the manifest in the message. Throws
// SessionError when "format_version" is missing or not a positive integer, when
// "format_minor" is present but not a non-negative integer, and when the major version is
// newer than kSessionFormatVersion ("...: session format version 2.0 is newer than the 1.0
// this reader supports (mnemoscope 0.1.0); update mnemoscope to read it"). A newer minor
// version of the same major version is accepted.
void check_session_format(const nlohmann::json& manifest, const std::string& where);

class Session {
 public:
  // Creates `dir` (must not exist or be empty) with its manifest. `manifest` gets
  // format_version, format_minor, created and program_version added. Throws SessionError / IoError.
  static Session create(const std::string& dir, nlohmann::json manifest, int keep_last = 3);
  // Opens an existing session: reads and checks the manifest; for writing it also removes
  // stale temp files (never open for writing a session another process is still writing).
  static Session open(const std::string& dir, int keep_last = 3, SessionAccess access = SessionAccess::kWrite);
  bool read_only() const { return read_only_; }

  const std::string& dir() const { return dir_; }
  const nlohmann::json& manifest() const { return manifest_; }
  int keep_last() const { return keep_last_; }

  // Writes checkpoints/step-N.safetensors atomically, then `latest`, then prunes old ones.
  // Returns the path. On failure (e.g. disk full) nothing previously saved is touched.
  std::string save_checkpoint(int64_t step, const NamedTensors& tensors,
                              const std::map<std::string, std::string>& metadata = {});
  // Steps of the checkpoint files present, ascending.
  std::vector<int64_t> checkpoint_steps() const;
  // The checkpoint `latest` names, or — when it is missing or corrupt — the newest that
  // loads; skipped files are listed with their reasons. nullopt when none loads.
  std::optional<LoadedCheckpoint> load_latest() const;
  std::string checkpoint_path(int64_t step) const;

  // Cuts a damaged tail off metrics.log (a record torn by a crash), so records appended
  // after a resume are readable; returns what was dropped ("" when the log was clean).
  // A log damaged in the middle loses everything after the damage, which no reader could
  // reach anyway. Call before appending to a session that was interrupted.
  std::string repair_metrics_log();

  // Appends one JSON record to metrics.log (flushed; fsynced when `sync`).
  void append_metrics(const nlohmann::json& record, bool sync = false);
  // Every complete record; `read` reports where a damaged log stopped.
  std::vector<nlohmann::json> read_metrics(LogReadResult* read = nullptr) const;

  std::string save_trace(int64_t step, const NamedTensors& tensors, const std::map<std::string, std::string>& metadata = {});
  std::vector<int64_t> trace_steps() const;
  std::string trace_path(int64_t step) const;

  // Removes temp files left by an interrupted write; returns how many.
  int remove_stale_temp_files() const;

 private:
  Session(std::string dir, nlohmann::json manifest, int keep_last, bool read_only);
  void check_writable(const char* what) const;
  std::string dir_;
  nlohmann::json manifest_;
  int keep_last_;
  bool read_only_ = false;
  std::shared_ptr<FramedLogWriter> metrics_;  // opened on the first append
};

}  // namespace mnemo::io
