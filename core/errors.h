// The errors a user can cause and fix. Every one says what is wrong, with which input (a
// config field, a file, a flag's value) and, where it helps, how to fix it. The program's
// edges map them: the CLI prints "mnemoscope: error: <what>" and exits with code 2 (nothing
// written), the desktop app shows a popup and keeps running. Anything else that escapes is
// a bug in Mnemoscope (exit code 1, "internal error"); internal invariants use TORCH_CHECK
// or assertions. docs/architecture.md, "Errors", has the table.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>

namespace mnemo {

// Base of every user-facing error.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A configuration problem: what() names the field, the value and the allowed range, and
// field() the field itself as a dotted path ("slots", "model.slots", "train.lr",
// "task.segments"; "" when no one field is at fault), so the command line can name the
// flag that set it without reading the message (core/io/config_fields.h builds these).
struct ConfigError : Error {
  using Error::Error;
  ConfigError(const std::string& what, std::string field) : Error(what), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// A value or file the user gave cannot be used as asked (a document, a data set, a range
// of steps, a curve name, a selection): what() names it and says what would work.
struct InputError : Error {
  using Error::Error;
};

// A file's content is malformed, truncated, or of another kind or version than expected
// (safetensors, sessions, metrics logs, checkpoints): what() names the file and the fault.
struct FormatError : Error {
  using Error::Error;
};

// The file system refused (open, write, rename, fsync, mkdir): what() names the path and
// the system's reason.
struct IoError : Error {
  using Error::Error;
};

}  // namespace mnemo
