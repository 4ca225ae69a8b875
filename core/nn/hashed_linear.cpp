#include "core/nn/hashed_linear.h"

#include "kernels/limits.h"

#include "core/errors.h"
#include "core/io/config_fields.h"
#include "core/trace/hash_stats.h"
#include "kernels/hashed_lookup_cpu.h"

#include <ATen/Parallel.h>

#ifdef MNEMO_WITH_CUDA
#include "kernels/hashed_lookup.cuh"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace mnemo {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

kernels::ParallelFor torch_parallel_for() {
  return [](int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
    at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) { body(b, e); });
  };
}

bool want_deterministic(bool flag) { return flag || at::globalContext().deterministicAlgorithms(); }

kernels::TableType table_type(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat32: return kernels::TableType::kFloat32;
    case torch::kBFloat16: return kernels::TableType::kBFloat16;
    case torch::kFloat16: return kernels::TableType::kFloat16;
    default: TORCH_CHECK(false, "memory_layer: float32 x needs float32, bfloat16 or float16 tables, got ", t.scalar_type());
  }
}

// Large CPU outputs are asked for as transparent huge pages before they are first written.
// A fresh allocation of several MiB is a fresh mmap, and writing it costs a page fault and
// a page of zeroing per 4 KiB (at N = 16,384 and d = 512, y alone is 8192 faults, measured at
// a quarter of the forward's time); with 2 MiB pages that is 16 faults. Memory that was
// already written (reused by malloc) is left as it is: the advice then only matters if the
// kernel later merges its pages.
void advise_huge_pages(const torch::Tensor& t) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<uintptr_t>(t.data_ptr());
  const uintptr_t end = begin + static_cast<uintptr_t>(t.nbytes());
  const uintptr_t a = (begin + kHuge - 1) / kHuge * kHuge, b = end / kHuge * kHuge;
  if (b >= a + kHuge) madvise(reinterpret_cast<void*>(a), b - a, MADV_HUGEPAGE);  // a hint
#else
  (void)t;
#endif
}

// `bytes` rounded up to whole 2 MiB pages, 2 MiB-aligned and asked for as transparent huge
// pages (a hint; without it only speed suffers); free with std::free. TORCH_CHECK names `what`.
void* allocate_huge(size_t bytes, const char* what) {
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t cap = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = std::aligned_alloc(kHuge, cap);
  TORCH_CHECK(p, "memory_layer: out of memory allocating ", bytes, " bytes of ", what);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  madvise(p, cap, MADV_HUGEPAGE);
#endif
  return p;
}

// Memory for CPU table gradients. A table gradient is k 2^tau d_out floats (32 MiB at
// d = 512, tau = 8), a fresh allocation of that size is a fresh mmap, and the first write of
// each of its 4 KiB pages is a page fault plus a page of zeroing by the kernel: as much time
// as computing the gradient. So freed gradient buffers are kept (at most kKeep of them, of at
// most kMaxBytes each) and handed to the next backward of the same size; new ones are asked
// for as transparent huge pages, which the kernels' column-block writes also need to avoid
// a TLB miss per row. The buffers are owned by the tensors handed out (torch::from_blob with
// a deleter), so a gradient kept by the optimizer stays valid as long as it is referenced.
class GradBuffers {
 public:
  static GradBuffers& instance() {
    static GradBuffers* g = new GradBuffers;  // never destroyed: tensors may outlive static destruction
    return *g;
  }

  torch::Tensor empty(at::IntArrayRef sizes) {
    const size_t bytes = static_cast<size_t>(c10::multiply_integers(sizes)) * sizeof(float);
    if (bytes < kMinBytes || bytes > kMaxBytes) return torch::empty(sizes, torch::kFloat32);
    void* p = take(bytes);
    if (!p) p = allocate(bytes);
    return torch::from_blob(
        p, sizes, [bytes](void* q) { GradBuffers::instance().give_back(q, bytes); }, torch::kFloat32);
  }

 private:
  static constexpr size_t kMinBytes = size_t{1} << 20, kMaxBytes = size_t{1} << 30;
  static constexpr size_t kKeep = 2;

  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < free_.size(); ++i)
      if (free_[i].second == bytes) {
        void* p = free_[i].first;
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
        return p;
      }
    return nullptr;
  }

  static void* allocate(size_t bytes) { return allocate_huge(bytes, "table gradient"); }

  void give_back(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (free_.size() < kKeep) {
        free_.emplace_back(p, bytes);
        return;
      }
    }
    std::free(p);
  }

  std::mutex mu_;
  std::vector<std::pair<void*, size_t>> free_;
};

