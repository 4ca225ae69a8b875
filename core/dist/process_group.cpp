#include "core/dist/process_group.h"

#include "core/dist/c10d_compat.h"
#include "core/nn/torch_compat.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace mnemo::dist {

namespace {

using Clock = std::chrono::steady_clock;

std::string seconds_label(std::chrono::milliseconds ms) {
  std::ostringstream os;
  os << static_cast<double>(ms.count()) / 1000.0 << " s";
  return os.str();
}

// The first line of a c10d / Gloo message, without the "[file.cc:123] " source prefix.
std::string cause_text(const std::string& what) {
  std::string s = what.substr(0, what.find('\n'));
  if (!s.empty() && s[0] == '[') {
    const auto close = s.find("] ");
    if (close != std::string::npos && close < 200) s = s.substr(close + 2);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s.empty() ? std::string("(no message)") : s;
}

int parse_int_env(const char* name, const char* value, int lo, int hi) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || v < lo || v > hi)
    throw InputError(std::string("environment variable ") + name + "='" + value + "' must be an integer in " +
                     std::to_string(lo) + ".." + std::to_string(hi));
  return static_cast<int>(v);
}

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

std::string hb_key(int r) { return "mnemo/hb/" + std::to_string(r); }

}  // namespace

int free_tcp_port(const std::string& addr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = ::inet_addr(addr.c_str());
  if (a.sin_addr.s_addr == INADDR_NONE) a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

bool has_gloo() { return MNEMO_DIST_HAS_GLOO != 0; }
bool has_nccl() { return MNEMO_DIST_HAS_NCCL != 0; }

void parse_master(const std::string& text, const std::string& what, std::string* addr, int* port) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= text.size())
    throw InputError(what + " '" + text + "' must be ADDR:PORT, e.g. 127.0.0.1:29500");
  std::string a = text.substr(0, colon);
  if (a.size() >= 2 && a.front() == '[' && a.back() == ']') a = a.substr(1, a.size() - 2);
  const std::string p = text.substr(colon + 1);
  char* end = nullptr;
  const long v = std::strtol(p.c_str(), &end, 10);
  if (end == p.c_str() || *end != '\0' || v < 1 || v > 65535)
    throw InputError(what + " '" + text + "': the port '" + p + "' must be an integer in 1..65535");
  *addr = a;
  *port = static_cast<int>(v);
}

void DistOptions::validate() const {
  if (world_size < 1 || world_size > 4096)
    throw InputError(world_from + " = " + std::to_string(world_size) + " is out of range 1..4096");
  if (rank < 0 || rank >= world_size)
    throw InputError(rank_from + " = " + std::to_string(rank) + " is out of range 0.." + std::to_string(world_size - 1) +
                     " (" + world_from + " = " + std::to_string(world_size) + ")");
  if (local_rank < 0) throw InputError("LOCAL_RANK = " + std::to_string(local_rank) + " must be >= 0");
  if (master_addr.empty()) throw InputError(addr_from + " is empty; give the address of rank 0's machine");
  if (master_port < 1 || master_port > 65535)
    throw InputError(port_from + " = " + std::to_string(master_port) + " is out of range 1..65535");
  if (timeout < std::chrono::seconds(1) || timeout > std::chrono::hours(24))
    throw InputError("--dist-timeout " + seconds_label(timeout) + " is out of range 1 s..86400 s");
  if (backend != "gloo" && backend != "nccl")
    throw InputError("distributed backend '" + backend + "' must be gloo (CPU) or nccl (CUDA)");
}

std::optional<DistOptions> DistOptions::from_env() {
  const char* ws = std::getenv("WORLD_SIZE");
  if (!ws) return std::nullopt;
  DistOptions o;
  o.world_size = parse_int_env("WORLD_SIZE", ws, 1, 4096);
  const char* r = std::getenv("RANK");
  if (!r && o.world_size > 1)
    throw InputError("environment variable WORLD_SIZE=" + std::string(ws) + " is set but RANK is not; set both (or "
                     "neither), or pass --rank");
  if (r) o.rank = parse_int_env("RANK", r, 0, o.world_size - 1);
  if (const char* lr = std::getenv("LOCAL_RANK")) o.local_rank = parse_int_env("LOCAL_RANK", lr, 0, 4095);
  else o.local_rank = o.rank;
  if (const char* a = std::getenv("MASTER_ADDR")) {
    o.master_addr = a;
    if (o.master_addr.empty()) throw InputError("environment variable MASTER_ADDR is empty; set it to rank 0's address");
  }
  if (const char* p = std::getenv("MASTER_PORT")) o.master_port = parse_int_env("MASTER_PORT", p, 1, 65535);
  return o;
}

