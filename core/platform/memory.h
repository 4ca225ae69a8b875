// Out of memory, reported instead of crashing (docs/reliability.md#out-of-memory).
//
// An allocation that fails throws: std::bad_alloc from C++ containers, a c10::Error from
// LibTorch's CPU allocator ("can't allocate memory: you tried to allocate N bytes") or from
// CUDA ("CUDA out of memory. Tried to allocate 20.00 MiB"). out_of_memory_message() turns any
// of them into "out of memory at <what>, needed ~X", where <what> is the innermost
// MemoryActivity the exception left on this thread and X the failed request's size (for
// std::bad_alloc the size the program's operator new was asked for). The CLI prints it and
// exits 2; the desktop app shows it in a popup and keeps its previous state.
#pragma once
#include "core/errors.h"

#include <cstdint>
#include <exception>
#include <optional>
#include <string>

namespace mnemo::platform {

// An allocation failure turned into a user-facing error (exit code 2 on the command line).
struct OutOfMemoryError : Error {
  using Error::Error;
};

// Names what this thread is doing while the object lives ("training step 12", "segment 40
// of 'doc.txt'"). Nest freely; cheap (a string move and a thread-local pointer).
class MemoryActivity {
 public:
  explicit MemoryActivity(std::string what);
  ~MemoryActivity();
  MemoryActivity(const MemoryActivity&) = delete;
  MemoryActivity& operator=(const MemoryActivity&) = delete;
  // Renames it (a loop's activity: "training step 13").
  void rename(std::string what) { what_ = std::move(what); }

 private:
  std::string what_;
  MemoryActivity* outer_;
  const std::string* outer_what_;
  int uncaught_;
};

// The activity an exception last unwound out of on this thread, else the innermost live
// one, else "" — and forgets the unwound one (so the next failure names its own).
std::string take_failed_activity();

// "1.50 GiB", "512 KiB", "37 B".
std::string format_bytes(double bytes);

// When `e` is an allocation failure, "out of memory at <what>, needed ~<size>" (<what> from
// take_failed_activity(), or `fallback_what` when there is none); nullopt otherwise.
std::optional<std::string> out_of_memory_message(const std::exception& e, const std::string& fallback_what = "");

// This machine's physical memory in bytes (0 when the system does not say). Inputs that
// declare more than this (a checkpoint's tensors, a model config's parameters) are refused
// with the figure before anything is allocated: the kernel's OOM killer would strike first.
std::uint64_t machine_memory_bytes();

// The size of the last operator new request on this thread that failed (0 when none).
std::uint64_t last_failed_new_bytes();

}  // namespace mnemo::platform