// x2d [N, d_in] contiguous, tables [K, R, d_out] contiguous; packed: the tables packed
// (PackedTablesCache) or an empty tensor. Returns {y, bucket, p}.
variable_list forward_raw(const torch::Tensor& x2d, const torch::Tensor& tables, const torch::Tensor& packed,
                          int64_t bits, double temperature) {
  const int64_t n = x2d.size(0), k = tables.size(0), d_out = tables.size(2);
  auto idx_opts = x2d.options().dtype(torch::kInt32);
  if (x2d.is_cuda()) {
#ifdef MNEMO_WITH_CUDA
    c10::cuda::CUDAGuard guard(x2d.device());
    auto y = torch::empty({n, d_out}, x2d.options().dtype(torch::kFloat32));
    auto bucket = torch::empty({n, k}, idx_opts);
    auto p = torch::empty({n, k}, x2d.options().dtype(torch::kFloat32));
    kernels::hashed_lookup_forward_cuda(x2d.data_ptr<float>(), tables.data_ptr(), table_type(tables), y.data_ptr<float>(),
                                        bucket.data_ptr<int32_t>(), p.data_ptr<float>(), n, k, static_cast<int>(bits),
                                        d_out, static_cast<float>(temperature), at::cuda::getCurrentCUDAStream());
    return {y, bucket, p};
#else
    TORCH_CHECK(false, "memory_layer: tensors on ", x2d.device(),
                " need a build with CUDA kernels (MNEMO_CUDA resolved OFF at configure time); run on the CPU");
#endif
  }
  auto y = torch::empty({n, d_out}, x2d.options());
  auto bucket = torch::empty({n, k}, idx_opts);
  auto p = torch::empty({n, k}, x2d.options());
  for (const auto* t : {&y, &bucket, &p}) advise_huge_pages(*t);
  if (packed.numel() > 0) {  // float32 x, tables of any TableType, packed
    kernels::hashed_lookup_forward_packed_cpu(x2d.data_ptr<float>(), packed.data_ptr(), table_type(tables),
                                              y.data_ptr<float>(), bucket.data_ptr<int32_t>(), p.data_ptr<float>(), n, k,
                                              static_cast<int>(bits), d_out, temperature, torch_parallel_for());
    return {y, bucket, p};
  }
  if (tables.scalar_type() != x2d.scalar_type()) {  // float32 x, bf16 / fp16 tables
    kernels::hashed_lookup_forward_cpu(x2d.data_ptr<float>(), tables.data_ptr(), table_type(tables), y.data_ptr<float>(),
                                       bucket.data_ptr<int32_t>(), p.data_ptr<float>(), n, k, static_cast<int>(bits),
                                       d_out, temperature, torch_parallel_for());
    return {y, bucket, p};
  }
  AT_DISPATCH_FLOATING_TYPES(x2d.scalar_type(), "memory_layer_forward", [&] {
    kernels::hashed_lookup_forward_cpu(x2d.data_ptr<scalar_t>(), tables.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(),
                                       bucket.data_ptr<int32_t>(), p.data_ptr<scalar_t>(), n, k, static_cast<int>(bits),
                                       d_out, temperature, torch_parallel_for());
  });
  return {y, bucket, p};
}

