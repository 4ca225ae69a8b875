// Which BLAS this process really uses, read from the loaded shared objects (not guessed
// from the package list), and its thread count.
//
// LibTorch (Debian's libtorch) calls the Fortran BLAS symbols (sgemm_, ...) of whatever
// `libblas.so.3` the dynamic linker found. On a fresh Debian 12 machine that is the
// reference Netlib BLAS (/usr/lib/x86_64-linux-gnu/blas/libblas.so.3), tens of times slower
// than OpenBLAS for the projections every model here is made of (docs/benchmarks.md
// "BLAS"); installing `libopenblas0-pthread` (done by `bash .ci/setup`) makes the
// alternative point to OpenBLAS.
//
// probe_blas() asks the dynamic linker which object defines `sgemm_` in the global scope
// (dlsym(RTLD_DEFAULT) + dladdr: the definition every caller binds to), resolves its path
// through symlinks (the Debian alternatives), and lists every BLAS-like object mapped into
// the process (dl_iterate_phdr). Linux/glibc only; elsewhere it reports "unknown".
#pragma once
#include <string>
#include <vector>

namespace mnemo::platform {

enum class BlasKind { kUnknown, kReference, kOpenBlas, kMkl, kBlis, kOther };

struct BlasInfo {
  BlasKind kind = BlasKind::kUnknown;
  std::string name;         // "OpenBLAS 0.3.21 ...", "reference BLAS (Netlib)", ...
  std::string path;         // object that defines sgemm_ as loaded ("/lib/x86_64-linux-gnu/libblas.so.3")
  std::string real_path;    // the same after symlinks ("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3")
  int threads = -1;         // OpenBLAS's own thread count (openblas_get_num_threads), -1 when unknown
  std::vector<std::string> loaded;  // every mapped object whose name looks like a BLAS / LAPACK, and the one
                                    // that defines sgemm_ whatever its name (real paths)

  bool is_reference() const { return kind == BlasKind::kReference; }
  // One line for `mnemoscope info`, e.g. "OpenBLAS 0.3.21 (/usr/lib/.../libblas.so.3), 2 threads".
  std::string summary() const;
};

// Classifies the process's BLAS (see above). Never throws.
BlasInfo probe_blas();

// The fix printed when the reference BLAS is in use.
const char* reference_blas_fix();

// Sets LibTorch's intra-op threads and, when the BLAS is OpenBLAS, its own pool
// (openblas_set_num_threads), so that `--threads N` bounds both. n >= 1.
void set_compute_threads(int n);

// Number of online CPU cores (>= 1).
int cpu_cores();

// The intra-op threads used when `--threads` is not given: OMP_NUM_THREADS when it is set to
// a positive integer (the convention OpenMP, OpenBLAS and PyTorch follow), else 1. Not one per
// core: with Debian's OpenBLAS (the pthreads build) LibTorch's OpenMP pool and OpenBLAS's pool
// compete for the same cores, and at this program's model sizes a second thread did not pay
// for itself even without that (docs/training.md "Threads and BLAS": training 2.8-3.6x and
// the app's stepping 9x slower with one thread per core on 2 cores). *from_env, when given,
// says which.
int default_compute_threads(bool* from_env = nullptr);

}  // namespace mnemo::platform