// ---- the group ----

struct ProcessGroup::Impl {
  DistOptions opt;
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<compat::Group> group;
  torch::Device device = torch::kCPU;
  double last_allreduce = 0;
  std::string prefix;  // a torchrun agent's store: the prefix of this job's keys

  // Another client connection to the store (the heartbeat thread's, a diagnosis's).
  c10::intrusive_ptr<c10d::Store> client(std::chrono::milliseconds timeout) const {
    auto s = compat::make_tcp_store(opt.master_addr, opt.master_port, false, opt.world_size, timeout);
    if (!prefix.empty()) return c10::make_intrusive<c10d::PrefixStore>(prefix, s);
    return s;
  }

  // Heartbeat: "<count> <step> <phase>" under mnemo/hb/<rank>, every kBeat.
  static constexpr std::chrono::milliseconds kBeat{250};
  static constexpr std::chrono::milliseconds kStaleWindow{2000};
  c10::intrusive_ptr<c10d::Store> beat_store;
  std::thread beat_thread;
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  int64_t phase_step = 0;
  std::string phase = "starting";
  int64_t beats = 0;

  ~Impl() {
    {
      std::lock_guard<std::mutex> lk(mu);
      stopping = true;
    }
    cv.notify_all();
    if (beat_thread.joinable()) beat_thread.join();
  }

  void beat_loop() {
    std::unique_lock<std::mutex> lk(mu);
    while (!stopping) {
      const std::string value = std::to_string(++beats) + " " + std::to_string(phase_step) + " " + phase;
      lk.unlock();
      try {
        beat_store->set(hb_key(opt.rank), compat::bytes(value));
      } catch (const std::exception&) {
        return;  // the store (rank 0) is gone: a collective will report it
      }
      lk.lock();
      cv.wait_for(lk, kBeat, [&] { return stopping; });
    }
  }

  struct Beat {
    bool ok = false;
    int64_t count = -1, step = -1;
    std::string phase;
  };
  Beat read_beat(c10d::Store& s, int r) {
    Beat b;
    if (!s.check({hb_key(r)})) {
      b.ok = true;  // never beat: counted as not responding
      return b;
    }
    std::istringstream is(compat::text(s.get(hb_key(r))));
    is >> b.count >> b.step;
    std::getline(is, b.phase);
    if (!b.phase.empty() && b.phase[0] == ' ') b.phase.erase(0, 1);
    b.ok = true;
    return b;
  }

  // Which rank failed and why, read from the heartbeats (bounded: ~kStaleWindow).
  PeerError diagnose(const std::string& what, const std::string& cause) {
    int64_t my_step;
    {
      std::lock_guard<std::mutex> lk(mu);
      my_step = phase_step;
    }
    const std::string where = " during the " + what + " of step " + std::to_string(my_step) + ": " + cause_text(cause);
    const std::string me = "rank " + std::to_string(opt.rank) + ": ";
    c10::intrusive_ptr<c10d::Store> s;
    std::vector<Beat> first(static_cast<size_t>(opt.world_size)), second(first.size());
    try {
      s = client(kStaleWindow);
      s->setTimeout(kStaleWindow);
      for (int r = 0; r < opt.world_size; ++r)
        if (r != opt.rank) first[static_cast<size_t>(r)] = read_beat(*s, r);
      std::this_thread::sleep_for(kStaleWindow);
      for (int r = 0; r < opt.world_size; ++r)
        if (r != opt.rank) second[static_cast<size_t>(r)] = read_beat(*s, r);
    } catch (const std::exception&) {
      if (opt.rank != 0)
        return PeerError(me + "lost rank 0 (the master, which serves the rendezvous store at " + opt.master_addr + ":" +
                             std::to_string(opt.master_port) + "; it exited, was killed or is stopped)" + where,
                         0);
      return PeerError(me + "a peer failed" + where, -1);
    }
    std::vector<int> stale, behind;
    for (int r = 0; r < opt.world_size; ++r) {
      if (r == opt.rank) continue;
      const auto& a = first[static_cast<size_t>(r)];
      const auto& b = second[static_cast<size_t>(r)];
      if (b.count <= a.count) stale.push_back(r);
      else if (b.step < my_step || (b.step == my_step && b.phase != what)) behind.push_back(r);
    }
    auto list = [](const std::vector<int>& v) {
      std::string t = v.size() == 1 ? "rank " : "ranks ";
      for (size_t i = 0; i < v.size(); ++i) t += (i ? ", " : "") + std::to_string(v[i]);
      return t;
    };
    std::ostringstream os;
    os << std::fixed;
    os.precision(1);
    if (!stale.empty()) {
      os << me << list(stale) << " stopped responding (no heartbeat for "
         << static_cast<double>(kStaleWindow.count()) / 1000.0 << " s: exited, killed or stopped)" << where;
      return PeerError(os.str(), stale.front());
    }
    if (!behind.empty()) {
      const auto& b = second[static_cast<size_t>(behind.front())];
      os << me << list(behind) << " did not join it in time (rank " << behind.front() << " is in the " << b.phase
         << " of step " << b.step << "; --dist-timeout " << seconds_label(opt.timeout) << ")" << where;
      return PeerError(os.str(), behind.front());
    }
    return PeerError(me + "a peer failed" + where, -1);
  }