// Returns {dx, dtables}; either may be undefined when not needed.
variable_list backward_raw(const torch::Tensor& x2d, const torch::Tensor& tables, const torch::Tensor& packed,
                           const torch::Tensor& bucket, const torch::Tensor& p, const torch::Tensor& dy, int64_t bits,
                           double temperature, bool deterministic, bool need_dx, bool need_dtables) {
  const int64_t n = x2d.size(0), k = tables.size(0), d_out = tables.size(2);
  torch::Tensor dx, dtables;
  if (x2d.is_cuda()) {
#ifdef MNEMO_WITH_CUDA
    c10::cuda::CUDAGuard guard(x2d.device());
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    auto f32 = x2d.options().dtype(torch::kFloat32);
    torch::Tensor dt32;
    if (need_dtables) dt32 = torch::empty(tables.sizes(), f32);
    const bool fused_atomic = need_dtables && need_dx && !deterministic;
    if (need_dx) {
      dx = torch::empty_like(x2d);
      if (fused_atomic) dt32.zero_();
      kernels::hashed_lookup_backward_input_cuda(x2d.data_ptr<float>(), tables.data_ptr(), table_type(tables),
                                                 bucket.data_ptr<int32_t>(), p.data_ptr<float>(), dy.data_ptr<float>(),
                                                 dx.data_ptr<float>(), fused_atomic ? dt32.data_ptr<float>() : nullptr,
                                                 n, k, static_cast<int>(bits), d_out, static_cast<float>(temperature),
                                                 stream);
    }
    if (need_dtables && !fused_atomic) {
      const size_t ws_bytes =
          kernels::hashed_lookup_backward_tables_workspace_cuda(n, k, static_cast<int>(bits), d_out, deterministic);
      auto ws = torch::empty({static_cast<int64_t>(std::max<size_t>(ws_bytes, 1))}, x2d.options().dtype(torch::kUInt8));
      kernels::hashed_lookup_backward_tables_cuda(bucket.data_ptr<int32_t>(), p.data_ptr<float>(), dy.data_ptr<float>(),
                                                  dt32.data_ptr<float>(), n, k, static_cast<int>(bits), d_out,
                                                  deterministic, ws.data_ptr(), ws_bytes, stream);
    }
    if (need_dtables) dtables = dt32.scalar_type() == tables.scalar_type() ? dt32 : dt32.to(tables.scalar_type());
    return {dx, dtables};
#else
    TORCH_CHECK(false, "memory_layer: CUDA tensors need a build with CUDA kernels");
#endif
  }
  if (x2d.scalar_type() == torch::kFloat32) {  // tables float32, bf16 or fp16
    if (need_dx) {
      dx = torch::empty_like(x2d);
      advise_huge_pages(dx);
      if (packed.numel() > 0)
        kernels::hashed_lookup_backward_input_packed_cpu(
            x2d.data_ptr<float>(), packed.data_ptr(), table_type(tables), bucket.data_ptr<int32_t>(), p.data_ptr<float>(),
            dy.data_ptr<float>(), dx.data_ptr<float>(), n, k, static_cast<int>(bits), d_out, temperature,
            torch_parallel_for());
      else
        kernels::hashed_lookup_backward_input_cpu(x2d.data_ptr<float>(), tables.data_ptr(), table_type(tables),
                                                  bucket.data_ptr<int32_t>(), p.data_ptr<float>(), dy.data_ptr<float>(),
                                                  dx.data_ptr<float>(), n, k, static_cast<int>(bits), d_out, temperature,
                                                  torch_parallel_for());
    }
    if (need_dtables) {
      auto dt32 = GradBuffers::instance().empty(tables.sizes());
      kernels::hashed_lookup_backward_tables_cpu(bucket.data_ptr<int32_t>(), p.data_ptr<float>(), dy.data_ptr<float>(),
                                                 dt32.data_ptr<float>(), n, k, static_cast<int>(bits), d_out,
                                                 torch_parallel_for());
      dtables = tables.scalar_type() == torch::kFloat32 ? dt32 : dt32.to(tables.scalar_type());
    }
    return {dx, dtables};
  }
  if (need_dx) {
    dx = torch::empty_like(x2d);
    kernels::hashed_lookup_backward_input_cpu(x2d.data_ptr<double>(), tables.data_ptr<double>(),
                                              bucket.data_ptr<int32_t>(), p.data_ptr<double>(), dy.data_ptr<double>(),
                                              dx.data_ptr<double>(), n, k, static_cast<int>(bits), d_out, temperature,
                                              torch_parallel_for());
  }
  if (need_dtables) {
    dtables = torch::empty_like(tables);
    kernels::hashed_lookup_backward_tables_cpu(bucket.data_ptr<int32_t>(), p.data_ptr<double>(), dy.data_ptr<double>(),
                                               dtables.data_ptr<double>(), n, k, static_cast<int>(bits), d_out,
                                               torch_parallel_for());
  }
  return {dx, dtables};
}

