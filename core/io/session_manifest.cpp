// Session manifest, file names and path rules without LibTorch; see core/io/session_manifest.h.
#include "core/io/session_manifest.h"

#include "core/io/json_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>

namespace mnemo::io {

namespace {

std::string program_name() {
#ifdef MNEMO_VERSION
  return std::string("mnemoscope ") + MNEMO_VERSION;
#else
  return "mnemoscope";
#endif
}

}  // namespace

void check_session_format(const nlohmann::json& m, const std::string& where) {
  if (!m.is_object()) throw SessionError(where + ": manifest is not a JSON object");
  auto it = m.find("format_version");
  if (it == m.end() || !it->is_number_integer() || it->get<int64_t>() < 1)
    throw SessionError(where + ": manifest has no format_version (a positive integer: the session format's major version); "
                       "it was not written by mnemoscope or its Python package");
  const int64_t major = it->get<int64_t>();
  int64_t minor = 0;
  auto mi = m.find("format_minor");
  if (mi != m.end()) {
    if (!mi->is_number_integer() || mi->get<int64_t>() < 0)
      throw SessionError(where + ": manifest's format_minor " + mi->dump() + " is not a non-negative integer");
    minor = mi->get<int64_t>();
  }
  if (major > kSessionFormatVersion)
    throw SessionError(where + ": session format version " + std::to_string(major) + "." + std::to_string(minor) +
                       " is newer than the " + std::to_string(kSessionFormatVersion) + "." + std::to_string(kSessionFormatMinor) +
                       " this reader supports (" + program_name() + "); update mnemoscope to read it");
}

nlohmann::json parse_session_manifest(std::string_view text, const std::string& where) {
  if (text.size() > kMaxManifestBytes)
    throw SessionError(where + ": manifest is larger than the limit of " + std::to_string(kMaxManifestBytes) +
                       " bytes; it is not a session manifest");
  nlohmann::json m;
  try {
    m = parse_json(text);
  } catch (const nlohmann::json::exception& e) {
    throw SessionError(where + ": manifest is not valid JSON (" + std::string(e.what()) + ")");
  }
  check_session_format(m, where);
  return m;
}

std::string step_file_name(int64_t step) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "step-%09lld.safetensors", static_cast<long long>(step));
  return buf;
}

std::optional<int64_t> parse_step_file_name(const std::string& name) {
  static const std::string kPrefix = "step-", kSuffix = ".safetensors";
  if (name.size() < kPrefix.size() + 9 + kSuffix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0 ||
      name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
    return std::nullopt;
  const size_t digits = name.size() - kPrefix.size() - kSuffix.size();
  if (digits > 18) return std::nullopt;  // fits int64 without overflow
  int64_t step = 0;
  for (size_t i = kPrefix.size(); i < kPrefix.size() + digits; ++i) {
    const char c = name[i];
    if (c < '0' || c > '9') return std::nullopt;
    step = step * 10 + (c - '0');
  }
  if (step_file_name(step) != name) return std::nullopt;  // one spelling per step
  return step;
}

std::optional<int64_t> parse_latest_pointer(std::string_view text) {
  const size_t nl = text.find('\n');
  return parse_step_file_name(std::string(text.substr(0, nl)));
}

std::string outside_session(const std::string& dir, const std::string& rel) {
  if (rel.empty() || rel[0] == '/') return "'" + rel + "' is not a path inside the session";
  std::string path = dir;
  size_t at = 0;
  while (at <= rel.size()) {
    size_t slash = rel.find('/', at);
    if (slash == std::string::npos) slash = rel.size();
    const std::string part = rel.substr(at, slash - at);
    if (part.empty() || part == "." || part == "..") return "'" + rel + "' is not a path inside the session";
    path += "/" + part;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return "";  // missing: nothing to follow
    if (S_ISLNK(st.st_mode))
      return "'" + rel.substr(0, slash) + "' is a symbolic link; a session reads only files inside its directory";
    at = slash + 1;
  }
  return "";
}

}  // namespace mnemo::io
