// Combination kernels: how a rule's weighted inputs (or an atom's weighted aggregates)
// combine into one value, for a whole batch of `count` neurons at once.
#include <algorithm>
#include <cmath>
#include <vector>


#include "exec/functions.hpp"

namespace lrnn::exec {

namespace {


template <class T>
constexpr T kCosSimEps = 1e-8;  // PyTorch's cosine_similarity eps

template <class T>
struct CosSimSums {
  T dot, a_sq, b_sq;  // a.b, |a|^2, |b|^2
};
// The three sums cossim's forward and backward both need, in one pass.
template <class T>
inline CosSimSums<T> cossim_sums(const T* a, const T* b, int m) {
  CosSimSums<T> s{0, 0, 0};
  for (int e = 0; e < m; ++e) {
    s.dot += a[e] * b[e];
    s.a_sq += a[e] * a[e];
    s.b_sq += b[e] * b[e];
  }
  return s;
}

// Stride of input i inside an element-wise value of n entries: scalars broadcast.
inline bool broadcasts(Shape s, int n) { return s.scalar() && n != 1; }

// Product plan: the non-scalar inputs (matrices, chained) and the scalar ones (scales).
struct ProductPlan {
  std::vector<int> mats, scalars;
};
ProductPlan product_plan(const std::vector<Shape>& in) {
  ProductPlan p;
  for (int i = 0; i < static_cast<int>(in.size()); ++i)
    (in[i].scalar() ? p.scalars : p.mats).push_back(i);
  return p;
}

template <class T>
T scalar_product(const ProductPlan& p, const T* const* in, size_t v, int skip = -1) {
  T s = 1.0;
  for (int j : p.scalars)
    if (j != skip) s *= in[j][v];
  return s;
}

// y (r) = scale * A (r x d) x (d), row-major. For the small matrices of rule neurons this
// plain loop is about twice as fast as Eigen's run-time-sized product (measured 4x4:
// 7 vs 13 ns); matrix-matrix products stay with Eigen, which wins there.
template <class T>
inline void small_matvec(int r, int d, const T* A, const T* x, T scale, T* y) {
  for (int i = 0; i < r; ++i) {
    const T* ai = A + size_t(i) * d;
    T acc = 0;
    for (int k = 0; k < d; ++k) acc += ai[k] * x[k];
    y[i] = scale * acc;
  }
}

// <G, A B> without forming A B.
template <class T>
inline T small_product_dot(int r, int d, int c, const T* A, const T* B, const T* G) {
  T total = 0;
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < c; ++j) {
      T acc = 0;
      for (int k = 0; k < d; ++k) acc += A[size_t(i) * d + k] * B[size_t(k) * c + j];
      total += G[size_t(i) * c + j] * acc;
    }
  return total;
}


}  // namespace