class MemoryLayerFunction : public torch::autograd::Function<MemoryLayerFunction> {
 public:
  // packed: the tables packed ahead of time (PackedTablesCache::get) or an empty tensor (an
  // undefined one cannot be an input here in LibTorch 1.13); the backward's input gradient
  // reads the same copy.
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& x2d, const torch::Tensor& tables,
                               const torch::Tensor& packed, int64_t bits, double temperature, bool deterministic) {
    auto out = forward_raw(x2d, tables, packed, bits, temperature);
    ctx->save_for_backward({x2d, tables, out[1], out[2], packed});
    ctx->saved_data["bits"] = bits;
    ctx->saved_data["temperature"] = temperature;
    ctx->saved_data["deterministic"] = deterministic;
    ctx->mark_non_differentiable({out[1], out[2]});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const bool need_dx = ctx->needs_input_grad(0), need_dt = ctx->needs_input_grad(1);
    torch::Tensor dy = grads[0];
    if (!dy.defined() || (!need_dx && !need_dt)) return {torch::Tensor(), torch::Tensor(), {}, {}, {}, {}};
    dy = dy.to(saved[0].is_cuda() ? torch::kFloat32 : saved[0].scalar_type()).contiguous();
    auto g = backward_raw(saved[0], saved[1], saved[4], saved[2], saved[3], dy, ctx->saved_data["bits"].toInt(),
                          ctx->saved_data["temperature"].toDouble(), ctx->saved_data["deterministic"].toBool(),
                          need_dx, need_dt);
    return {g[0], g[1], torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

// ---- PackedTablesCache -------------------------------------------------------------------------

torch::Tensor PackedTablesCache::get(const torch::Tensor& tables) {
  if (!tables.defined() || !tables.device().is_cpu() || tables.dim() != 3 || tables.is_inference()) return {};
  const auto dtype = tables.scalar_type();
  if (dtype != torch::kFloat32 && dtype != torch::kBFloat16 && dtype != torch::kFloat16) return {};
  const int64_t k = tables.size(0), rows = tables.size(1), d_out = tables.size(2);
  int tau = 0;
  while ((int64_t{1} << tau) < rows) ++tau;
  if ((int64_t{1} << tau) != rows || tau < kernels::kMinHashBits || tau > kernels::kMaxHashBits) return {};
  const auto version = static_cast<uint32_t>(tables._version());
  std::lock_guard<std::mutex> lock(mu_);
  if (packed_.defined() && source_.unsafeGetTensorImpl() == tables.unsafeGetTensorImpl() &&
      storage_.unsafeGetStorageImpl() == tables.storage().unsafeGetStorageImpl() && version_ == version &&
      offset_ == tables.storage_offset() && tables.sizes().equals(sizes_) && tables.strides().equals(strides_) &&
      dtype_ == dtype)
    return packed_;
  const int64_t elems = kernels::hashed_packed_elems(k, tau, d_out);
  // Packed again in place only when nobody else holds the old copy (a backward may).
  const bool reuse = packed_.defined() && packed_.scalar_type() == dtype && packed_.numel() == elems &&
                     packed_.use_count() == 1 && packed_.storage().use_count() == 1;
  source_ = torch::Tensor();
  storage_ = c10::Storage();
  if (!reuse) {
    packed_ = torch::Tensor();
    // A normal tensor also when called under InferenceMode (stepping): a later training
    // forward saves it for its backward, which an inference tensor cannot be.
    // 2 MiB-aligned and asked for as transparent huge pages, as the kernels' own slab buffers:
    // the gathers read it at random, and 4 KiB pages cost TLB misses there.
    c10::InferenceMode normal_tensor(false);
    void* mem = allocate_huge(static_cast<size_t>(elems) * c10::elementSize(dtype), "packed tables");
    packed_ = torch::from_blob(mem, {elems}, [](void* q) { std::free(q); }, tables.options().dtype(dtype));
  }
  const auto contiguous = tables.contiguous();
  kernels::hashed_pack_tables_cpu(contiguous.data_ptr(), table_type(tables), packed_.data_ptr(), k, tau, d_out,
                                  torch_parallel_for());
  source_ = tables;
  storage_ = tables.storage();
  version_ = version;
  offset_ = tables.storage_offset();
  sizes_ = tables.sizes().vec();
  strides_ = tables.strides().vec();
  dtype_ = dtype;
  ++packs_;
  return packed_;
}

void PackedTablesCache::invalidate() {
  std::lock_guard<std::mutex> lock(mu_);
  source_ = torch::Tensor();  // the next get() packs; the buffer stays for it to reuse
  storage_ = c10::Storage();
}

int64_t PackedTablesCache::packs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return packs_;
}

void validate_hash_settings(int64_t in, int64_t bits, double temperature) {
  check_range("hash_bits", bits, kernels::kMinHashBits, kernels::kMaxHashBits);
  if (in % bits != 0)
    throw field_error("hash_bits", "= " + std::to_string(bits) + " does not divide the input width " + std::to_string(in) +
                                       " of a hashed projection (d_in must be a multiple of hash_bits; with \"linear\": "
                                       "\"hashed\" pick 'dim' and 'hash_bits' so that dim % hash_bits == 0)");
  check_range("hash_temperature", temperature, RealRange{0.0, std::numeric_limits<double>::infinity(), true, true});
}

MemoryLayerOutput memory_layer(const torch::Tensor& x, const torch::Tensor& tables, const MemoryLayerOptions& opt) {
  TORCH_CHECK(opt.bits >= kernels::kMinHashBits && opt.bits <= kernels::kMaxHashBits, "memory_layer: bits must be ",
              kernels::kMinHashBits, "..", kernels::kMaxHashBits, ", got ", opt.bits);
  TORCH_CHECK(opt.temperature > 0 && std::isfinite(opt.temperature), "memory_layer: temperature must be > 0");
  TORCH_CHECK(x.defined() && x.dim() >= 1, "memory_layer: x must have at least one dimension");
  TORCH_CHECK(tables.defined() && tables.dim() == 3, "memory_layer: tables must be [K, 2^bits, d_out]");
  const int64_t d_in = x.size(-1), k = tables.size(0), d_out = tables.size(2);
  TORCH_CHECK(tables.size(1) == (int64_t{1} << opt.bits), "memory_layer: tables have ", tables.size(1),
              " rows per table, expected 2^", opt.bits);
  TORCH_CHECK(k * opt.bits == d_in, "memory_layer: x has width ", d_in, " but ", k, " tables of ", opt.bits,
              " bits need ", k * opt.bits);
  TORCH_CHECK(x.device() == tables.device(), "memory_layer: x on ", x.device(), " but tables on ", tables.device());
  if (x.is_cuda()) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "memory_layer: CUDA x must be float32, got ", x.scalar_type());
  } else {
    TORCH_CHECK(x.device().is_cpu(), "memory_layer: unsupported device ", x.device());
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 || x.scalar_type() == torch::kFloat64,
                "memory_layer: CPU x must be float32 or float64, got ", x.scalar_type());
    const bool half_tables = tables.scalar_type() == torch::kBFloat16 || tables.scalar_type() == torch::kFloat16;
    TORCH_CHECK(tables.scalar_type() == x.scalar_type() || (x.scalar_type() == torch::kFloat32 && half_tables),
                "memory_layer: CPU tables must have x's dtype ", x.scalar_type(),
                (x.scalar_type() == torch::kFloat32 ? " (or bfloat16 / float16)" : ""), ", got ", tables.scalar_type());
  }
  std::vector<int64_t> out_shape(x.sizes().begin(), x.sizes().end());
  out_shape.back() = d_out;
  auto x2d = x.reshape({-1, d_in}).contiguous();
  torch::Tensor packed;
  if (opt.packed && x.device().is_cpu() && x.scalar_type() == torch::kFloat32) packed = opt.packed->get(tables);
  if (!packed.defined()) packed = torch::empty({0}, x.options());
  auto out = MemoryLayerFunction::apply(x2d, tables.contiguous(), packed, opt.bits, opt.temperature,
                                        want_deterministic(opt.deterministic));
  return {out[0].view(out_shape), out[1], out[2]};
}

