// Data-parallel process groups on PyTorch's own distributed engine, c10d (docs/training.md#distributed):
// a TCPStore rendezvous served by rank 0, then a Gloo group (CPU tensors) or, in builds whose
// LibTorch has CUDA and NCCL, an NCCL group (CUDA tensors). The c10d types stay inside
// core/dist (core/dist/c10d_compat.h holds the LibTorch-version differences).
//
// Launch variables, as torchrun and cluster schedulers set them: RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR, MASTER_PORT (DistOptions::from_env); the CLI's --rank,
// --world-size, --master ADDR:PORT and --dist-timeout override them.
//
// Every collective waits for its result, bounded by the timeout (default 60 s, also for
// the rendezvous). Errors:
//  * RendezvousError (a user-fixable launch problem; CLI exit 2): the port is in use, the
//    master cannot be reached, a rank never joined, two processes claim one rank, the
//    ranks disagree on the world size, this build has no backend for the device.
//  * PeerError: a collective failed during the run (a rank died, hung, or the network
//    broke). what() names the rank when it can be told and the cause, e.g.
//    "rank 1 stopped responding (no heartbeat for 2.0 s: killed or stopped) during the
//    gradient allreduce of step 12: Connection reset by peer". It is found out from
//    heartbeats every rank writes into the store (a thread, every 0.5 s) together with its
//    current step and phase; a survivor reads them when a collective fails (at most ~2 s).
//
// Threads: a ProcessGroup is used by one thread (the trainer's); its heartbeat thread is
// internal. Destroying it leaves the group (no collective afterwards). connect() sets
// SIGPIPE to be ignored in the process (a write to a dead peer is an error, not an exit).
#pragma once
#include "core/errors.h"

#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mnemo::dist {

// A launch problem a user fixes (CLI exit code 2, nothing written).
struct RendezvousError : Error {
  using Error::Error;
};

// A rank was lost during the run: `rank` is the rank named in what() (-1 when it cannot be
// told, e.g. the network failed).
struct PeerError : Error {
  PeerError(const std::string& what, int rank) : Error(what), rank(rank) {}
  int rank = -1;
};

struct DistOptions {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::chrono::milliseconds timeout{60000};
  std::string backend = "gloo";  // gloo (CPU tensors) | nccl (CUDA tensors, LOCAL_RANK's device)
  // Where each value came from, for messages: e.g. "RANK" or "--rank".
  std::string rank_from = "RANK", world_from = "WORLD_SIZE", addr_from = "MASTER_ADDR", port_from = "MASTER_PORT";

  bool distributed() const { return world_size > 1; }
  // InputError naming the variable or flag: rank outside 0..world_size-1, world_size < 1 or
  // > 4096, port outside 1..65535, an empty address, a timeout outside 1 s..24 h.
  void validate() const;
  // From RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; std::nullopt when WORLD_SIZE
  // is unset. An unparsable or out-of-range value is an InputError naming the variable.
  static std::optional<DistOptions> from_env();
};

// Parses "ADDR:PORT" ("[v6]:PORT" too) into addr/port; InputError naming `what` otherwise.
void parse_master(const std::string& text, const std::string& what, std::string* addr, int* port);

// Bytes above which a flattened allreduce / broadcast is split into buckets.
inline constexpr int64_t kBucketBytes = 25ll << 20;

// A TCP port on the IPv4 address `addr` (127.0.0.1 when it does not parse) that was free a
// moment ago: bound to port 0, read back, closed. -1 when no socket could be bound.
int free_tcp_port(const std::string& addr = "127.0.0.1");

// What this build can do.
bool has_gloo();
bool has_nccl();

class ProcessGroup {
 public:
  // Joins the group: rank 0 serves the TCPStore at master_port, every rank connects to
  // master_addr:master_port, announces itself and waits (up to the timeout) for all
  // world_size ranks, then the backend's group is made. Throws RendezvousError.
  static std::unique_ptr<ProcessGroup> connect(const DistOptions& opt);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const;
  int world_size() const;
  const DistOptions& options() const;
  std::string backend() const;  // "gloo" | "nccl"

  // What this rank is doing, published with its heartbeat (and named in a PeerError of a peer).
  void set_phase(int64_t step, const std::string& what);

  // Sums `tensors` over the ranks in place: flattened into one buffer per dtype and device
  // (split into buckets of kBucketBytes when larger), one allreduce per buffer. `what` names
  // the operation in errors ("gradient allreduce"). Throws PeerError.
  void allreduce_sum(std::vector<torch::Tensor>& tensors, const std::string& what);
  // Copies rank `root`'s `tensors` into every rank's (same shapes and dtypes everywhere),
  // flattened and bucketed likewise. Throws PeerError.
  void broadcast(std::vector<torch::Tensor>& tensors, int root, const std::string& what);
  // Rank 0's bytes on every rank (others pass anything). Throws PeerError.
  std::string broadcast_bytes(const std::string& bytes, const std::string& what);
  void barrier(const std::string& what);

  // Seconds spent in the last allreduce_sum (waiting included).
  double last_allreduce_seconds() const;

  struct Impl;

 private:
  explicit ProcessGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mnemo::dist
