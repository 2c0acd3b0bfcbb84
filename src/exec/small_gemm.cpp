#include "exec/small_gemm.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "exec/multiply_add.hpp"
#include "exec/scalar.hpp"

namespace lrnn::exec {

namespace {

using Eigen::Index;
template <class T>
using Packet = SmallGemmPacket<T>;

// Vector accumulators per row block: what the registers hold besides a row of the right
// operand and the broadcast factor (32 registers with AVX-512, 16 before).
constexpr int kAccumulators = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS >= 32 ? 24 : 12;
// Longer depths take Eigen's product: the kernel streams the whole right operand
// (depth x width) once per row block, which must stay in the caches near the core.
constexpr Index kMaxDepth = 512;
constexpr Index kMaxTransposed = kSmallGemmMaxTransposed;

// Where a row block's results go: C's rows (=, +=), or C's columns (+=, for C^T = ...).
enum class Store { Assign, Add, AddTransposed };

// How a row of N output columns lies in vectors: NP whole packets P, then the rest of
// fewer than PS columns in HP half packets H, QP quarter packets Q and SC scalars (a width of
// 10 in doubles with AVX-512: one Packet8d and one Packet2d; in floats: one Packet8f and two
// scalars). Every lane of every part, and a scalar through Eigen's pmadd, is the same fused
// multiply-add (a multiply and an add without FMA), so each column's chain is the same
// whichever part holds it.
// (GCC warns that a vector type's alignment attribute is dropped as a template argument, as
// Eigen's own headers do where they disable the warning: the types are only named here.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
template <class T, int N>
struct RowLanes {
  using P = Packet<T>;
  using H = typename Eigen::internal::unpacket_traits<P>::half;
  using Q = typename Eigen::internal::unpacket_traits<H>::half;
  static constexpr int PS = kSmallGemmPacketSize<T>;
  static constexpr int HS = Eigen::internal::unpacket_traits<H>::size;
  static constexpr int QS = Eigen::internal::unpacket_traits<Q>::size;
  static constexpr int NP = N / PS;
  static constexpr int HP = HS < PS ? (N - NP * PS) / HS : 0;
  static constexpr int QP = QS < HS && HS < PS ? (N - NP * PS - HP * HS) / QS : 0;
  static constexpr int H0 = NP * PS, Q0 = H0 + HP * HS, S0 = Q0 + QP * QS, SC = N - S0;
  static constexpr int registers = NP + HP + QP + SC;  // the accumulators of one row
};

// f(0), f(1), ..., f(N - 1), each index a compile-time constant
// (std::integral_constant<int, i>): straight-line code with constant subscripts from the
// start. Written as loops, the accumulator arrays below were indexed by loop counters until
// GCC unrolled the loops, after the pass that keeps small arrays in registers had given
// up on them: they lived on the stack, zeroed there before the depth loop and stored there
// after it, the Add store reading them back (26 stores and 16 loads per block of 8 rows of
// a width of 10 in doubles, besides its 160 FMAs).
template <int N, class F>
inline void for_each_index(F&& f) {
  [&]<int... i>(std::integer_sequence<int, i...>) {
    (f(std::integral_constant<int, i>{}), ...);
  }(std::make_integer_sequence<int, N>{});
}

// The accumulators of R rows for one part of the row (Count vectors of type V, at column
// First): none when Count is 0.
template <class V, int R, int Count, int Size, int First>
struct RowPart {
  V acc[R][Count > 0 ? Count : 1];
  void zero() {
    for_each_index<R>([&](auto r) {
      for_each_index<Count>([&](auto p) { acc[r][p] = Eigen::internal::pset1<V>(0); });
    });
  }
  template <class T>
  void madd(const T* a, const T* b_row) {
    if constexpr (Count > 0) {
      V b[Count];
      for_each_index<Count>([&](auto p) { b[p] = Eigen::internal::ploadu<V>(b_row + First + p * Size); });
      for_each_index<R>([&](auto r) {
        const V ar = Eigen::internal::pset1<V>(a[r]);
        for_each_index<Count>([&](auto p) { acc[r][p] = Eigen::internal::pmadd(ar, b[p], acc[r][p]); });
      });
    }
  }
  template <int r, class T>
  void store(T* row) const {
    for_each_index<Count>([&](auto p) { Eigen::internal::pstoreu(row + First + p * Size, acc[r][p]); });
  }
  template <int r, class T>
  void add_to(T* row) const {
    for_each_index<Count>([&](auto p) {
      T* c = row + First + p * Size;
      Eigen::internal::pstoreu(c, Eigen::internal::padd(Eigen::internal::ploadu<V>(c), acc[r][p]));
    });
  }
};

// R rows of A B, A(i, d) = A[i * ai + d * ad], B row-major (k x N, rows ldb apart), each
// output the FMA chain over d in order from zero. Row r, column j goes to C[r * ldc + j]
// (Assign, Add) or C[j * ldc + r] (AddTransposed). N is whole vectors (a block), or a width
// under 16 in vectors and their halves and quarters, then scalars (RowLanes).
// (flatten: every fold and lambda below inlined into the block. Left to GCC, the float
// kernel of a width of 10 called its scalar part's lambda once per depth step.)
template <class T, int N, int R, Store S>
[[gnu::flatten]] void kernel_rows(Index k, const T* A, Index ai, Index ad, const T* B, Index ldb, T* C, Index ldc) {
  using L = RowLanes<T, N>;
  RowPart<typename L::P, R, L::NP, L::PS, 0> whole;
  RowPart<typename L::H, R, L::HP, L::HS, L::H0> halves;
  RowPart<typename L::Q, R, L::QP, L::QS, L::Q0> quarters;
  RowPart<T, R, L::SC, 1, L::S0> scalars;
  whole.zero();
  halves.zero();
  quarters.zero();
  scalars.zero();
  for (Index d = 0; d < k; ++d) {
    T a[R];
    for_each_index<R>([&](auto r) { a[r] = A[r * ai + d * ad]; });
    const T* b = B + d * ldb;
    whole.madd(a, b);
    halves.madd(a, b);
    quarters.madd(a, b);
    scalars.madd(a, b);
  }
  for_each_index<R>([&](auto rc) {
    constexpr int r = decltype(rc)::value;
    if constexpr (S == Store::AddTransposed) {
      alignas(64) T row[N];
      whole.template store<r>(row);
      halves.template store<r>(row);
      quarters.template store<r>(row);
      scalars.template store<r>(row);
      for (int j = 0; j < N; ++j) C[j * ldc + r] += row[j];
    } else if constexpr (S == Store::Add) {
      whole.template add_to<r>(C + r * ldc);
      halves.template add_to<r>(C + r * ldc);
      quarters.template add_to<r>(C + r * ldc);
      scalars.template add_to<r>(C + r * ldc);
    } else {
      whole.template store<r>(C + r * ldc);
      halves.template store<r>(C + r * ldc);
      quarters.template store<r>(C + r * ldc);
      scalars.template store<r>(C + r * ldc);
    }
  });
}

#pragma GCC diagnostic pop

// The last rows < R of a product, as one block of their count.
template <class T, int N, int R, Store S>
void tail_rows(Index rows, Index k, const T* A, Index ai, Index ad, const T* B, Index ldb, T* C,
               Index ldc) {
  if constexpr (R > 0) {
    if (rows == R) return kernel_rows<T, N, R, S>(k, A, ai, ad, B, ldb, C, ldc);
    tail_rows<T, N, R - 1, S>(rows, k, A, ai, ad, B, ldb, C, ldc);
  }
}

// All m rows of A B (see kernel_rows) in blocks of R.
template <class T, int N, Store S>
void kernel(Index m, Index k, const T* A, Index ai, Index ad, const T* B, Index ldb, T* C, Index ldc) {
  constexpr int R = std::clamp(kAccumulators / RowLanes<T, N>::registers, 1, 8);
  auto out = [&](Index i) { return S == Store::AddTransposed ? C + i : C + i * ldc; };
  Index i = 0;
  for (; i + R <= m; i += R) kernel_rows<T, N, R, S>(k, A + i * ai, ai, ad, B, ldb, out(i), ldc);
  tail_rows<T, N, R - 1, S>(m - i, k, A + i * ai, ai, ad, B, ldb, out(i), ldc);
}

// The kernel for a width N of 8 (when whole vectors), 16, 32 or 64 up to kSmallGemmMaxWidth
// and a depth up to kMaxDepth; false otherwise.
template <class T, Store S>
bool run_kernel(Index N, Index m, Index k, const T* A, Index ai, Index ad, const T* B, Index ldb,
                T* C, Index ldc) {
  if (k > kMaxDepth || N > kSmallGemmMaxWidth<T>) return false;
  if constexpr (small_gemm_block<T>(8))
    if (N == 8) return kernel<T, 8, S>(m, k, A, ai, ad, B, ldb, C, ldc), true;
  if constexpr (small_gemm_block<T>(16))
    if (N == 16) return kernel<T, 16, S>(m, k, A, ai, ad, B, ldb, C, ldc), true;
  if constexpr (small_gemm_block<T>(32))
    if (N == 32) return kernel<T, 32, S>(m, k, A, ai, ad, B, ldb, C, ldc), true;
  if constexpr (small_gemm_block<T>(64))
    if (N == 64) return kernel<T, 64, S>(m, k, A, ai, ad, B, ldb, C, ldc), true;
  return false;
}

// The kernel for a narrow width n (small_gemm_narrow: under 16, the columns a block and a
// padded tail would take) as one block of its own: a width of 10 in doubles is a vector of
// 8 and one of 2 per row, where the padded tail ran a second pass of 8 columns for 2 and
// copied B's and C's columns on every call (a tenth of a batch-of-one GraphSAGE step).
template <class T, Store S, int N>
bool run_width(Index n, Index m, Index k, const T* A, Index ai, Index ad, const T* B, Index ldb, T* C, Index ldc) {
  if constexpr (small_gemm_narrow<T>(N)) {
    if (n == N) return kernel<T, N, S>(m, k, A, ai, ad, B, ldb, C, ldc), true;
  }
  return false;
}
template <class T, Store S, Index... W>
bool run_narrow(Index n, Index m, Index k, const T* A, Index ai, Index ad, const T* B, Index ldb, T* C,
                Index ldc, std::integer_sequence<Index, W...>) {
  if (k > kMaxDepth || !small_gemm_narrow<T>(n)) return false;
  return (run_width<T, S, int(W + 1)>(n, m, k, A, ai, ad, B, ldb, C, ldc) || ...);
}
template <class T, Store S>
bool run_narrow(Index n, Index m, Index k, const T* A, Index ai, Index ad, const T* B, Index ldb, T* C,
                Index ldc) {
  return run_narrow<T, S>(n, m, k, A, ai, ad, B, ldb, C, ldc, std::make_integer_sequence<Index, 15>{});
}

// Up to how many entries a B is transposed on every call instead of looked up: checking a
// kept transpose against B (a compare and, when B changed, a copy of B) cost twice the
// transpose itself at 10 x 10 (30 ns against 15), and at batch 1 every weight changes
// between passes, so the check never paid: 3% of the NCI1 GraphSAGE epoch.
constexpr Index kTransposedEveryCall = 256;

// out (k x n) = B^T for B (n x k), both sizes known at compile time: straight-line copies.
// Eigen's transpose of a map of runtime size took an element per loop trip: 3% of the NCI1
// GraphSAGE epoch at batch 1, whose layer-1 GEMMs transpose two 10 x 10 weights per graph.
template <int N, int K, class T>
void transpose_fixed(const T* B, T* out) {
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < K; ++i) out[i * N + j] = B[j * K + i];
}

// B^T (k x n) of B (n x k), kept per thread for the last few B: a weight is the same for
// every sample of a batch, and transposing it per call would cost as much as the product.
// An entry is reused only when B's values are bit for bit those it was made from. Small B
// (kTransposedEveryCall) are transposed into a per-thread buffer on every call; the
// pointer is good until the thread's next call.
template <class T>
const T* transposed(const T* B, Index n, Index k) {
  if (n * k <= kTransposedEveryCall) {
    thread_local std::array<T, kTransposedEveryCall> scratch;
    if (n == 10 && k == 10) transpose_fixed<10, 10>(B, scratch.data());
    else if (n == 8 && k == 8) transpose_fixed<8, 8>(B, scratch.data());
    else MapM<T>(scratch.data(), k, n) = CMapM<T>(B, n, k).transpose();
    return scratch.data();
  }
  struct Entry {
    const T* source = nullptr;
    Index n = 0, k = 0;
    std::vector<T> copy, transposed;
  };
  thread_local std::array<Entry, 8> cache;
  thread_local size_t next = 0;
  const size_t bytes = sizeof(T) * size_t(n) * size_t(k);
  auto same_source = [&](const Entry& e) { return e.source == B && e.n == n && e.k == k; };
  auto hit = std::find_if(cache.begin(), cache.end(), same_source);
  if (hit != cache.end() && std::memcmp(hit->copy.data(), B, bytes) == 0) return hit->transposed.data();
  Entry& e = hit != cache.end() ? *hit : cache[next++ % cache.size()];
  e.source = B;
  e.n = n;
  e.k = k;
  e.copy.assign(B, B + n * k);
  e.transposed.resize(size_t(n) * size_t(k));
  MapM<T>(e.transposed.data(), k, n) = CMapM<T>(B, n, k).transpose();
  return e.transposed.data();
}

// C's columns in blocks of the kernel's widths (64, 32, 16, 8: those of whole vectors up
// to kSmallGemmMaxWidth), widest first, as rows of C (+)= A B, A(i, d) = A[i * ai + d * ad],
// B's and C's rows n apart; returns how many columns it did (none past the depth limit).
template <class T, Store S>
Index run_column_blocks(Index m, Index k, Index n, const T* A, Index ai, Index ad, const T* B, T* C) {
  if (k > kMaxDepth) return 0;
  Index j = 0;
  for (Index w : {64, 32, 16, 8})
    if (small_gemm_block<T>(w))
      for (; n - j >= w; j += w) run_kernel<T, S>(w, m, k, A, ai, ad, B + j, n, C + j, n);
  return j;
}

// Rows of B's last r columns (r < 16) copied into rows of width w: a copy of a fixed
// count per r, which compiles to moves (a loop of r entries compiled to a memmove call).
template <Index R, class T>
void copy_columns(Index k, const T* B, Index n, T* dst, Index w) {
  for (Index d = 0; d < k; ++d)
    for (Index c = 0; c < R; ++c) dst[d * w + c] = B[d * n + c];
}
template <class T, Index... R>
void copy_tail_columns(Index r, Index k, const T* B, Index n, T* dst, Index w, std::integer_sequence<Index, R...>) {
  (void)((r == R + 1 && (copy_columns<R + 1>(k, B, n, dst, w), true)) || ...);
}

// C's columns [j, n), fewer than 16 and at least a quarter of the block they are padded
// to (pads_tail), (+)= A B as run_column_blocks: their B columns copied
// into a buffer of a kernel width (8 or 16), the kernel's rows stored in a
// second buffer and copied (added) to C: the 5 columns of a width of 37 (a width under 16
// runs on run_narrow instead). Eigen's product would pack both operands on every call: for
// a width of 10 (PyNeuraLogic's templates' default) that was over half of a batch-of-one
// step's time. Each stored entry is the kernel's, the FMA chain in
// order, so the contract holds on every column. Returns whether it ran (depth and width
// within the kernel's limits). A narrower tail stays on Eigen's product: one column (a
// readout's W x over every node) padded to 16 would multiply 16 times over, 5% of a GCN's
// batch-32 epoch on NCI1.
template <class T, Store S>
bool run_tail_columns(Index m, Index k, Index n, Index j, const T* A, Index ai, Index ad, const T* B, T* C) {
  const Index r = n - j;
  if (k > kMaxDepth || !pads_tail<T>(r)) return false;
  const Index w = small_gemm_tail_block<T>(r);
  thread_local std::vector<T> padded_b, rows;
  // Only the r columns are written. The padding columns keep whatever an earlier call left
  // (zeros when the buffer grows): each output column of the kernel reads its own column of
  // B alone, and the padding's outputs are dropped. Writing each row whole went to the C
  // library's memset and memmove, call by call, for a few entries each: on a template of
  // 3 x 3 weights (bench/mutagenesis.py) a tenth of the epoch.
  if (padded_b.size() < size_t(k * w)) padded_b.resize(size_t(k * w), T(0));
  copy_tail_columns(r, k, B + j, n, padded_b.data(), w, std::make_integer_sequence<Index, 15>{});
  rows.resize(size_t(m * w));
  run_kernel<T, Store::Assign>(w, m, k, A, ai, ad, padded_b.data(), w, rows.data(), w);
  for (Index i = 0; i < m; ++i) {
    const T* row = rows.data() + i * w;
    T* c = C + i * n + j;
    for (Index c_j = 0; c_j < r; ++c_j) {
      if constexpr (S == Store::Add) c[c_j] += row[c_j];
      else c[c_j] = row[c_j];
    }
  }
  return true;
}

// C (+)= A B's columns in the kernel (blocks, then the padded tail); returns how many it did:
// all but past the depth limit, or the tail's when the build has no kernel width for it.
template <class T, Store S>
Index run_all_columns(Index m, Index k, Index n, const T* A, Index ai, Index ad, const T* B, T* C) {
  if (run_narrow<T, S>(n, m, k, A, ai, ad, B, n, C, n)) return n;
  const Index j = run_column_blocks<T, S>(m, k, n, A, ai, ad, B, C);
  return j == n || run_tail_columns<T, S>(m, k, n, j, A, ai, ad, B, C) ? n : j;
}

template <class T>
using Columns = Eigen::Map<RowMat<T>, 0, Eigen::OuterStride<>>;
template <class T>
using ConstColumns = Eigen::Map<const RowMat<T>, 0, Eigen::OuterStride<>>;

// Up to how many rows of A a product A B^T without a kept B^T runs as dot products
// (few_rows_abt) instead of transposing B for the kernel.
constexpr Index kFewRows = 4;

// C (+)= A B^T for a few rows, each entry the dot product of two contiguous rows: the
// kernel's arithmetic (the FMA chain over the depth in order from zero, then stored or
// added), without the transposed copy of B the kernel reads. For a graph readout's one row
// under a 10 x 10 float64 weight that copy cost more than the product (5% of the NCI1
// GraphSAGE epoch at batch 1, whose readout carries two weights).
template <class T, Store S>
void few_rows_abt(Index m, Index k, Index n, const T* A, const T* B, T* C) {
  for (Index i = 0; i < m; ++i)
    for (Index j = 0; j < n; ++j) {
      T dot = T(0);
      for (Index d = 0; d < k; ++d) dot = multiply_add(A[i * k + d], B[j * k + d], dot);
      if constexpr (S == Store::Add) C[i * n + j] += dot;
      else C[i * n + j] = dot;
    }
}

// C = A B^T (Store::Assign) or C += A B^T (Store::Add).
template <class T, Store S>
void product_abt_stored(Index m, Index k, Index n, const T* A, const T* B, T* C, const T* Bt) {
  // The kernel reads B^T; weights past kMaxTransposed entries keep Eigen's product.
  const bool kernel = k > 0 && k <= kMaxDepth && n * k <= kMaxTransposed;
  // A few rows without a kept B^T, where the kernel would take every column as one narrow
  // block: the same entries without the transpose.
  if (kernel && !Bt && m <= kFewRows && small_gemm_narrow<T>(n)) return few_rows_abt<T, S>(m, k, n, A, B, C);
  const Index j = kernel ? run_all_columns<T, S>(m, k, n, A, k, 1, Bt ? Bt : transposed(B, n, k), C) : 0;
  if (j == n) return;
  Columns<T> rest(C + j, m, n - j, Eigen::OuterStride<>(n));
  const auto product = CMapM<T>(A, m, k) * CMapM<T>(B + j * k, n - j, k).transpose();
  if constexpr (S == Store::Assign) rest.noalias() = product;
  else rest.noalias() += product;
}

}  // namespace