// ---- HashedProjection ----------------------------------------------------------------------

HashedProjectionImpl::HashedProjectionImpl(int64_t in, int64_t out, int64_t bits_, double temperature_)
    : ProjectionImpl(in, out), bits(bits_), temperature(temperature_) {
  validate_hash_settings(in, bits_, temperature_);
  tables_count = in / bits_;
  buckets = int64_t{1} << bits_;
  const double bound = 1.0 / std::sqrt(static_cast<double>(tables_count));
  tables = register_parameter("tables", torch::empty({tables_count, buckets, out}).uniform_(-bound, bound));
}

void HashedProjectionImpl::set_tracer(Tracer* tracer, std::string path) {
  tracer_ = tracer;
  trace_path_ = std::move(path);
}

MemoryLayerOutput HashedProjectionImpl::forward_full(const torch::Tensor& x) {
  auto out = memory_layer(x, tables, MemoryLayerOptions{bits, temperature, deterministic, packed_tables.get()});
  if (tracer_) {
    const std::string kb = keys::hash_bucket_key(trace_path_), kp = keys::hash_p_key(trace_path_), kc = keys::hash_counts_key(trace_path_);
    const Trace& tr = tracer_->trace();
    // Called again in the same step (e.g. the writer's k on memory and on tokens): append.
    if (tracer_->wants(kb))
      tracer_->put(kb, tr.has(kb) ? torch::cat({tr.at(kb), out.bucket.to(torch::kCPU)}, 0) : out.bucket);
    if (tracer_->wants(kp)) {
      auto p32 = out.p.to(torch::kFloat32);
      tracer_->put(kp, tr.has(kp) ? torch::cat({tr.at(kp), p32.to(torch::kCPU)}, 0) : p32);
    }
    if (tracer_->wants(kc)) {
      auto c = bucket_counts(out.bucket, buckets);
      tracer_->put(kc, tr.has(kc) ? tr.at(kc) + c.to(torch::kCPU) : c);
    }
  }
  return out;
}

