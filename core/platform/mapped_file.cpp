#include "core/platform/mapped_file.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace mnemo::platform {

namespace {

// The live mappings the SIGBUS handler watches. A slot is claimed with `used`, then `end` and
// `begin` are published; the handler reads only atomics (async-signal-safe) and mmap.
struct Slot {
  std::atomic<bool> used{false};
  std::atomic<std::uintptr_t> begin{0}, end{0};
  std::atomic<bool> hit{false};
};
constexpr int kSlots = 64;
Slot g_slots[kSlots];
std::uintptr_t g_page = 4096;
struct sigaction g_previous {};
std::once_flag g_install_once;
bool g_installed = false;

void on_sigbus(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (Slot& s : g_slots) {
    const std::uintptr_t b = s.begin.load(std::memory_order_acquire);
    if (b == 0 || addr < b || addr >= s.end.load(std::memory_order_acquire)) continue;
    // A page of the mapped file that the file no longer has: read zeros there from now on.
    void* page = reinterpret_cast<void*>(addr & ~(g_page - 1));
    if (::mmap(page, g_page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
      s.hit.store(true, std::memory_order_release);
      return;  // the faulting read runs again and reads 0
    }
    break;
  }
  // Not a mapped document's page: whoever handled SIGBUS before us decides.
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) return g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    return g_previous.sa_handler(sig);
  }
  // The default action: returning re-runs the fault, which now ends the process as it would have.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGBUS, &dfl, nullptr);
}

void install() {
  g_page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  ::sigemptyset(&sa.sa_mask);
  g_installed = ::sigaction(SIGBUS, &sa, &g_previous) == 0;
}

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::map(int fd, std::size_t size) {
  if (size == 0) return nullptr;
  std::call_once(g_install_once, install);
  if (!g_installed) return nullptr;
  int slot = -1;
  for (int i = 0; i < kSlots && slot < 0; ++i) {
    bool expected = false;
    if (g_slots[i].used.compare_exchange_strong(expected, true)) slot = i;
  }
  if (slot < 0) return nullptr;
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) {
    g_slots[slot].used.store(false);
    return nullptr;
  }
  const auto b = reinterpret_cast<std::uintptr_t>(p);
  Slot& s = g_slots[slot];
  s.hit.store(false);
  s.end.store(b + size, std::memory_order_release);
  s.begin.store(b, std::memory_order_release);
  return std::shared_ptr<const MappedFile>(new MappedFile(static_cast<const char*>(p), size, slot));
}

MappedFile::~MappedFile() {
  Slot& s = g_slots[slot_];
  s.begin.store(0, std::memory_order_release);
  s.end.store(0, std::memory_order_release);
  ::munmap(const_cast<char*>(data_), size_);
  s.used.store(false, std::memory_order_release);
}

bool MappedFile::truncated() const { return g_slots[slot_].hit.load(std::memory_order_acquire); }

void MappedFile::release(std::size_t begin, std::size_t end) const {
  if (end > size_) end = size_;
  if (begin >= end) return;
  const auto base = reinterpret_cast<std::uintptr_t>(data_);  // page-aligned (mmap)
  const std::uintptr_t first = (base + begin) & ~(g_page - 1);
  const std::uintptr_t last = (base + end + g_page - 1) & ~(g_page - 1);
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace mnemo::platform