namespace {

// combination_forward per kind (same arguments; out_shape of n entries per output value,
// total = count * n, k inputs).

template <class T>
void forward_sum_avg(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    T* out, Shape out_shape, int n, size_t total, size_t k) {
  std::fill(out, out + total, 0.0);
  for (size_t i = 0; i < k; ++i) {
    const T* x = in[i];
    if (broadcasts(in_shapes[i], n)) {
      for (size_t v = 0; v < count; ++v)
        for (int e = 0; e < n; ++e) out[v * n + e] += x[v];
    } else {
      for (size_t j = 0; j < total; ++j) out[j] += x[j];
    }
  }
  if (c == CombinationKind::Avg && k > 0) {
    const T inv = 1.0 / static_cast<T>(k);
    for (size_t j = 0; j < total; ++j) out[j] *= inv;
  }
}

template <class T>
void forward_max_min(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    T* out, Shape out_shape, int n, size_t total, size_t k) {
  if (k == 0) {
    std::fill(out, out + total, 0.0);
    return;
  }
  const bool is_max = c == CombinationKind::Max;
  for (size_t i = 0; i < k; ++i) {
    const T* x = in[i];
    const bool b = broadcasts(in_shapes[i], n);
    for (size_t v = 0; v < count; ++v)
      for (int e = 0; e < n; ++e) {
        T val = b ? x[v] : x[v * n + e];
        T& o = out[v * n + e];
        if (i == 0 || (is_max ? val > o : val < o)) o = val;
      }
  }
}

template <class T>
void forward_count(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    T* out, Shape out_shape, int n, size_t total, size_t k) {
  std::fill(out, out + total, static_cast<T>(k));
}

template <class T>
void forward_elproduct(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    T* out, Shape out_shape, int n, size_t total, size_t k) {
  std::fill(out, out + total, 1.0);
  for (size_t i = 0; i < k; ++i) {
    const T* x = in[i];
    if (broadcasts(in_shapes[i], n)) {
      for (size_t v = 0; v < count; ++v)
        for (int e = 0; e < n; ++e) out[v * n + e] *= x[v];
    } else {
      for (size_t j = 0; j < total; ++j) out[j] *= x[j];
    }
  }
}

template <class T>
void forward_product(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    T* out, Shape out_shape, int n, size_t total, size_t k) {
  const ProductPlan p = product_plan(in_shapes);
  if (p.mats.empty()) {
    for (size_t v = 0; v < count; ++v) out[v] = scalar_product(p, in, v);
    return;
  }
  if (p.mats.size() == 1) {
    const int a = p.mats[0];
    for (size_t v = 0; v < count; ++v) {
      const T s = scalar_product(p, in, v);
      const T* x = in[a] + v * n;
      for (int e = 0; e < n; ++e) out[v * n + e] = s * x[e];
    }
    return;
  }
  const Shape first = in_shapes[p.mats[0]];
  if (p.mats.size() == 2) {
    const Shape second = in_shapes[p.mats[1]];
    const int sa = first.size(), sb = second.size();
    if (first.rows == 1 && second.cols == 1) {  // dot product: the common attention score
      const int len = first.cols;
      for (size_t v = 0; v < count; ++v) {
        const T* x = in[p.mats[0]] + v * sa;
        const T* y = in[p.mats[1]] + v * sb;
        T d = 0;
        for (int e = 0; e < len; ++e) d += x[e] * y[e];
        out[v] = scalar_product(p, in, v) * d;
      }
      return;
    }
    if (second.cols == 1) {  // matrix times vector
      for (size_t v = 0; v < count; ++v)
        small_matvec(first.rows, first.cols, in[p.mats[0]] + v * sa, in[p.mats[1]] + v * sb,
                     scalar_product(p, in, v), out + v * n);
      return;
    }
    for (size_t v = 0; v < count; ++v) {
      ConstMatMap<T> A(in[p.mats[0]] + v * sa, first.rows, first.cols);
      ConstMatMap<T> B(in[p.mats[1]] + v * sb, second.rows, second.cols);
      MatMap<T> O(out + v * n, out_shape.rows, out_shape.cols);
      O.noalias() = A * B;
      if (!p.scalars.empty()) O *= scalar_product(p, in, v);
    }
    return;
  }
  // Longer chains: ping-pong between two scratch buffers sized for the largest prefix.
  size_t max_prefix = 0;
  for (int m : p.mats) max_prefix = std::max<size_t>(max_prefix, size_t(first.rows) * in_shapes[m].cols);
  std::vector<T> buf_a(max_prefix), buf_b(max_prefix);
  for (size_t v = 0; v < count; ++v) {
    const T* cur = in[p.mats[0]] + v * first.size();
    int cols = first.cols;
    T* dst = buf_a.data();
    for (size_t q = 1; q < p.mats.size(); ++q) {
      const Shape s = in_shapes[p.mats[q]];
      ConstMatMap<T> L(cur, first.rows, cols);
      ConstMatMap<T> R(in[p.mats[q]] + v * s.size(), s.rows, s.cols);
      MatMap<T> D(q + 1 == p.mats.size() ? out + v * n : dst, first.rows, s.cols);
      D.noalias() = L * R;
      cur = D.data();
      cols = s.cols;
      dst = dst == buf_a.data() ? buf_b.data() : buf_a.data();
    }
    if (!p.scalars.empty()) {
      const T s = scalar_product(p, in, v);
      for (int e = 0; e < n; ++e) out[v * n + e] *= s;
    }
  }
}

template <class T>
void forward_concat(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    T* out, Shape out_shape, int n, size_t total, size_t k) {
  for (size_t v = 0; v < count; ++v) {
    T* o = out + v * n;
    for (size_t i = 0; i < k; ++i) {
      const int m = in_shapes[i].size();
      std::copy(in[i] + v * m, in[i] + (v + 1) * m, o);
      o += m;
    }
  }
}

template <class T>
void forward_crosssum(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    T* out, Shape out_shape, int n, size_t total, size_t k) {
  const int na = in_shapes[0].size(), nb = in_shapes[1].size();
  for (size_t v = 0; v < count; ++v) {
    const T* a = in[0] + v * na;
    const T* b = in[1] + v * nb;
    T* o = out + v * n;
    for (int i = 0; i < na; ++i)
      for (int j = 0; j < nb; ++j) o[i * nb + j] = a[i] + b[j];
  }
}

template <class T>
void forward_cossim(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    T* out, Shape out_shape, int n, size_t total, size_t k) {
  const int m = in_shapes[0].size();
  for (size_t v = 0; v < count; ++v) {
    const T* a = in[0] + v * m;
    const T* b = in[1] + v * m;
    const auto [dot, na, nb] = cossim_sums(a, b, m);
    out[v] = dot / (std::max(std::sqrt(na), kCosSimEps<T>) * std::max(std::sqrt(nb), kCosSimEps<T>));
  }
}

template <class T>
void forward_softmax(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    T* out, Shape out_shape, int n, size_t total, size_t k) {
  // The softmax of the concatenation of the inputs.
  forward_concat(c, in_shapes, count, in, out, out_shape, n, total, k);
  for (size_t v = 0; v < count; ++v) softmax_entries(n, out + v * n, out + v * n);
}

}  // namespace