torch::Tensor HashedProjectionImpl::forward(const torch::Tensor& x) { return forward_full(x).y; }

// ---- MemoryBlock -----------------------------------------------------------------------------

MemoryBlockImpl::MemoryBlockImpl(int64_t dim_, int64_t bits_, double temperature, bool input_norm)
    : dim(dim_), bits(bits_) {
  validate_hash_settings(dim_, bits_, temperature);
  if (bits_ + 2 > kernels::kMaxHashBits)
    throw field_error("hash_bits", "= " + std::to_string(bits_) +
                      " is too large for the Memory Block (the FFN with \"linear\": \"hashed\"): its second layer "
                      "hashes chunks of hash_bits + 2 = " + std::to_string(bits_ + 2) + " bits, at most " +
                      std::to_string(kernels::kMaxHashBits) + "; use hash_bits <= " +
                      std::to_string(kernels::kMaxHashBits - 2));
  hidden = (bits_ + 2) * (dim_ / bits_);
  if (input_norm) in_norm = register_module("in_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim_})));
  fc1 = std::make_shared<HashedProjectionImpl>(dim_, hidden, bits_, temperature);
  register_module("fc1", fc1);
  mid_norm = register_module("mid_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})));
  fc2 = std::make_shared<HashedProjectionImpl>(hidden, dim_, bits_ + 2, temperature);
  register_module("fc2", fc2);
}

torch::Tensor MemoryBlockImpl::forward(const torch::Tensor& x) {
  auto h = in_norm ? in_norm->forward(x) : x;
  return fc2->forward(mid_norm->forward(fc1->forward(h)));
}

// ---- tracing ---------------------------------------------------------------------------------

int64_t attach_hash_tracing(torch::nn::Module& root, Tracer* tracer) {
  int64_t n = 0;
  for (const auto& item : root.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    if (auto* h = dynamic_cast<HashedProjectionImpl*>(item.value().get())) {
      h->set_tracer(tracer, tracer ? item.key() : std::string());
      ++n;
    }
  }
  return n;
}

HashTracingScope::HashTracingScope(torch::nn::Module& root, Tracer* tracer) {
  if (!tracer) return;
  // Skip the module walk when the spec cannot ask for any hash.* key.
  bool may_want = false;
  for (const auto& pat : tracer->spec().patterns) {
    const std::string prefix = keys::kHashPrefix;
    const std::string head = !pat.empty() && pat.back() == '*' ? pat.substr(0, pat.size() - 1) : pat;
    const size_t n = std::min(head.size(), prefix.size());
    may_want = may_want || head.compare(0, n, prefix, 0, n) == 0;
  }
  if (may_want && attach_hash_tracing(root, tracer) > 0) root_ = &root;
}

HashTracingScope::~HashTracingScope() {
  if (root_) attach_hash_tracing(*root_, nullptr);
}

}  // namespace mnemo
