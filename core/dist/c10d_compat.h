// The one place for LibTorch-version differences of PyTorch's distributed engine, c10d
// (the sibling of core/nn/torch_compat.h; docs/architecture.md#build, docs/training.md#distributed).
// Included only by core/dist/*.cpp: nothing outside core/dist sees a c10d type.
//
// What differs, and what this file does about it:
//  * ProcessGroupGloo.hpp compiles only with USE_C10D_GLOO defined, and includes gloo/*.h.
//    Debian's LibTorch 1.13 defines it on its torch_cpu target and libgloo-dev has the
//    headers (libtorch_cpu.so exports the symbols and links libgloo.so.0); a LibTorch whose
//    CMake config does not define it gets it here whenever the Gloo headers are present.
//    Without them MNEMO_DIST_HAS_GLOO is 0 and a group of more than one rank is refused
//    with a message (one process still trains).
//  * ProcessGroupNCCL (LibTorch with CUDA, lives in libtorch_cuda.so) needs USE_C10D_NCCL and
//    nccl.h; it is compiled only when LibTorch has CUDA (MNEMO_TORCH_CUDA) and both headers
//    are found, so a CPU build is unaffected. MNEMO_DIST_HAS_NCCL says which.
//  * LibTorch 1.13: the groups derive from c10d::ProcessGroup and return
//    c10::intrusive_ptr<ProcessGroup::Work>; 2.x: they derive from c10d::Backend and return
//    c10::intrusive_ptr<c10d::Work>. The code below holds the concrete group type and uses
//    `auto` for works, so both compile. createDeviceForHostname gains a defaulted lazyInit
//    argument in 2.x (the one-argument call compiles in both).
//  * Gloo in 1.13 has no ReduceOp::AVG: gradients are summed and divided (core/dist/process_group.cpp).
//  * The groups' default timeout is 30 minutes: Options always get the configured one.
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

#if __has_include(<gloo/algorithm.h>) && __has_include(<torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>)
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#define MNEMO_DIST_HAS_GLOO 1
#else
#define MNEMO_DIST_HAS_GLOO 0
#endif

#if defined(MNEMO_TORCH_CUDA) && __has_include(<nccl.h>) && \
    __has_include(<torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>)
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#define MNEMO_DIST_HAS_NCCL 1
#else
#define MNEMO_DIST_HAS_NCCL 0
#endif

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if MNEMO_DIST_HAS_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if MNEMO_DIST_HAS_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <memory>
#include <string>

namespace mnemo::dist::compat {

// The group's type: what the collectives are called on.
#if TORCH_VERSION_MAJOR >= 2
using Group = c10d::Backend;
#else
using Group = c10d::ProcessGroup;
#endif

// A TCPStore: rank 0 serves it (is_server), every rank is a client.
inline c10::intrusive_ptr<c10d::Store> make_tcp_store(const std::string& host, int port, bool is_server, int world,
                                                      std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(port);
  o.isServer = is_server;
  if (is_server) o.numWorkers = static_cast<std::size_t>(world);
  o.waitWorkers = false;  // joining is checked by core/dist with messages naming the missing ranks
  o.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>(host, o);
}

#if MNEMO_DIST_HAS_GLOO
// A Gloo group over `store`. Its transport binds to `interface` (GLOO_SOCKET_IFNAME) when
// given, else to `bind_host` when given (loopback jobs), else to the address this host's
// name resolves to (falling back to loopback), as torch.distributed does.
inline c10::intrusive_ptr<Group> make_gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world,
                                                 const std::string& interface, const std::string& bind_host,
                                                 std::chrono::milliseconds timeout) {
  auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
  if (!interface.empty()) opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
  else if (!bind_host.empty()) opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(bind_host));
  else opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  opts->threads = 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, opts);
}
#endif

#if MNEMO_DIST_HAS_NCCL
inline c10::intrusive_ptr<Group> make_nccl_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world,
                                                 std::chrono::milliseconds timeout) {
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world, opts);
}
#endif

inline std::vector<uint8_t> bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }
inline std::string text(const std::vector<uint8_t>& b) { return std::string(b.begin(), b.end()); }

}  // namespace mnemo::dist::compat