template <class T>
void combination_forward(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count,
                         const T* const* in, T* out) {
  const Shape out_shape = combination_shape(c, in_shapes);
  const int n = out_shape.size();
  const size_t total = count * static_cast<size_t>(n);
  const size_t k = in_shapes.size();
  switch (c) {
    case CombinationKind::Sum:
    case CombinationKind::Avg:
      return forward_sum_avg(c, in_shapes, count, in, out, out_shape, n, total, k);
    case CombinationKind::Max:
    case CombinationKind::Min:
      return forward_max_min(c, in_shapes, count, in, out, out_shape, n, total, k);
    case CombinationKind::Count:
      return forward_count(c, in_shapes, count, in, out, out_shape, n, total, k);
    case CombinationKind::ElProduct:
      return forward_elproduct(c, in_shapes, count, in, out, out_shape, n, total, k);
    case CombinationKind::Product:
      return forward_product(c, in_shapes, count, in, out, out_shape, n, total, k);
    case CombinationKind::Concat:
      return forward_concat(c, in_shapes, count, in, out, out_shape, n, total, k);
    case CombinationKind::CrossSum:
      return forward_crosssum(c, in_shapes, count, in, out, out_shape, n, total, k);
    case CombinationKind::CosSim:
      return forward_cossim(c, in_shapes, count, in, out, out_shape, n, total, k);
    case CombinationKind::Softmax:
      return forward_softmax(c, in_shapes, count, in, out, out_shape, n, total, k);
  }
}

