// The parts of a session directory read before any tensor (docs/formats.md#sessions,
// docs/reliability.md#sessions), without LibTorch: manifest.json and its format version,
// the checkpoint/trace file names, the `latest` pointer, and the rule that every file a
// session reads lies inside its directory (no symbolic link anywhere below it, no `..`).
// core/io/session.h builds on it; the fuzz targets (fuzz/) run it directly.
#pragma once
#include "core/errors.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mnemo::io {

// Session format version (docs/formats.md "Format version"): manifest.json's integer
// "format_version" is the major version, "format_minor" (absent = 0) the minor one. A minor
// version only adds things an older reader may ignore; a new major version changes what
// existing files mean, so a reader rejects a newer major version with a message naming both.
inline constexpr int kSessionFormatVersion = 1;  // major
inline constexpr int kSessionFormatMinor = 0;

// The largest manifest.json a session may have (docs/reliability.md#caps).
inline constexpr std::size_t kMaxManifestBytes = 1u << 20;  // 1 MiB

// A session problem a user can act on; what() names the file and the fix.
struct SessionError : FormatError {
  using FormatError::FormatError;
};

// Checks manifest.json's format version; `where` names the manifest in the message. Throws
// SessionError when "format_version" is missing or not a positive integer, when
// "format_minor" is present but not a non-negative integer, and when the major version is
// newer than kSessionFormatVersion ("...: session format version 2.0 is newer than the 1.0
// this reader supports (mnemoscope 0.1.0); update mnemoscope to read it"). A newer minor
// version of the same major version is accepted.
void check_session_format(const nlohmann::json& manifest, const std::string& where);

// Parses manifest.json's text (`where` names it): over kMaxManifestBytes, not JSON, or a bad
// format version is a SessionError.
nlohmann::json parse_session_manifest(std::string_view text, const std::string& where);

// "step-000000040.safetensors" -> 40; nullopt for any other name (exactly nine or more
// digits, no sign, nothing else).
std::optional<int64_t> parse_step_file_name(const std::string& name);
// The file name of step N ("step-000000040.safetensors").
std::string step_file_name(int64_t step);
// The step `latest` names: its first line must be a step file name (nothing else is ever
// opened through it: "../x" or "/etc/passwd" is nullopt).
std::optional<int64_t> parse_latest_pointer(std::string_view text);

// "" when `dir`/`rel` (rel: names joined by '/', no "..", no leading '/') can be read without
// leaving `dir`: no component below `dir` is a symbolic link. Else why not ("'checkpoints'
// is a symbolic link"). A component that does not exist is fine (nothing to follow).
std::string outside_session(const std::string& dir, const std::string& rel);

}  // namespace mnemo::io