  template <class MakeWork>
  void run(const std::string& what, MakeWork&& make_work) {
    try {
      auto work = make_work();
      work->wait();
    } catch (const PeerError&) {
      throw;
    } catch (const std::exception& e) {
      throw diagnose(what, e.what());
    }
  }

  // Tensors grouped by dtype and device, each group cut into buckets of <= kBucketBytes.
  std::vector<std::vector<size_t>> buckets(const std::vector<torch::Tensor>& ts) const {
    std::map<std::pair<int, std::string>, std::vector<size_t>> by_kind;
    std::vector<std::pair<int, std::string>> order;
    for (size_t i = 0; i < ts.size(); ++i) {
      const auto key = std::make_pair(static_cast<int>(ts[i].scalar_type()), ts[i].device().str());
      if (!by_kind.count(key)) order.push_back(key);
      by_kind[key].push_back(i);
    }
    std::vector<std::vector<size_t>> out;
    for (const auto& key : order) {
      std::vector<size_t> cur;
      int64_t bytes = 0;
      for (size_t i : by_kind[key]) {
        const int64_t b = ts[i].numel() * static_cast<int64_t>(ts[i].element_size());
        if (!cur.empty() && bytes + b > kBucketBytes) {
          out.push_back(std::move(cur));
          cur.clear();
          bytes = 0;
        }
        cur.push_back(i);
        bytes += b;
      }
      if (!cur.empty()) out.push_back(std::move(cur));
    }
    return out;
  }

  torch::Tensor flatten(const std::vector<torch::Tensor>& ts, const std::vector<size_t>& idx) const {
    std::vector<torch::Tensor> parts;
    for (size_t i : idx) parts.push_back(ts[i].reshape({-1}));
    return torch::cat(parts).to(device);
  }

  void unflatten(const torch::Tensor& flat, std::vector<torch::Tensor>& ts, const std::vector<size_t>& idx) const {
    int64_t off = 0;
    for (size_t i : idx) {
      const int64_t n = ts[i].numel();
      ts[i].copy_(flat.narrow(0, off, n).view(ts[i].sizes()));
      off += n;
    }
  }
};

ProcessGroup::ProcessGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProcessGroup::~ProcessGroup() = default;

int ProcessGroup::rank() const { return impl_->opt.rank; }
int ProcessGroup::world_size() const { return impl_->opt.world_size; }
const DistOptions& ProcessGroup::options() const { return impl_->opt; }
std::string ProcessGroup::backend() const { return impl_->opt.backend; }
double ProcessGroup::last_allreduce_seconds() const { return impl_->last_allreduce; }

void ProcessGroup::set_phase(int64_t step, const std::string& what) {
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->phase_step = step;
  impl_->phase = what;
}