namespace {

// combination_backward per kind (same arguments; out_shape of n entries per output value,
// total = count * n, k inputs). Each ACCUMULATES into gin.

template <class T>
void backward_sum_avg(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    const T* out, const T* gout, T* const* gin, Shape out_shape, int n, size_t total, size_t k) {
  const T scale = c == CombinationKind::Avg && k > 0 ? 1.0 / static_cast<T>(k) : 1.0;
  for (size_t i = 0; i < k; ++i) {
    T* g = gin[i];
    if (!g) continue;
    if (broadcasts(in_shapes[i], n)) {
      for (size_t v = 0; v < count; ++v) {
        T s = 0;
        for (int e = 0; e < n; ++e) s += gout[v * n + e];
        g[v] += scale * s;
      }
    } else {
      for (size_t j = 0; j < total; ++j) g[j] += scale * gout[j];
    }
  }
}

template <class T>
void backward_max_min(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    const T* out, const T* gout, T* const* gin, Shape out_shape, int n, size_t total, size_t k) {
  if (k == 0) return;
  const bool is_max = c == CombinationKind::Max;
  for (size_t v = 0; v < count; ++v)
    for (int e = 0; e < n; ++e) {
      // The first input attaining the extreme takes the whole gradient.
      size_t arg = 0;
      T best = 0;
      for (size_t i = 0; i < k; ++i) {
        T val = broadcasts(in_shapes[i], n) ? in[i][v] : in[i][v * n + e];
        if (i == 0 || (is_max ? val > best : val < best)) {
          best = val;
          arg = i;
        }
      }
      T* g = gin[arg];
      if (!g) continue;
      if (broadcasts(in_shapes[arg], n))
        g[v] += gout[v * n + e];
      else
        g[v * n + e] += gout[v * n + e];
    }
}

template <class T>
void backward_elproduct(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    const T* out, const T* gout, T* const* gin, Shape out_shape, int n, size_t total, size_t k) {
  if (k == 2) {
    const bool b0 = broadcasts(in_shapes[0], n), b1 = broadcasts(in_shapes[1], n);
    for (size_t v = 0; v < count; ++v)
      for (int e = 0; e < n; ++e) {
        const size_t j = v * n + e;
        const T x0 = b0 ? in[0][v] : in[0][j], x1 = b1 ? in[1][v] : in[1][j];
        if (gin[0]) gin[0][b0 ? v : j] += gout[j] * x1;
        if (gin[1]) gin[1][b1 ? v : j] += gout[j] * x0;
      }
    return;
  }
  // Product of the other inputs without division: prefix and suffix products.
  std::vector<T> prefix(k + 1), suffix(k + 1);
  for (size_t v = 0; v < count; ++v)
    for (int e = 0; e < n; ++e) {
      const size_t j = v * n + e;
      prefix[0] = 1.0;
      for (size_t i = 0; i < k; ++i)
        prefix[i + 1] = prefix[i] * (broadcasts(in_shapes[i], n) ? in[i][v] : in[i][j]);
      suffix[k] = 1.0;
      for (size_t i = k; i-- > 0;)
        suffix[i] = suffix[i + 1] * (broadcasts(in_shapes[i], n) ? in[i][v] : in[i][j]);
      for (size_t i = 0; i < k; ++i)
        if (gin[i]) gin[i][broadcasts(in_shapes[i], n) ? v : j] += gout[j] * prefix[i] * suffix[i + 1];
    }
}

// The backward pass of product, by how many of its inputs are matrices (the others are
// scalars that scale the product): d/ds_j = (product of the other scalars) * <G, M_1 ... M_p>.

// Only scalars.
template <class T>
void backward_scalar_product(const ProductPlan& p, size_t count, const T* const* in, const T* gout,
                             T* const* gin) {
  for (size_t v = 0; v < count; ++v)
    for (int j : p.scalars)
      if (gin[j]) gin[j][v] += gout[v] * scalar_product(p, in, v, j);
}

// One matrix scaled by the scalars.
template <class T>
void backward_scaled_matrix(const ProductPlan& p, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    const T* gout, T* const* gin, Shape out_shape, int n, bool scalar_grads) {
  const int a = p.mats[0];
  for (size_t v = 0; v < count; ++v) {
    const T* x = in[a] + v * n;
    const T* g = gout + v * n;
    if (gin[a]) {
      const T s = scalar_product(p, in, v);
      for (int e = 0; e < n; ++e) gin[a][v * n + e] += s * g[e];
    }
    if (scalar_grads) {
      T dot = 0;
      for (int e = 0; e < n; ++e) dot += g[e] * x[e];
      for (int j : p.scalars)
        if (gin[j]) gin[j][v] += dot * scalar_product(p, in, v, j);
    }
  }
}

// Two matrices: a dot product, a matrix-vector product or a matrix-matrix product.
template <class T>
void backward_two_matrix_product(const ProductPlan& p, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    const T* gout, T* const* gin, Shape out_shape, int n, bool scalar_grads) {
  const int ia = p.mats[0], ib = p.mats[1];
  const Shape first = in_shapes[ia], second = in_shapes[ib];
  const int sa = first.size(), sb = second.size();
  const int r = first.rows, d = first.cols, c = second.cols;
  const bool dot_product = r == 1 && c == 1;
  const bool matvec = c == 1;
  for (size_t v = 0; v < count; ++v) {
    const T s = scalar_product(p, in, v);
    const T* a = in[ia] + v * sa;
    const T* b = in[ib] + v * sb;
    const T* gv = gout + v * n;
    if (dot_product) {
      const T g = s * gout[v];
      if (gin[ia])
        for (int e = 0; e < sa; ++e) gin[ia][v * sa + e] += g * b[e];
      if (gin[ib])
        for (int e = 0; e < sb; ++e) gin[ib][v * sb + e] += g * a[e];
    } else if (matvec) {
      // y = s A x: gA[i][k] += s g[i] x[k];  gx[k] += s sum_i A[i][k] g[i]
      if (T* ga = gin[ia] ? gin[ia] + v * sa : nullptr)
        for (int i = 0; i < r; ++i) {
          const T w = s * gv[i];
          for (int k = 0; k < d; ++k) ga[size_t(i) * d + k] += w * b[k];
        }
      if (T* gb = gin[ib] ? gin[ib] + v * sb : nullptr)
        for (int i = 0; i < r; ++i) {
          const T w = s * gv[i];
          for (int k = 0; k < d; ++k) gb[k] += w * a[size_t(i) * d + k];
        }
    } else {
      ConstMatMap<T> A(a, r, d);
      ConstMatMap<T> B(b, second.rows, c);
      ConstMatMap<T> G(gv, out_shape.rows, out_shape.cols);
      if (gin[ia]) {
        MatMap<T> GA(gin[ia] + v * sa, first.rows, first.cols);
        GA.noalias() += s * (G * B.transpose());
      }
      if (gin[ib]) {
        MatMap<T> GB(gin[ib] + v * sb, second.rows, second.cols);
        GB.noalias() += s * (A.transpose() * G);
      }
    }
    if (scalar_grads) {
      const T dot = small_product_dot(r, d, c, a, b, gv);
      for (int j : p.scalars)
        if (gin[j]) gin[j][v] += dot * scalar_product(p, in, v, j);
    }
  }
}

// General chain M_0 ... M_{p-1}: grad M_q = s * L_q^T G R_q^T with L_q = M_0..M_{q-1}
// (prefix) and R_q = M_{q+1}..M_{p-1} (suffix). Scratch holds every prefix and suffix.
template <class T>
void backward_matrix_chain(const ProductPlan& p, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    const T* gout, T* const* gin, Shape out_shape, int n, bool scalar_grads) {
  const size_t pm = p.mats.size();
  const Shape first = in_shapes[p.mats[0]];
  std::vector<size_t> pre_off(pm + 1, 0), suf_off(pm + 1, 0);
  const int last_cols = out_shape.cols;
  size_t max_t = 0;
  for (size_t q = 0; q < pm; ++q) {
    const Shape s = in_shapes[p.mats[q]];
    pre_off[q + 1] = pre_off[q] + size_t(first.rows) * s.cols;
    suf_off[q + 1] = suf_off[q] + size_t(s.rows) * last_cols;
    max_t = std::max<size_t>(max_t, size_t(first.rows) * s.cols);
  }
  std::vector<T> prefix(pre_off[pm]), suffix(suf_off[pm]), t(max_t);
  for (size_t v = 0; v < count; ++v) {
    const T s = scalar_product(p, in, v);
    auto mat = [&](size_t q) {
      const Shape sh = in_shapes[p.mats[q]];
      return ConstMatMap<T>(in[p.mats[q]] + v * sh.size(), sh.rows, sh.cols);
    };
    // prefix[q] = M_0 .. M_q (rows0 x cols_q)
    MatMap<T>(prefix.data(), first.rows, first.cols) = mat(0);
    for (size_t q = 1; q < pm; ++q) {
      const Shape sh = in_shapes[p.mats[q]];
      const Shape prev = in_shapes[p.mats[q - 1]];
      MatMap<T>(prefix.data() + pre_off[q], first.rows, sh.cols).noalias() =
          ConstMatMap<T>(prefix.data() + pre_off[q - 1], first.rows, prev.cols) * mat(q);
    }
    // suffix[q] = M_q .. M_{p-1} (rows_q x last_cols)
    {
      const Shape sh = in_shapes[p.mats[pm - 1]];
      MatMap<T>(suffix.data() + suf_off[pm - 1], sh.rows, sh.cols) = mat(pm - 1);
    }
    for (size_t q = pm - 1; q-- > 0;) {
      const Shape sh = in_shapes[p.mats[q]];
      const Shape next = in_shapes[p.mats[q + 1]];
      MatMap<T>(suffix.data() + suf_off[q], sh.rows, last_cols).noalias() =
          mat(q) * ConstMatMap<T>(suffix.data() + suf_off[q + 1], next.rows, last_cols);
    }
    ConstMatMap<T> G(gout + v * n, out_shape.rows, out_shape.cols);
    for (size_t q = 0; q < pm; ++q) {
      const int idx = p.mats[q];
      if (!gin[idx]) continue;
      const Shape sh = in_shapes[idx];
      MatMap<T> Tq(t.data(), first.rows, sh.cols);
      if (q + 1 < pm) {
        const Shape next = in_shapes[p.mats[q + 1]];
        Tq.noalias() = G * ConstMatMap<T>(suffix.data() + suf_off[q + 1], next.rows, last_cols).transpose();
      } else {
        Tq = G;
      }
      MatMap<T> GM(gin[idx] + v * sh.size(), sh.rows, sh.cols);
      if (q > 0) {
        const Shape prev = in_shapes[p.mats[q - 1]];
        GM.noalias() += s * (ConstMatMap<T>(prefix.data() + pre_off[q - 1], first.rows, prev.cols).transpose() * Tq);
      } else {
        GM += s * Tq;
      }
    }
    if (scalar_grads) {
      const T dot =
          G.cwiseProduct(ConstMatMap<T>(prefix.data() + pre_off[pm - 1], first.rows, last_cols)).sum();
      for (int j : p.scalars)
        if (gin[j]) gin[j][v] += dot * scalar_product(p, in, v, j);
    }
  }
}


template <class T>
void backward_product(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    const T* out, const T* gout, T* const* gin, Shape out_shape, int n, size_t total, size_t k) {
  const ProductPlan p = product_plan(in_shapes);
  // The unscaled matrix product P is recomputed per value when a scalar needs it.
  bool scalar_grads = false;
  for (int j : p.scalars) scalar_grads = scalar_grads || gin[j];
  switch (p.mats.size()) {
    case 0: return backward_scalar_product(p, count, in, gout, gin);
    case 1: return backward_scaled_matrix(p, in_shapes, count, in, gout, gin, out_shape, n, scalar_grads);
    case 2: return backward_two_matrix_product(p, in_shapes, count, in, gout, gin, out_shape, n, scalar_grads);
    default: return backward_matrix_chain(p, in_shapes, count, in, gout, gin, out_shape, n, scalar_grads);
  }
}

template <class T>
void backward_concat(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    const T* out, const T* gout, T* const* gin, Shape out_shape, int n, size_t total, size_t k) {
  for (size_t v = 0; v < count; ++v) {
    const T* g = gout + v * n;
    for (size_t i = 0; i < k; ++i) {
      const int m = in_shapes[i].size();
      if (gin[i])
        for (int e = 0; e < m; ++e) gin[i][v * m + e] += g[e];
      g += m;
    }
  }
}

template <class T>
void backward_crosssum(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    const T* out, const T* gout, T* const* gin, Shape out_shape, int n, size_t total, size_t k) {
  const int na = in_shapes[0].size(), nb = in_shapes[1].size();
  for (size_t v = 0; v < count; ++v) {
    const T* g = gout + v * n;
    for (int i = 0; i < na; ++i)
      for (int j = 0; j < nb; ++j) {
        if (gin[0]) gin[0][v * na + i] += g[i * nb + j];
        if (gin[1]) gin[1][v * nb + j] += g[i * nb + j];
      }
  }
}

template <class T>
void backward_cossim(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    const T* out, const T* gout, T* const* gin, Shape out_shape, int n, size_t total, size_t k) {
  // y = a.b / (max(|a|, eps) max(|b|, eps)); where |a| > eps,
  // dy/da = b / (|a| |b|') - y a / |a|^2 (and symmetrically for b).
  const int m = in_shapes[0].size();
  for (size_t v = 0; v < count; ++v) {
    const T* a = in[0] + v * m;
    const T* b = in[1] + v * m;
    const auto [dot, na2, nb2] = cossim_sums(a, b, m);
    const T na = std::sqrt(na2), nb = std::sqrt(nb2);
    const T da = std::max(na, kCosSimEps<T>), db = std::max(nb, kCosSimEps<T>);
    const T y = dot / (da * db);
    const T g = gout[v];
    const T inv = 1.0 / (da * db);
    const T ca = na > kCosSimEps<T> ? y / na2 : 0.0;
    const T cb = nb > kCosSimEps<T> ? y / nb2 : 0.0;
    for (int e = 0; e < m; ++e) {
      if (gin[0]) gin[0][v * m + e] += g * (b[e] * inv - ca * a[e]);
      if (gin[1]) gin[1][v * m + e] += g * (a[e] * inv - cb * b[e]);
    }
  }
}

template <class T>
void backward_softmax(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count, const T* const* in,
    const T* out, const T* gout, T* const* gin, Shape out_shape, int n, size_t total, size_t k) {
  for (size_t v = 0; v < count; ++v) {
    const T* y = out + v * n;
    const T* g = gout + v * n;
    T dot = 0;
    for (int e = 0; e < n; ++e) dot += g[e] * y[e];
    int e = 0;
    for (size_t i = 0; i < k; ++i) {
      const int m = in_shapes[i].size();
      if (gin[i])
        for (int j = 0; j < m; ++j) gin[i][v * m + j] += y[e + j] * (g[e + j] - dot);
      e += m;
    }
  }
}

}  // namespace

