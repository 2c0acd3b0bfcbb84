// Small GEMMs of row-major buffers for the shapes of per-sample weight products (a GCN
// layer on one graph: tens of rows, 16-64 columns), used by the transform sum and the
// per-grounding weight products (executor.cpp): register-blocked kernels that read
// the operands in place, where Eigen packs both operands on every call (a third of its
// time at these sizes). The output's columns run in blocks of 64, 32, 16 and 8 (whole
// vectors up to kSmallGemmMaxWidth), the columns left padded with zeros to a block when
// they fill a quarter of it (pads_tail: a width of 37 is 32, then 5 padded to 8 or 16). A
// width under 16 that would take a block and a padded tail runs as one block of its own
// instead (small_gemm_narrow: a width of 10 in doubles is a vector of 8 and one of 2 per
// row). Narrower tails (a width of 1) and depths over 512 take Eigen's product.
//
// Every output entry of the kernel is the FMA chain over the depth in order (a multiply
// and an add on a CPU without FMA), starting from zero, then added to (or stored in) the
// destination: the same for every entry wherever it lies in the blocking, so the rows of
// one product never depend on the other rows (the transform sum's rows equal the
// per-grounding path's). Eigen's product rounds differently for some shapes (small
// products, one-row products, its one-packet tail splits the depth into even and odd
// steps), so float64 bits may differ from Eigen's in the last places.
#pragma once

#include "exec/scalar.hpp"

namespace lrnn::exec {

template <class T>
using SmallGemmPacket = typename Eigen::internal::packet_traits<T>::type;
template <class T>
constexpr int kSmallGemmPacketSize = Eigen::internal::unpacket_traits<SmallGemmPacket<T>>::size;
// The widest block of output columns (64, 32 or 16) the kernel takes: four vectors (64
// floats, 32 doubles with AVX-512). Wider, a row block holds fewer rows and its right
// operand outgrows the first-level cache: a double block of 64 ran at half Eigen's speed.
template <class T>
constexpr int kSmallGemmMaxWidth = 4 * kSmallGemmPacketSize<T>;

// Whether the kernel runs w output columns as one block: 8, 16, 32 or 64, whole vectors, up
// to its widest.
template <class T>
constexpr bool small_gemm_block(long w) {
  return (w == 8 || w == 16 || w == 32 || w == 64) && w % kSmallGemmPacketSize<T> == 0 && w <= kSmallGemmMaxWidth<T>;
}

// The narrowest block of 8 and 16 the kernel takes, 0 if neither: what the columns left
// after the blocks are padded to.
template <class T>
constexpr int kSmallGemmTailWidth = small_gemm_block<T>(8) ? 8 : small_gemm_block<T>(16) ? 16 : 0;

// The block r columns left after the blocks are padded to: 8 if they fit, else 16.
template <class T>
constexpr long small_gemm_tail_block(long r) {
  return r <= kSmallGemmTailWidth<T> ? kSmallGemmTailWidth<T> : 16;
}

// Whether r columns left after the blocks (r < 16) run on the kernel, padded: when they
// fill at least a quarter of the block they are padded to.
template <class T>
constexpr bool pads_tail(long r) {
  const long w = small_gemm_tail_block<T>(r);
  return kSmallGemmTailWidth<T> > 0 && r > 0 && r < 16 && small_gemm_block<T>(w) && 4 * r >= w;
}

// Whether a width n under 16 runs as one block of its own (small_gemm.cpp's RowLanes: whole
// vectors, halves, quarters, then scalars) instead of a block and a padded tail: where every
// column of it would be the kernel's anyway (the blocks' and the padded tail's), so each
// entry is the same FMA chain.
template <class T>
constexpr bool small_gemm_narrow(long n) {
  const long blocks = small_gemm_block<T>(8) && n > 8 ? 8 : 0;
  return n > 0 && n < 16 && !small_gemm_block<T>(n) && pads_tail<T>(n - blocks);
}

// The largest weight (entries) product_abt runs on the kernel, reading its transpose: kept
// per thread for such weights, or given (Bt below).
inline constexpr long kSmallGemmMaxTransposed = 1L << 16;

// C (m x n) = A (m x k) B^T, B (n x k): z = W x for m inputs x (rows of A), W = B. Bt, when
// given, is B^T (k x n) itself (ParamView::transposed): read instead of a transposed copy
// kept per thread and checked against B's values on every call.
template <class T>
void product_abt(Eigen::Index m, Eigen::Index k, Eigen::Index n, const T* A, const T* B, T* C,
                 const T* Bt = nullptr);

// C (m x n) += A (m x k) B^T: z += W x, a second head weight into the same rows
// (RuleGroup::adds_to_out). Each entry's FMA chain starts from zero and is then added.
template <class T>
void add_product_abt(Eigen::Index m, Eigen::Index k, Eigen::Index n, const T* A, const T* B, T* C,
                     const T* Bt = nullptr);

// C (m x n) += A (m x k) B, B (k x n): the inputs' gradients gX += gZ W.
template <class T>
void add_product_ab(Eigen::Index m, Eigen::Index k, Eigen::Index n, const T* A, const T* B, T* C);

// C (m x n) += A^T B, A (k x m), B (k x n): a weight's gradient gW += gZ^T X. The columns
// left after the blocks take the kernel too (on C^T) when m is a block width.
template <class T>
void add_product_atb(Eigen::Index m, Eigen::Index k, Eigen::Index n, const T* A, const T* B, T* C);

}  // namespace lrnn::exec