std::unique_ptr<ProcessGroup> ProcessGroup::connect(const DistOptions& opt) {
  opt.validate();
  // A peer that dies must surface as an error of the collective (EPIPE), not end this process.
  ::signal(SIGPIPE, SIG_IGN);
  auto impl = std::make_unique<Impl>();
  impl->opt = opt;
  const std::string master = opt.master_addr + ":" + std::to_string(opt.master_port);
  const std::string me = "rank " + std::to_string(opt.rank) + " of " + std::to_string(opt.world_size);
  if (opt.backend == "gloo" && !has_gloo())
    throw RendezvousError(me + ": this build has no Gloo backend (its LibTorch came without the Gloo headers: "
                          "install libgloo-dev and rebuild); one process (no --nproc, WORLD_SIZE unset) still trains");
  if (opt.backend == "nccl") {
    if (!has_nccl())
      throw RendezvousError(me + ": this build has no NCCL backend (LibTorch without CUDA, or nccl.h not found at "
                            "build time); use the gloo backend");
    if (opt.local_rank >= cuda_devices())
      throw RendezvousError(me + ": the nccl backend needs CUDA device " + std::to_string(opt.local_rank) +
                            " (LOCAL_RANK), and this machine has " + std::to_string(cuda_devices()));
    impl->device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(opt.local_rank));
  }

  // The store: rank 0 serves it — unless a torchrun agent already serves one at
  // MASTER_ADDR:MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True, its static rendezvous): then
  // every rank is a client under the prefix torch's env:// rendezvous uses.
  const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  const bool agent_store = agent && std::string(agent) == "True";
  try {
    impl->store = compat::make_tcp_store(opt.master_addr, opt.master_port, opt.rank == 0 && !agent_store,
                                         opt.world_size, opt.timeout);
    if (agent_store) {
      const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
      impl->prefix = std::string("/worker/attempt_") + (restart ? restart : "0");
      impl->store = c10::make_intrusive<c10d::PrefixStore>(impl->prefix, impl->store);
    }
  } catch (const std::exception& e) {
    const std::string cause = cause_text(e.what());
    if (opt.rank == 0) {
      if (cause.find("already in use") != std::string::npos || cause.find("errno: 98") != std::string::npos)
        throw RendezvousError(me + ": port " + std::to_string(opt.master_port) + " (" + opt.port_from +
                              ") is in use on this machine; pick a free port (--master ADDR:PORT or MASTER_PORT) (" +
                              cause + ")");
      throw RendezvousError(me + ": cannot serve the rendezvous store on port " + std::to_string(opt.master_port) +
                            " (" + opt.port_from + "): " + cause);
    }
    throw RendezvousError(me + ": cannot reach the master at " + master + " (" + opt.addr_from + ", " + opt.port_from +
                          ") within " + seconds_label(opt.timeout) +
                          ": start rank 0, or check the address, the port and the firewall (" + cause + ")");
  }
  auto& s = *impl->store;
  const auto deadline = Clock::now() + opt.timeout;
  try {
    // Announce this rank; a second process with the same rank is refused.
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    const std::string who = std::string(host) + " pid " + std::to_string(::getpid());
    if (s.add("mnemo/claim/" + std::to_string(opt.rank), 1) > 1)
      throw RendezvousError(me + " (" + who + "): another process already joined " + master + " as rank " +
                            std::to_string(opt.rank) + "; give every process its own " + opt.rank_from);
    s.set("mnemo/rank/" + std::to_string(opt.rank), compat::bytes(who));
    if (opt.rank == 0) s.set("mnemo/world", compat::bytes(std::to_string(opt.world_size)));
    s.add("mnemo/joined", 1);
    if (opt.rank != 0) {
      s.wait({"mnemo/world"}, opt.timeout);
      const std::string w = compat::text(s.get("mnemo/world"));
      if (w != std::to_string(opt.world_size))
        throw RendezvousError(me + ": rank 0 at " + master + " runs a group of " + w + " ranks, this process was started "
                              "with " + opt.world_from + " = " + std::to_string(opt.world_size) + "; start every rank "
                              "with the same world size");
    }
    while (s.add("mnemo/joined", 0) < opt.world_size) {
      if (Clock::now() > deadline) {
        std::vector<int> missing;
        for (int r = 0; r < opt.world_size; ++r)
          if (!s.check({"mnemo/rank/" + std::to_string(r)})) missing.push_back(r);
        std::string list;
        for (size_t i = 0; i < missing.size(); ++i) list += (i ? ", " : "") + std::to_string(missing[i]);
        throw RendezvousError(me + ": rank" + (missing.size() == 1 ? " " : "s ") + list + " never joined the rendezvous at " +
                              master + " within " + seconds_label(opt.timeout) + " (--dist-timeout); start all " +
                              std::to_string(opt.world_size) + " ranks with the same " + opt.addr_from + ":" +
                              opt.port_from + ", or lower " + opt.world_from);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } catch (const RendezvousError&) {
    throw;
  } catch (const std::exception& e) {
    throw RendezvousError(me + ": the rendezvous at " + master + " failed: " + cause_text(e.what()) +
                          " (rank 0 exited before every rank joined?)");
  }

  // The backend's group (its own rendezvous through the store, under a prefix).
  try {
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>("mnemo/" + opt.backend, impl->store);
#if MNEMO_DIST_HAS_NCCL
    if (opt.backend == "nccl") impl->group = compat::make_nccl_group(prefixed, opt.rank, opt.world_size, opt.timeout);
#endif
#if MNEMO_DIST_HAS_GLOO
    if (opt.backend == "gloo") {
      const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
      impl->group = compat::make_gloo_group(prefixed, opt.rank, opt.world_size, ifname ? ifname : "",
                                            is_loopback(opt.master_addr) ? "127.0.0.1" : "", opt.timeout);
    }
#endif
  } catch (const std::exception& e) {
    throw RendezvousError(me + ": cannot set up the " + opt.backend + " group: " + cause_text(e.what()) +
                          (opt.backend == "gloo" ? " (on several machines, set GLOO_SOCKET_IFNAME to the network "
                                                   "interface the ranks reach each other on)"
                                                 : ""));
  }
  if (!impl->group) throw RendezvousError(me + ": no " + opt.backend + " backend in this build");

  impl->beat_store = impl->client(opt.timeout);
  Impl* raw = impl.get();
  impl->beat_thread = std::thread([raw] { raw->beat_loop(); });
  return std::unique_ptr<ProcessGroup>(new ProcessGroup(std::move(impl)));
}

void ProcessGroup::allreduce_sum(std::vector<torch::Tensor>& tensors, const std::string& what) {
  const auto t0 = Clock::now();
  auto& m = *impl_;
  std::vector<std::vector<size_t>> bs = m.buckets(tensors);
  std::vector<torch::Tensor> flats;
  for (const auto& b : bs) flats.push_back(m.flatten(tensors, b));
  m.run(what, [&] {
    // One work per bucket, launched together and waited for in order.
    std::vector<decltype(m.group->allreduce(std::declval<std::vector<at::Tensor>&>()))> works;
    for (auto& f : flats) {
      std::vector<at::Tensor> one{f};
      works.push_back(m.group->allreduce(one));
    }
    for (size_t i = 0; i + 1 < works.size(); ++i) works[i]->wait();
    return works.back();
  });
  for (size_t i = 0; i < bs.size(); ++i) m.unflatten(flats[i], tensors, bs[i]);
  m.last_allreduce = std::chrono::duration<double>(Clock::now() - t0).count();
}

void ProcessGroup::broadcast(std::vector<torch::Tensor>& tensors, int root, const std::string& what) {
  auto& m = *impl_;
  if (tensors.empty()) return;
  std::vector<std::vector<size_t>> bs = m.buckets(tensors);
  std::vector<torch::Tensor> flats;
  for (const auto& b : bs) flats.push_back(m.flatten(tensors, b));
  m.run(what, [&] {
    std::vector<decltype(m.group->broadcast(std::declval<std::vector<at::Tensor>&>()))> works;
    for (auto& f : flats) {
      std::vector<at::Tensor> one{f};
      c10d::BroadcastOptions o;
      o.rootRank = root;
      works.push_back(m.group->broadcast(one, o));
    }
    for (size_t i = 0; i + 1 < works.size(); ++i) works[i]->wait();
    return works.back();
  });
  for (size_t i = 0; i < bs.size(); ++i) m.unflatten(flats[i], tensors, bs[i]);
}

std::string ProcessGroup::broadcast_bytes(const std::string& bytes, const std::string& what) {
  auto& m = *impl_;
  std::vector<torch::Tensor> len{
      torch::tensor({static_cast<int64_t>(rank() == 0 ? bytes.size() : 0)}, torch::kInt64).to(m.device)};
  broadcast(len, 0, what);
  const int64_t n = len[0].to(torch::kCPU).item<int64_t>();
  if (n == 0) return std::string();
  torch::Tensor buf = torch::empty({n}, torch::kUInt8);
  if (rank() == 0) std::memcpy(buf.data_ptr(), bytes.data(), static_cast<size_t>(n));
  std::vector<torch::Tensor> b{buf.to(m.device)};
  broadcast(b, 0, what);
  torch::Tensor host = b[0].to(torch::kCPU).contiguous();
  return std::string(static_cast<const char*>(host.data_ptr()), static_cast<size_t>(n));
}

void ProcessGroup::barrier(const std::string& what) {
  std::vector<torch::Tensor> one{torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat32).device(impl_->device))};
  allreduce_sum(one, what);
}

}  // namespace mnemo::dist
