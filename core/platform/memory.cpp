#include "core/platform/memory.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <regex>

namespace mnemo::platform {

namespace {

thread_local MemoryActivity* t_innermost = nullptr;
thread_local const std::string* t_innermost_what = nullptr;
thread_local std::string t_failed;  // the activity an exception unwound out of

}  // namespace

// Outside the anonymous namespace: operator new (below, global) sets it.
thread_local std::uint64_t t_failed_new = 0;  // size of the last failed operator new

MemoryActivity::MemoryActivity(std::string what)
    : what_(std::move(what)), outer_(t_innermost), outer_what_(t_innermost_what), uncaught_(std::uncaught_exceptions()) {
  t_innermost = this;
  t_innermost_what = &what_;
}

MemoryActivity::~MemoryActivity() {
  // Unwinding: the innermost activity an exception leaves is the one that failed.
  if (std::uncaught_exceptions() > uncaught_ && t_failed.empty()) t_failed = what_;
  t_innermost = outer_;
  t_innermost_what = outer_what_;
}

std::string take_failed_activity() {
  std::string out;
  out.swap(t_failed);
  if (out.empty() && t_innermost_what) out = *t_innermost_what;
  return out;
}

std::uint64_t last_failed_new_bytes() { return t_failed_new; }

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  else std::snprintf(buf, sizeof buf, "%.2f %s", bytes, units[u]);
  return buf;
}

std::optional<std::string> out_of_memory_message(const std::exception& e, const std::string& fallback_what) {
  std::string needed;
  if (dynamic_cast<const std::bad_alloc*>(&e)) {
    const std::uint64_t n = t_failed_new;
    needed = n ? format_bytes(static_cast<double>(n)) : std::string("more than was left");
  } else {
    const std::string what = e.what();
    static const std::regex cpu(R"(can't allocate memory: you tried to allocate (\d+) bytes)");
    static const std::regex cuda(R"(out of memory\. Tried to allocate ([0-9.]+ ?[KMGT]?i?B))");
    std::smatch m;
    if (std::regex_search(what, m, cpu)) needed = format_bytes(std::stod(m[1].str()));
    else if (std::regex_search(what, m, cuda)) needed = m[1].str() + " on the GPU";
    else return std::nullopt;
  }
  std::string at = take_failed_activity();
  if (at.empty()) at = fallback_what.empty() ? std::string("an allocation") : fallback_what;
  t_failed_new = 0;
  return "out of memory at " + at + ", needed ~" + needed;
}

std::uint64_t machine_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
}

}  // namespace mnemo::platform

// The program's operator new: as the standard one (malloc, new-handler loop), and it
// remembers the size of a request that failed, so the message can say how much was needed.
void* operator new(std::size_t n) {
  if (n == 0) n = 1;
  for (;;) {
    if (void* p = std::malloc(n)) return p;
    if (std::new_handler h = std::get_new_handler()) {
      h();
      continue;
    }
    mnemo::platform::t_failed_new = n;
    throw std::bad_alloc();
  }
}