template <class T>
void combination_backward(CombinationKind c, const std::vector<Shape>& in_shapes, size_t count,
                          const T* const* in, const T* out, const T* gout,
                          T* const* gin) {
  const Shape out_shape = combination_shape(c, in_shapes);
  const int n = out_shape.size();
  const size_t total = count * static_cast<size_t>(n);
  const size_t k = in_shapes.size();
  switch (c) {
    case CombinationKind::Sum:
    case CombinationKind::Avg:
      return backward_sum_avg(c, in_shapes, count, in, out, gout, gin, out_shape, n, total, k);
    case CombinationKind::Max:
    case CombinationKind::Min:
      return backward_max_min(c, in_shapes, count, in, out, gout, gin, out_shape, n, total, k);
    case CombinationKind::Count:
      return;  // the count does not depend on the input values
    case CombinationKind::ElProduct:
      return backward_elproduct(c, in_shapes, count, in, out, gout, gin, out_shape, n, total, k);
    case CombinationKind::Product:
      return backward_product(c, in_shapes, count, in, out, gout, gin, out_shape, n, total, k);
    case CombinationKind::Concat:
      return backward_concat(c, in_shapes, count, in, out, gout, gin, out_shape, n, total, k);
    case CombinationKind::CrossSum:
      return backward_crosssum(c, in_shapes, count, in, out, gout, gin, out_shape, n, total, k);
    case CombinationKind::CosSim:
      return backward_cossim(c, in_shapes, count, in, out, gout, gin, out_shape, n, total, k);
    case CombinationKind::Softmax:
      return backward_softmax(c, in_shapes, count, in, out, gout, gin, out_shape, n, total, k);
  }
}

// The two scalar types of execution (exec/scalar.hpp).
template void combination_forward<double>(CombinationKind, const std::vector<Shape>&, size_t, const double* const*, double*);
template void combination_backward<double>(CombinationKind, const std::vector<Shape>&, size_t, const double* const*, const double*, const double*, double* const*);
template void combination_forward<float>(CombinationKind, const std::vector<Shape>&, size_t, const float* const*, float*);
template void combination_backward<float>(CombinationKind, const std::vector<Shape>&, size_t, const float* const*, const float*, const float*, float* const*);

}  // namespace lrnn::exec
