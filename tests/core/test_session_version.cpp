// core/io/session: the session format version (docs/formats.md "Format version"). A reader
// opens its own major version with any minor version and rejects a newer major version with
// a message naming both versions; the Python package (python/mnemoscope) does the same, which
// python/tests/test_cross_language.py checks against this reader.
#include "core/io/session.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

using namespace mnemo::io;

namespace {

// A fresh empty directory of its own (self-contained: no shared test helpers).
std::string fresh_dir(const std::string& tag) {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/mnemo-version-" + tag + "-XXXXXX";
  REQUIRE(::mkdtemp(templ.data()) != nullptr);
  return templ;
}

// A session directory whose manifest.json is exactly `manifest`.
std::string session_with_manifest(const std::string& tag, const std::string& manifest) {
  const std::string dir = fresh_dir(tag);
  std::ofstream(dir + "/manifest.json") << manifest;
  return dir;
}

std::string open_error(const std::string& dir, SessionAccess access) {
  try {
    Session::open(dir, 3, access);
  } catch (const SessionError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("session format: a new session carries the major and minor version this program writes") {
  const std::string dir = fresh_dir("create") + "/run";
  Session s = Session::create(dir, {{"kind", "test"}});
  CHECK(s.manifest()["format_version"] == kSessionFormatVersion);
  CHECK(s.manifest()["format_minor"] == kSessionFormatMinor);
  Session again = Session::open(dir, 3, SessionAccess::kReadOnly);
  CHECK(again.manifest()["format_minor"] == kSessionFormatMinor);
}

TEST_CASE("session format: the same major version opens whatever its minor version") {
  const std::string major = std::to_string(kSessionFormatVersion);
  for (const std::string& manifest :
       {"{\"format_version\": " + major + "}",                           // written before format_minor existed
        "{\"format_version\": " + major + ", \"format_minor\": 0}",
        "{\"format_version\": " + major + ", \"format_minor\": 7, \"added_in_1_7\": [1, 2]}"}) {
    CAPTURE(manifest);
    const std::string dir = session_with_manifest("same", manifest);
    CHECK(open_error(dir, SessionAccess::kReadOnly).empty());
    CHECK(open_error(dir, SessionAccess::kWrite).empty());
  }
}

TEST_CASE("session format: a newer major version is rejected naming both versions, for reading and for writing") {
  const int newer = kSessionFormatVersion + 1;
  const std::string dir =
      session_with_manifest("newer", "{\"format_version\": " + std::to_string(newer) + ", \"format_minor\": 3}");
  const std::string ours = std::to_string(kSessionFormatVersion) + "." + std::to_string(kSessionFormatMinor);
  for (SessionAccess access : {SessionAccess::kReadOnly, SessionAccess::kWrite}) {
    const std::string e = open_error(dir, access);
    CHECK(e.find(dir + "/manifest.json") != std::string::npos);
    CHECK(e.find("session format version " + std::to_string(newer) + ".3 is newer than the " + ours +
                 " this reader supports") != std::string::npos);
    CHECK(e.find("update mnemoscope") != std::string::npos);
  }
  // Opening for writing did not touch the newer session (no checkpoints/ or traces/ made).
  CHECK(::access((dir + "/checkpoints").c_str(), F_OK) != 0);
  // Without format_minor the newer version reads as N.0.
  const std::string dir0 = session_with_manifest("newer0", "{\"format_version\": " + std::to_string(newer) + "}");
  CHECK(open_error(dir0, SessionAccess::kReadOnly).find("version " + std::to_string(newer) + ".0 is newer") != std::string::npos);
}

TEST_CASE("session format: a missing or malformed version is rejected with what is wrong") {
  struct Case {
    std::string manifest, expect;
  };
  for (const Case& c : {Case{"{}", "has no format_version"}, Case{"{\"format_version\": \"1\"}", "has no format_version"},
                        Case{"{\"format_version\": 1.5}", "has no format_version"},
                        Case{"{\"format_version\": 0}", "has no format_version"},
                        Case{"{\"format_version\": 1, \"format_minor\": -1}", "format_minor -1 is not a non-negative integer"},
                        Case{"{\"format_version\": 1, \"format_minor\": \"2\"}", "format_minor \"2\" is not"},
                        Case{"[1]", "manifest is not a JSON object"}}) {
    CAPTURE(c.manifest);
    const std::string e = open_error(session_with_manifest("bad", c.manifest), SessionAccess::kReadOnly);
    CHECK(e.find(c.expect) != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(check_session_format(nlohmann::json::object(), "somewhere/manifest.json"),
                       doctest::Contains("somewhere/manifest.json: manifest has no format_version"), SessionError);
}