template <class T>
void product_abt(Index m, Index k, Index n, const T* A, const T* B, T* C, const T* Bt) {
  product_abt_stored<T, Store::Assign>(m, k, n, A, B, C, Bt);
}

template <class T>
void add_product_abt(Index m, Index k, Index n, const T* A, const T* B, T* C, const T* Bt) {
  product_abt_stored<T, Store::Add>(m, k, n, A, B, C, Bt);
}

template <class T>
void add_product_ab(Index m, Index k, Index n, const T* A, const T* B, T* C) {
  const Index j = run_all_columns<T, Store::Add>(m, k, n, A, k, 1, B, C);
  if (j == n) return;
  Columns<T>(C + j, m, n - j, Eigen::OuterStride<>(n)).noalias() +=
      CMapM<T>(A, m, k) * ConstColumns<T>(B + j, k, n - j, Eigen::OuterStride<>(n));
}

template <class T>
void add_product_atb(Index m, Index k, Index n, const T* A, const T* B, T* C) {
  // A deep product of narrow operands (a big graph's weight gradient: 32 x 2M times 2M x 32)
  // in slices of kMaxDepth: each slice's FMA chains run in the kernel and are added to C.
  // Eigen's product packs both operands whole first, which streams them through memory
  // twice more than the products' one pass: a tenth of the 2M-node graph's epoch.
  if (k > kMaxDepth && m <= kSmallGemmMaxWidth<T> && small_gemm_block<T>(n)) {
    for (Index d = 0; d < k; d += kMaxDepth)
      add_product_atb(m, std::min(kMaxDepth, k - d), n, A + d * m, B + d * n, C);
    return;
  }
  // The columns left (fewer than 16) as rows of C^T = B^T A when m is a kernel width:
  // their transposed stores cost as much as their products (a weight of 32 x 37 takes
  // 32 + 5; of 32 x 10, 8 + 2 rows of 32, fewer vectors than 32 rows of 8 + 2); otherwise
  // a narrow n as one block (10 x 10), or the padded tail (10 x 37: 32 + 5 padded to 8).
  if (!small_gemm_block<T>(m) && run_narrow<T, Store::Add>(n, m, k, A, 1, m, B, n, C, n)) return;
  const Index j = run_column_blocks<T, Store::Add>(m, k, n, A, 1, m, B, C);
  if (j == n || run_kernel<T, Store::AddTransposed>(m, n - j, k, B + j, 1, n, A, m, C + j, n) ||
      run_tail_columns<T, Store::Add>(m, k, n, j, A, 1, m, B, C))
    return;
  Columns<T>(C + j, m, n - j, Eigen::OuterStride<>(n)).noalias() +=
      CMapM<T>(A, k, m).transpose() * ConstColumns<T>(B + j, k, n - j, Eigen::OuterStride<>(n));
}

template void product_abt<double>(Index, Index, Index, const double*, const double*, double*, const double*);
template void product_abt<float>(Index, Index, Index, const float*, const float*, float*, const float*);
template void add_product_abt<double>(Index, Index, Index, const double*, const double*, double*, const double*);
template void add_product_abt<float>(Index, Index, Index, const float*, const float*, float*, const float*);
template void add_product_ab<double>(Index, Index, Index, const double*, const double*, double*);
template void add_product_ab<float>(Index, Index, Index, const float*, const float*, float*);
template void add_product_atb<double>(Index, Index, Index, const double*, const double*, double*);
template void add_product_atb<float>(Index, Index, Index, const float*, const float*, float*);

}  // namespace lrnn::exec
