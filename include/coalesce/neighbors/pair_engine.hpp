// coalesce/neighbors/pair_engine.hpp - the library owns the pair loop: the user writes the pair law
// (an evaluator, as HOOMD-blue's pair potentials are), the engine runs it over any neighbour list
// (every verlet_list format, a user's own list: list_traits.hpp), any layout and stored precision,
// host or GPU memory, and writes the forces into a member of the particles.
//
//   // The pair law, written once: a type of the user's.
//   struct lennard_jones {
//     struct param_type {
//       float epsilon, sigma2;
//     };
//     COALESCE_HOST_DEVICE coalesce::pair_value<float> operator()(float r2, param_type const& q) const {
//       float const s2 = q.sigma2 / r2, s6 = s2 * s2 * s2;
//       return {24.f * q.epsilon * s6 * (2.f * s6 - 1.f) / r2, 4.f * q.epsilon * s6 * (s6 - 1.f)};
//     }
//   };
//   coalesce::pair_table<lennard_jones::param_type> table(1);  // one particle type
//   table.set(0, 0, {.epsilon = 1.f, .sigma2 = 1.f}, 2.5);      // parameters and cutoff per type pair
//   coalesce::verlet_list<coalesce::padded_columns, coalesce::host> near({.cutoff = 2.5, .skin = 0.3});
//   coalesce::box const domain{.lo = {0, 0, 0}, .hi = {10, 10, 10}, .edges = coalesce::boundary::periodic};
//   near.build(h, &Particle::pos, domain);
//   coalesce::pair_totals const sums = coalesce::compute_pairs(h, &Particle::pos, &Particle::vel, near.view(h),
//                                                              domain, lennard_jones{}, table, {.energy = true});
//   // the members as template arguments: the loop's code is that of a kernel naming them (faster)
//   coalesce::compute_pairs<&Particle::pos, &Particle::vel>(h, near.view(h), domain, lennard_jones{}, table);
//   // bonded pairs excluded (pair_exclusions.hpp): built from the bond list, in the particles' memory
//   coalesce::pair_exclusions<coalesce::host> const bonded(h.size(), std::vector<std::uint32_t>{0, 1, 1, 2});
//   coalesce::compute_pairs<&Particle::pos, &Particle::vel>(h, near.view(h), domain, lennard_jones{}, table, bonded);
//
// What the engine does per pair (i, j) of the list: the separation d = x_i - x_j (the minimum image
// along periodic axes, in the evaluator's real type), r2 = |d|^2, and where r2 is below the pair's
// cutoff squared the evaluator's force_over_r f: particle i gets f * d (and j gets -f * d on a half
// list: Newton's third law). The force member is overwritten with the sum (zero for a particle
// without a pair in reach). Energy and virial (sum over pairs of f * r2, W = sum r . F) are summed
// only when asked (pair_options), in double, and returned.
//
// Exclusions: given after the table (a pair_exclusions, pair_exclusions.hpp), an excluded pair of the
// list is skipped whole: no force, no energy, no virial (looked up in i's short row of partners, only
// for pairs within the cutoff; both loops; i's row serves a half list too, the rows being symmetric).
// Without them the test is compiled out: the loops test nothing per pair. After a reorder, build
// them again from the remapped bond list (pair_exclusions.hpp says how).
//
// Types: give the member holding each particle's type (an unsigned or signed integer below the
// table's type count) to compute_pairs; without it every particle is type 0 (a table of one type).
// A half list (the view's half, or pair_options::half for a list of the user's) adds each reaction
// atomically (coalesce::atomic_add: a force member stored as fixed_point<std::int64_t, F> makes the
// sums deterministic; float members add in any order). A cluster_pairs list in CPU memory with a
// float or double force member runs cluster_pair_loop_host.hpp's SIMD loop instead (per-thread float
// buffers summed and stored); one stored as fixed_point<std::int64_t or std::int32_t, F> runs it too,
// its buffers the format's integers (the same bits whatever the threads, as the atomics); a force
// member stored in any other format takes the generic loop.
//
// Bad input throws coalesce::error and writes nothing: a type outside the table (naming the
// particle), a pair of types the table was not given (naming the pair), a position that is not
// finite, a list whose rows do not match the particles, exclusions built for another particle count.
// A float evaluator given double positions does not compile (its message says what to write).
//
// Streams (the one rule of coalesce/memory/stream.hpp): compute_pairs runs on `on` and returns when
// the forces and the sums are complete.
#pragma once
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
// The host's per-pair rounding (fixed_rounding_of_pairs): one conversion instruction on x86-64.
#if defined(__x86_64__) && !defined(__CUDA_ARCH__)
#include <emmintrin.h>
#define COALESCE_X86_64_HOST 1
#endif

#include "../core/atomic.hpp"
#include "../core/box.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../memory/for_each.hpp"
#include "../memory/stream.hpp"
#include "../memory/vector.hpp"
#include "cluster_pair_loop.hpp"
#include "cluster_pair_loop_host.hpp"
#include "cluster_pairs.hpp"
#include "cluster_tile.hpp"
#include "list_traits.hpp"
#include "pair_exclusions.hpp"
#include "pair_law.hpp"

namespace coalesce {

// Parameters and cutoff per pair of particle types, symmetric, at most MaxTypes types; held by
// value so that kernels take it as an argument (constant memory on the GPU, no allocation).
template <class Param, std::size_t MaxTypes = 8> class pair_table {
 public:
  // A table for `types` particle types (1 to MaxTypes); every pair of types must be set before use.
  explicit pair_table(std::size_t types) : types_(types) {
    if (types == 0 || types > MaxTypes) {
      detail::throw_error("pair_table: " + std::to_string(types) + " particle types; 1 to " + std::to_string(MaxTypes) +
                          " (pair_table<Param, N> holds up to N)");
    }
  }
  // The parameters of the pair (a, b) and of (b, a), and their cutoff.
  void set(std::size_t a, std::size_t b, Param const& param, double cutoff) {
    if (a >= types_ || b >= types_) {
      detail::throw_error("pair_table::set: the pair (" + std::to_string(a) + ", " + std::to_string(b) +
                          ") names a type outside the table's " + std::to_string(types_) + " types");
    }
    if (!(cutoff > 0) || !std::isfinite(cutoff)) {
      detail::throw_error("pair_table::set: the cutoff of the pair (" + std::to_string(a) + ", " + std::to_string(b) +
                          ") is " + std::to_string(cutoff) + "; it must be positive and finite");
    }
    for (auto const [x, y] : {std::array<std::size_t, 2>{a, b}, std::array<std::size_t, 2>{b, a}}) {
      params_[x * MaxTypes + y] = param;
      cutoff2_[x * MaxTypes + y] = cutoff * cutoff;
      float up = static_cast<float>(cutoff * cutoff);
      if (static_cast<double>(up) < cutoff * cutoff) up = std::nextafter(up, std::numeric_limits<float>::infinity());
      cutoff2f_[x * MaxTypes + y] = up;
      given_[x * MaxTypes + y] = true;
    }
  }
  // The number of particle types.
  COALESCE_HOST_DEVICE std::size_t types() const { return types_; }
  // The parameters of the type pair (a, b).
  COALESCE_HOST_DEVICE Param const& param(std::size_t a, std::size_t b) const { return params_[a * MaxTypes + b]; }
  // The cutoff squared of the type pair (a, b).
  COALESCE_HOST_DEVICE double cutoff2(std::size_t a, std::size_t b) const { return cutoff2_[a * MaxTypes + b]; }
  // The same as a float: the smallest float at least cutoff2(a, b), so that r2 < cutoff2_float(a, b)
  // holds exactly when double(r2) < cutoff2(a, b) (a loop in float compares without converting).
  COALESCE_HOST_DEVICE float cutoff2_float(std::size_t a, std::size_t b) const { return cutoff2f_[a * MaxTypes + b]; }
  // The largest cutoff over the type pairs set.
  double largest_cutoff() const {
    double c2 = 0;
    for (std::size_t a = 0; a < types_; ++a)
      for (std::size_t b = 0; b < types_; ++b) c2 = cutoff2_[a * MaxTypes + b] > c2 ? cutoff2_[a * MaxTypes + b] : c2;
    return std::sqrt(c2);
  }
  // Every pair of types given (compute_pairs checks it first).
  void check_complete(char const* caller) const {
    for (std::size_t a = 0; a < types_; ++a) {
      for (std::size_t b = a; b < types_; ++b) {
        if (!given_[a * MaxTypes + b]) {
          detail::throw_error(std::string(caller) + ": the pair table has no parameters for the types (" +
                              std::to_string(a) + ", " + std::to_string(b) + "); set() every pair of its " +
                              std::to_string(types_) + " types");
        }
      }
    }
  }

 private:
  std::size_t types_;
  Param params_[MaxTypes * MaxTypes]{};
  double cutoff2_[MaxTypes * MaxTypes]{};
  float cutoff2f_[MaxTypes * MaxTypes]{};
  bool given_[MaxTypes * MaxTypes]{};
};

// Rows of a full list a pass computes: [first, first + count). Their forces are written and
// nothing else (the other particles' forces are left as they are), so a code can run the rows that
// read no ghost while the halo's forward travels, then the others (examples/distributed_md).
struct pair_rows {
  static constexpr std::size_t every_row = static_cast<std::size_t>(-1);  // count's default: to the last row
  std::size_t first = 0;                                                  // the first row computed
  std::size_t count = every_row;                                          // rows computed from `first`
};

// What compute_pairs sums besides the forces (off by default: then it costs nothing), and, for a
// list of the user's that holds each pair once, that it is a half list (the library's views say so
// themselves).
struct pair_options {
  bool energy = false;  // sum the pairs' energies into pair_totals::energy
  bool virial = false;  // sum r . F over the pairs into pair_totals::virial
  bool half = false;    // a user's list that holds each pair once (Newton's third law applied)
  // Each pair's force rounded to the force member's fixed point (stored as fixed_point<std::int64_t
  // or std::int32_t, F>) before it is added, and summed as integers: a particle's force is then the
  // same bits whatever the order of its pairs (another list format, another decomposition over MPI
  // ranks, another sort). Without it a row's own pairs are summed in the evaluator's type first (its
  // last bits follow the row's order). Runs the generic loop (a thread per row) for every list.
  bool round_each_pair = false;
  pair_rows rows{};  // a full list's rows to compute (default: every row)
};

// The sums over every pair in reach: potential energy and the virial W = sum over pairs of r . F
// (pressure = (2 K + W) / (3 V) in 3-D). Zero where not asked.
struct pair_totals {
  double energy = 0;  // sum of the pairs' energies (each pair once)
  double virial = 0;  // sum over the pairs of r . F
};

namespace detail {

// The list's own word on half, or the caller's for a list that has none.
template <class List> bool list_is_half(List const& list, bool stated, char const* caller) {
  if constexpr (requires { list.half; }) {
    if (stated && !list.half) {
      throw_error(std::string(caller) +
                  ": pair_options::half says the list holds each pair once, but the library's list is a full one "
                  "(list_params::half = false); drop pair_options::half");
    }
    return list.half;
  } else {
    return stated;
  }
}

// How many particles the checks refused (one element, in the particles' memory).
struct bad_count {
  std::uint64_t count;
};

// The sums of a pass, in the particles' memory: pair_sum_slots elements, warp w adding into
// element w % pair_sum_slots (add_warp_sums), summed in order when read (read_pair_totals). Two atomics per warp
// into one address serialised in L2: over cluster_pairs (a warp per cluster, 524,288 warps at 4M
// particles) they made energy and virial 1.29x the forces-only pass (H100, 2026-12-06).
struct pair_sums {
  double energy;
  double virial;
};
inline constexpr std::size_t pair_sum_slots = 64;
// Warp `warp`'s energy and virial into its element of the sums.
template <bool Energy, bool Virial, class Sums>
COALESCE_HOST_DEVICE COALESCE_INLINE void add_warp_sums(Sums const& s, std::size_t warp, double energy, double virial) {
  if constexpr (Energy) atomic_add(s[warp % pair_sum_slots][&pair_sums::energy], energy);
  if constexpr (Virial) atomic_add(s[warp % pair_sum_slots][&pair_sums::virial], virial);
}

// A row's energy and virial into the pass's sums. On the GPU a warp whose 32 rows all exist sums
// them with shuffles first and adds once (every row adding into the one address serialised the
// atomics: energy and virial cost 5.8x the forces over a padded list on the H200). The warps are
// for_each_index's: blocks of 256 threads, thread i of the launch is row i, so rows i - i % 32 ..
// + 31 are one warp, and when all exist all 32 lanes arrive here (the shuffles' full mask waits for
// them).
template <bool Energy, bool Virial, class Sums>
COALESCE_HOST_DEVICE COALESCE_INLINE void add_row_sums(Sums const& s, double energy, double virial, std::size_t i,
                                                       std::size_t rows) {
#if defined(__CUDA_ARCH__)
  if (i - i % 32 + 32 <= rows) {
    if constexpr (Energy) energy = warp_sum_lanes(energy, 1u, 16u);
    if constexpr (Virial) virial = warp_sum_lanes(virial, 1u, 16u);
    if (i % 32 != 0) return;
  }
#else
  (void)i, (void)rows;
#endif
  add_warp_sums<Energy, Virial>(s, i / 32, energy, virial);
}

// A particle the pair passes accept: its type within the table and every coordinate finite. The
// one test of the checks' counting pass (count_bad_input) and the cluster loop's staging pass.
template <class Real>
COALESCE_HOST_DEVICE COALESCE_INLINE bool pair_input_ok(std::size_t type, std::size_t types, Real const (&r)[3]) {
  return type < types && std::isfinite(static_cast<double>(r[0])) && std::isfinite(static_cast<double>(r[1])) &&
         std::isfinite(static_cast<double>(r[2]));
}

// The checks of a pass, before anything is written: every particle's type below `types` and its
// position finite; a count of bad particles first, then (only then) the first one named, its type
// said to lie outside `types_of` ("the pair table's", "the law's"). compute_pairs and
// compute_many_body share them.
//
// The counting pass is a named functor, not an extended lambda: its instantiation does not depend on
// the list or the law, so a program's .cu files that call compute_pairs and compute_many_body on the
// same particles all instantiate the same kernel, and nvcc's __host__ __device__ lambdas in one
// function instantiated by several translation units crashed the host at the launch (the GPU test
// binary, H100, 2026-12-05; one translation unit alone ran).
template <class Real, class View, class PositionMember, class TypeMember, class Bad> struct count_bad_input {
  View v;
  PositionMember position;
  TypeMember type_member;
  std::size_t types;
  Bad b;
  COALESCE_HOST_DEVICE void operator()(std::size_t i) const {
    auto const x = v[i][position.pointer];
    Real const r[3] = {coordinate<Real>(x, 0), coordinate<Real>(x, 1), coordinate<Real>(x, 2)};
    if (!pair_input_ok(type_of(v[i], type_member), types, r)) atomic_add(b[0][&bad_count::count], std::uint64_t{1});
  }
};

template <class Real, class T, class L, class Space, class PositionMember, class TypeMember>
[[noreturn]] void refuse_bad_pair_input(vector<T, L, Space> const& particles, PositionMember position,
                                        TypeMember type_member, std::size_t types, char const* types_of,
                                        char const* caller);

template <class Real, class T, class L, class Space, class PositionMember, class TypeMember>
void check_pair_input(vector<T, L, Space>& particles, PositionMember position, TypeMember type_member,
                      std::size_t types, char const* types_of, char const* caller, stream on) {
  std::size_t const n = particles.size();
  auto const v = particles.view();
  vector<bad_count, soa, Space> bad(1, bad_count{0}, on);
  auto b = bad.view();
  using counter = count_bad_input<Real, decltype(v), PositionMember, TypeMember, decltype(b)>;
  for_each_index(Space{}, n, counter{v, position, type_member, types, b}, on);
  bad_count const found = host_vector<bad_count, soa>(bad, on).view()[0];
  if (found.count == 0) return;
  refuse_bad_pair_input<Real>(particles, position, type_member, types, types_of, caller);
}

// After a count found bad particles (check_pair_input, or the GPU cluster-pair staging pass): the
// first one named in a coalesce::error (a copy of the particles read on the host).
template <class Real, class T, class L, class Space, class PositionMember, class TypeMember>
[[noreturn]] void refuse_bad_pair_input(vector<T, L, Space> const& particles, PositionMember position,
                                        TypeMember type_member, std::size_t types, char const* types_of,
                                        char const* caller) {
  std::size_t const n = particles.size();
  host_vector<T, L> const copy(particles);
  auto const w = copy.view();
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t const t = type_of(w[i], type_member);
    if (t >= types) {
      throw_error(std::string(caller) + ": particle " + std::to_string(i) + " has type " + std::to_string(t) +
                  ", outside " + types_of + " " + std::to_string(types) + " types; nothing was written");
    }
    auto const x = w[i][position.pointer];
    for (int d = 0; d < 3; ++d) {
      if (!std::isfinite(static_cast<double>(coordinate<Real>(x, d)))) {
        throw_error(std::string(caller) + ": particle " + std::to_string(i) +
                    " has a position that is not finite; nothing was written");
      }
    }
  }
  // The count saw what the copy does not: the particles changed under the call.
  throw_error(std::string(caller) + ": a particle's type or position was out of range while the pass read them, and " +
              "not when it read them again (are they written concurrently?); nothing was written");
}

// x as the integer of a fixed-point format f (rounded to a multiple of 2^-F): the per-pair rounding
// of pair_options::round_each_pair. A value the format cannot hold fails as a store into the member
// would (coalesce::error on the host), unless the format saturates.
template <class Real>
COALESCE_HOST_DEVICE COALESCE_INLINE std::int64_t to_fixed_integer(Real x, stored_format const& f) {
  alignas(8) std::byte encoded[8] = {};
  if (encode(encoded, x, f) != encode_status::ok && !f.saturates) fail_store(f);
  return f.bytes == 8 ? load_bytes<std::int64_t>(encoded) : load_bytes<std::int32_t>(encoded);
}

// The same rounding, its scale and range read from the format once per pass, and on x86-64 hosts
// one conversion instruction (cvtss2si / cvtsd2si: round to nearest even, the default mode): three
// per pair of encode's switch and the host's nearbyint call (libm, not inlined without SSE4.1) made
// the cost of a CPU pass (examples/distributed_md, 2 ranks x 200,000 particles, 1 thread: forward +
// forces 248 ms against 138 without the rounding; adding and taking away 2^23 instead, branching on
// the sign, 310 ms). Gives encode's integers: x * 2^F is exact in Real (a power of two); out of range
// or NaN, encode itself decides (reports or saturates).
template <class Real> struct fixed_rounding_of_pairs {
  stored_format format;
  Real scale = 0;  // 2^F
  Real span = 0;   // 2^(8 bytes - 1): the integers' range
  static fixed_rounding_of_pairs of(stored_format f) {
    return {f, static_cast<Real>(std::ldexp(1.0, f.fraction_bits)),
            static_cast<Real>(std::ldexp(1.0, 8 * f.bytes - 1))};
  }
  COALESCE_HOST_DEVICE COALESCE_INLINE std::int64_t operator()(Real x) const {
    Real const scaled = x * scale;
    if (!(scaled >= -span && scaled < span)) return to_fixed_integer(x, format);  // NaN too
#if COALESCE_IN_DEVICE_CODE
    if constexpr (std::is_same_v<Real, float>) {
      return static_cast<std::int64_t>(rintf(scaled));
    } else {
      return static_cast<std::int64_t>(rint(scaled));
    }
#elif defined(COALESCE_X86_64_HOST)
    if constexpr (std::is_same_v<Real, float>) {
      return _mm_cvtss_si64(_mm_set_ss(scaled));
    } else {
      return _mm_cvtsd_si64(_mm_set_sd(scaled));
    }
#else
    return static_cast<std::int64_t>(std::nearbyint(scaled));
#endif
  }
};

// Row i's summed force into its member: added (a half list: reactions from other rows arrive
// too) or stored (a full list: the row holds every pair of i).
template <class View, class ForceMember, class Real>
COALESCE_HOST_DEVICE COALESCE_INLINE void finish_row_force(View const& v, ForceMember force, std::size_t i, Real f0,
                                                           Real f1, Real f2, bool half) {
  if (half) {
    atomic_add(v[i][force.pointer][0], f0);
    atomic_add(v[i][force.pointer][1], f1);
    atomic_add(v[i][force.pointer][2], f2);
  } else {
    v[i][force.pointer][0] = f0;
    v[i][force.pointer][1] = f1;
    v[i][force.pointer][2] = f2;
  }
}

// A pass's totals from its sums in the particles' memory (waits for `on` either way).
template <bool Energy, bool Virial, class Sums> pair_totals read_pair_totals(Sums& sums, stream on) {
  pair_totals out;
  if constexpr (Energy || Virial) {
    host_vector<pair_sums, soa> const slots(sums, on);  // waits for `on`
    auto const w = slots.view();
    double energy = 0, virial = 0;
    for (std::size_t k = 0; k < w.size(); ++k) {  // in order: the same bits for the same slots
      energy += w[k][&pair_sums::energy];
      virial += w[k][&pair_sums::virial];
    }
    out.energy = Energy ? energy : 0.0;
    out.virial = Virial ? virial : 0.0;
  } else {
    synchronize(on);
  }
  return out;
}

// The warp-per-cluster loop over the staged particles, forces into `forces` (cluster_pair_loop.hpp),
// the type pairs' parameters read from `pairs` (the table, or its one pair: one_type_pair). A named
// functor, not an extended lambda: two .cu files of a program that call compute_pairs over the same
// particles, list and law instantiate the same kernel, and nvcc's short __host__ __device__ lambdas
// instantiated identically in several translation units crash the host at the launch (the GPU
// tests, H100, 2026-12-06: a second file computing over cluster_pairs with the same Atom crashed).
template <bool Energy, bool Virial, class Real, class Forces, class Evaluator, class Pairs, class Exclusions,
          class Sums>
struct staged_warps {
  verlet_list_ref<cluster_pairs> list;
  staged_particle<Real> const* staged;
  Forces forces;
  Evaluator law;
  Pairs pairs;
  Exclusions exclusions;
  staged_box<Real> box;
  Sums s;
  COALESCE_HOST_DEVICE void operator()(std::size_t t) const {
    auto const add = [&](double energy, double virial) { add_warp_sums<Energy, Virial>(s, t / 32, energy, virial); };
    staged_cluster_pair_lane<Energy, Virial, Real>(t, list, staged, forces, law, pairs, exclusions, box, add);
  }
};
template <bool Energy, bool Virial, class Real, class Forces, class Evaluator, class Pairs, class Exclusions,
          class Sums>
void launch_staged_warps(verlet_list_ref<cluster_pairs> const& list, staged_particle<Real> const* staged,
                         Forces const& forces, Evaluator const& law, Pairs const& pairs, Exclusions const& exclusions,
                         staged_box<Real> const& box, Sums const& s, stream on) {
  using warps = staged_warps<Energy, Virial, Real, Forces, Evaluator, Pairs, Exclusions, Sums>;
  for_each_index(device{}, list.clusters * 32, warps{list, staged, forces, law, pairs, exclusions, box, s}, on);
}

// A table of one type goes in as its one pair (its parameters then stay in registers).
template <bool Energy, bool Virial, class Real, class Forces, class Evaluator, class Table, class Exclusions,
          class Sums>
void launch_staged_loop(verlet_list_ref<cluster_pairs> const& list, staged_particle<Real> const* staged,
                        Forces const& forces, Evaluator const& law, Table const& table, Exclusions const& exclusions,
                        staged_box<Real> const& box, Sums const& s, stream on) {
  if (table.types() == 1) {
    using param = std::remove_cvref_t<decltype(table.param(0, 0))>;
    one_type_pair<param> const pair{table.param(0, 0), table.cutoff2(0, 0), table.cutoff2_float(0, 0)};
    launch_staged_warps<Energy, Virial, Real>(list, staged, forces, law, pair, exclusions, box, s, on);
  } else {
    launch_staged_warps<Energy, Virial, Real>(list, staged, forces, law, table, exclusions, box, s, on);
  }
}

// The passes below are named functors, not extended lambdas: their instantiations depend on the
// particles' types only, so two .cu files of a program that call compute_pairs (or
// compute_many_body) on the same particles instantiate the same kernel, and nvcc's short
// __host__ __device__ lambdas instantiated identically in several translation units crashed the
// host at the launch (SIGSEGV; the GPU test binary on the H100, 2026-12-06: the second file to zero
// a half list's forces crashed; as count_bad_input above).

// 16 bytes of a slot's force sums, zeroed as one vector store (a slot's sums: one or two of them).
struct alignas(16) slot_vector {
  std::uint32_t words[4];
};

// Slot k of a cluster-pair list staged: the particle's position (in the loop's real type, in the box) and
// type, staged_far for an empty slot; its force sums zeroed where the loop sums in slots (a half list).
// With `check`, it also counts the particles check_pair_input would refuse (a type at or past
// `types`, a position not finite) into bad: the pass reads them anyway, and a separate counting pass
// read every particle once more per call.
template <class Real, class View, class PositionMember, class TypeMember, class Bad> struct stage_cluster_slots {
  std::uint32_t const* slots;
  View v;
  PositionMember position;
  TypeMember type_member;
  staged_box<Real> box;  // positions into [0, L] along a periodic axis
  staged_particle<Real>* staged;
  slot_vector* slot_sums;         // the loop's sums, 16 or 32 bytes per slot (Real or int64 x 4)
  std::uint32_t vectors_per_sum;  // 1 or 2
  bool zero_sums;
  bool check;
  std::size_t types;
  Bad bad;
  COALESCE_HOST_DEVICE void operator()(std::size_t k) const {
    std::uint32_t const p = slots[k];
    Real const far = staged_far<Real>;
    staged_particle<Real> out{far, far, far, 0};  // an empty slot: no distance to it passes a cutoff
    if (p != cluster_pairs::empty_slot) {
      auto const x = v[p][position.pointer];
      Real const r[3] = {coordinate<Real>(x, 0), coordinate<Real>(x, 1), coordinate<Real>(x, 2)};
      std::size_t const t = type_of(v[p], type_member);
      if (check && !pair_input_ok(t, types, r)) atomic_add(bad[0][&bad_count::count], std::uint64_t{1});
      out.x = into_box(r[0], box.length[0], box.inverse[0]);
      out.y = into_box(r[1], box.length[1], box.inverse[1]);
      out.z = into_box(r[2], box.length[2], box.inverse[2]);
      out.type = static_cast<std::int32_t>(t);
    }
    staged[k] = out;
    if (zero_sums) {
      slot_vector const zero{};
      slot_sums[vectors_per_sum * k] = zero;
      if (vectors_per_sum == 2) slot_sums[2 * k + 1] = zero;
    }
  }
};

// Slot k's summed force into its particle's force member.
template <class Real, class View, class ForceMember> struct store_slot_forces {
  std::uint32_t const* slots;
  View v;
  ForceMember force;
  Real const* slot_forces;
  COALESCE_HOST_DEVICE void operator()(std::size_t k) const {
    std::uint32_t const p = slots[k];
    if (p == cluster_pairs::empty_slot) return;
    for (int d = 0; d < 3; ++d) v[p][force.pointer][d] = slot_forces[4 * k + d];
  }
};

// The loop's forces as the integers of the force member's fixed-point format (fixed_point<std::int64_t
// or std::int32_t, F>), 4 per slot in slot order: each reaction sum and row sum rounded once (as the
// member's own atomic_add rounds it), added with integer atomics, exact in any order, so the forces
// are the same bits run to run; stored into the member by a pass after the loop (store_slot_fixed).
// Adding into the member itself through its converting reference took 8.5x the float pass (H100,
// 4M LJ atoms, 2026-12-06: the format's encode and the particle's index per atomic).
template <class Real> struct fixed_slot_sums {
  std::int64_t* sums;
  fixed_rounding_of_pairs<Real> round;
  COALESCE_HOST_DEVICE COALESCE_INLINE void add_in_cluster(std::uint32_t first, std::uint32_t k, std::uint32_t d,
                                                           Real f) const {
#if defined(__CUDA_ARCH__)
    struct slot_stride {  // a slot's 4 sums, for the stride alone
      std::int64_t v[4];
    };
    auto* const lane = opaque_pointer(reinterpret_cast<slot_stride*>(sums + (4 * k + d)));  // hoisted
    red_global_add(reinterpret_cast<std::int64_t*>(lane + first), round(f));
#else
    atomic_add_scalar(sums + 4 * (static_cast<std::size_t>(first) + k) + d, round(f));
#endif
  }
  COALESCE_HOST_DEVICE COALESCE_INLINE void add(std::uint32_t slot, Real f0, Real f1, Real f2) const {
    atomic_add_scalar(sums + 4 * std::size_t{slot} + 0, round(f0));
    atomic_add_scalar(sums + 4 * std::size_t{slot} + 1, round(f1));
    atomic_add_scalar(sums + 4 * std::size_t{slot} + 2, round(f2));
  }
  COALESCE_HOST_DEVICE COALESCE_INLINE void store(std::uint32_t slot, Real f0, Real f1, Real f2) const {
    sums[4 * std::size_t{slot} + 0] = round(f0);
    sums[4 * std::size_t{slot} + 1] = round(f1);
    sums[4 * std::size_t{slot} + 2] = round(f2);
  }
};
// Slot k's integer sums into its particle's fixed-point force member, as they are.
template <class View, class ForceMember> struct store_slot_fixed {
  std::uint32_t const* slots;
  View v;
  ForceMember force;
  std::int64_t const* sums;
  COALESCE_HOST_DEVICE void operator()(std::size_t k) const {
    std::uint32_t const p = slots[k];
    if (p == cluster_pairs::empty_slot) return;
    for (int d = 0; d < 3; ++d) store_fixed(v[p][force.pointer][d], sums[4 * k + d]);
  }
};

// compute_pairs over a cluster-pair list in GPU memory, the particles staged in slot order
// (cluster_pair_loop.hpp): stage positions and types, the warp-per-cluster loop, the forces. A force
// member of plain float or double leaves, or of fixed point (`fixed`: its format, fixed_slot_sums):
// summed in slot order (zeroed with the staging on a half list) and stored into every particle by a
// last pass; any other: added into the member itself (the caller zeroed it on a half list). The staging memory (16 or 32 bytes per slot,
// as much again for the sums) is scratch from coalesce's pool (buffer.hpp: no driver call per step).
// check: the particles' input is checked by the staging pass (every particle is in a slot), before
// anything is written; refuse() names the first bad one (it throws).
template <bool Energy, bool Virial, bool PlainForce, class Real, class View, class PositionMember, class ForceMember,
          class TypeMember, class Evaluator, class Table, class Exclusions, class Sums, class Refuse>
void run_staged_cluster_pairs(View const& v, PositionMember position, ForceMember force, TypeMember type_member,
                              verlet_list_ref<cluster_pairs> const& list, Evaluator const& law, Table const& table,
                              Exclusions const& exclusions, double const (&length)[3], bool const (&periodic)[3],
                              bool half, stored_format const* fixed, Sums const& s, bool check, Refuse const& refuse,
                              stream on) {
  std::size_t const slot_count = list.clusters * cluster_pairs::cluster_size;
  if (slot_count == 0) return;
  vector<bad_count, soa, device> bad(check ? 1 : 0, bad_count{0}, on);
  auto const b = bad.view();
  buffer staged_memory(memory_kind::device, slot_count * sizeof(staged_particle<Real>), on.handle(),
                       buffer::scratch_tag{});
  bool const in_slots = PlainForce || fixed != nullptr;
  std::size_t const sum_bytes = PlainForce ? 4 * sizeof(Real) : 4 * sizeof(std::int64_t);  // per slot
  buffer force_memory(memory_kind::device, in_slots ? slot_count * sum_bytes : 0, on.handle(), buffer::scratch_tag{});
  auto* const staged = reinterpret_cast<staged_particle<Real>*>(staged_memory.data());
  auto* const slot_vectors = reinterpret_cast<slot_vector*>(force_memory.data());
  bool const zero_sums = in_slots && half;
  staged_box<Real> const box = staged_box<Real>::make(length, periodic, table.largest_cutoff());
  using stage = stage_cluster_slots<Real, View, PositionMember, TypeMember, decltype(b)>;
  for_each_index(device{}, slot_count,
                 stage{list.slots, v, position, type_member, box, staged, slot_vectors,
                       static_cast<std::uint32_t>(sum_bytes / sizeof(slot_vector)), zero_sums, check, table.types(), b},
                 on);
  if (check) {
    bad_count const found = host_vector<bad_count, soa>(bad, on).view()[0];
    if (found.count != 0) refuse();
  }
  if constexpr (PlainForce) {
    Real* const slot_forces = reinterpret_cast<Real*>(force_memory.data());
    launch_staged_loop<Energy, Virial, Real>(list, staged, slot_sums<Real>{slot_forces}, law, table, exclusions, box, s,
                                             on);
    for_each_index(device{}, slot_count, store_slot_forces<Real, View, ForceMember>{list.slots, v, force, slot_forces},
                   on);
  } else if (fixed != nullptr) {
    auto* const slot_fixed = reinterpret_cast<std::int64_t*>(force_memory.data());
    launch_staged_loop<Energy, Virial, Real>(
        list, staged, fixed_slot_sums<Real>{slot_fixed, fixed_rounding_of_pairs<Real>::of(*fixed)}, law, table,
        exclusions, box, s, on);
    for_each_index(device{}, slot_count, store_slot_fixed<View, ForceMember>{list.slots, v, force, slot_fixed}, on);
  } else {
    launch_staged_loop<Energy, Virial, Real>(list, staged, member_sums<View, ForceMember>{v, force, list.slots}, law,
                                             table, exclusions, box, s, on);
  }
}

// The forces of particles [first, first + count) set to zero: where a half list starts (reactions
// are added into any row) and past a list's rows (a halo's ghosts get no force of their own).
template <class View, class ForceMember> struct zero_force_rows {
  View v;
  ForceMember force;
  std::size_t first;
  COALESCE_HOST_DEVICE void operator()(std::size_t k) const {
    for (int d = 0; d < 3; ++d) v[first + k][force.pointer][d] = 0;
  }
};
template <class Space, class View, class ForceMember>
void zero_forces(View const& v, ForceMember force, std::size_t first, std::size_t count, stream on) {
  if (count == 0) return;
  for_each_index(Space{}, count, zero_force_rows<View, ForceMember>{v, force, first}, on);
}

// The whole pass: checks, zeroing (half lists), the pair loop, the sums.
// PerPair: pair_options::round_each_pair (the generic loop, each pair's force rounded to the force
// member's fixed point `fixed`). first_row, row_count: the rows computed (every row unless
// pair_options::rows says otherwise; then a full list, and nothing outside them is written).
template <bool Energy, bool Virial, bool PerPair, class Evaluator, class T, class L, class Space, class PositionMember,
          class ForceMember, class TypeMember, class List, class Table, class Exclusions>
pair_totals run_pairs(vector<T, L, Space>& particles, PositionMember position, ForceMember force,
                      TypeMember type_member, List const& list, box const& domain, Evaluator const& law,
                      Table const& table, Exclusions const& exclusions, bool half, pair_rows chosen,
                      stored_format fixed, stream on) {
  using Real = pair_real_t<Evaluator>;
  constexpr char const* caller = "compute_pairs";
  std::size_t const n = particles.size();
  std::size_t const rows = list_traits<List>::size(list);
  if (rows > n) {
    throw_error(std::string(caller) + ": the list has " + std::to_string(rows) + " rows for " + std::to_string(n) +
                " particles; build it over these particles");
  }
  bool const every_row = chosen.first == 0 && (chosen.count == pair_rows::every_row || chosen.count == rows);
  if (!every_row) {
    if (half) {
      throw_error(std::string(caller) +
                  ": pair_options::rows on a half list: its pairs add reactions into rows outside the range; build "
                  "a full list (list_params::half = false) to compute some rows only");
    }
    if (chosen.first > rows || (chosen.count != pair_rows::every_row && chosen.count > rows - chosen.first)) {
      throw_error(
          std::string(caller) + ": pair_options::rows asks for rows [" + std::to_string(chosen.first) + ", " +
          (chosen.count == pair_rows::every_row ? std::string("end") : std::to_string(chosen.first + chosen.count)) +
          ") of a list of " + std::to_string(rows) + " rows; nothing was written");
    }
  }
  std::size_t const first_row = every_row ? 0 : chosen.first;
  std::size_t const row_count =
      every_row ? rows : (chosen.count == pair_rows::every_row ? rows - chosen.first : chosen.count);
  if constexpr (excludes_pairs<Exclusions>) {
    if (exclusions.particles != n) {
      throw_error(std::string(caller) + ": the exclusions were built for " + std::to_string(exclusions.particles) +
                  " particles, the particles are " + std::to_string(n) +
                  "; build them over these particles (after a reorder: from the remapped bond list); nothing was "
                  "written");
    }
  }
  table.check_complete(caller);
  double length[3];
  bool periodic[3];
  for (int a = 0; a < 3; ++a) {
    length[a] = domain.hi[a] - domain.lo[a];
    periodic[a] = domain.periodic(a);
  }
  auto v = particles.view();
  // A float evaluator computes the separation of two positions in float: two double coordinates
  // would lose their digits there, where the pair law needs them (a large box, minus each other).
  using position_leaf = std::remove_cvref_t<decltype(v[0][position.pointer][0])>;
  static_assert(!(std::is_same_v<position_leaf, double> && std::is_same_v<Real, float>),
                "coalesce::compute_pairs: the evaluator computes in float (its operator() takes float r2 and returns "
                "pair_value<float>) but the positions are double; write the evaluator in double (pair_value<double> "
                "operator()(double r2, param_type const&)) or store the positions as float");
  // Checks first, nothing written. The GPU cluster-pair loop that sums forces in slots checks in its
  // staging pass (which reads every particle of the list anyway, and writes only scratch).
  constexpr bool is_cluster_pairs = std::is_same_v<List, verlet_list_ref<cluster_pairs>>;
  constexpr bool cluster_loop = is_cluster_pairs && device_is_gpu && kind_of_space<Space> == memory_kind::device;
  using force_leaf = decltype(v[0][force.pointer][0]);
  constexpr bool plain_force =
      std::is_lvalue_reference_v<force_leaf> && std::is_floating_point_v<std::remove_reference_t<force_leaf>>;
  bool const every_particle_listed = rows == n;
  // A force member stored as fixed point (fixed_point<std::int64_t or std::int32_t, F> on each
  // coordinate): the cluster-pair loops keep its sums as the format's integers (the same bits
  // whatever the threads or the order of the atomics).
  [[maybe_unused]] stored_format fixed_force{};  // the member's format, when fixed point
  bool fixed_force_member = false;
  if constexpr (is_cluster_pairs && !plain_force && !std::is_lvalue_reference_v<force_leaf>) {
    if (n > 0) {
      stored_format const f = v[0][force.pointer][0].format();
      fixed_force_member = f.kind == number_kind::fixed && (f.bytes == 4 || f.bytes == 8) &&
                           v[0][force.pointer][1].format() == f && v[0][force.pointer][2].format() == f;
      fixed_force = f;
    }
  }
  bool const check_in_staging =
      cluster_loop && !PerPair && (plain_force || fixed_force_member) && every_row && every_particle_listed;
  if (!check_in_staging) {
    check_pair_input<Real>(particles, position, type_member, table.types(), "the pair table's", caller, on);
  }
  [[maybe_unused]] auto const refuse = [&] {
    refuse_bad_pair_input<Real>(particles, position, type_member, table.types(), "the pair table's", caller);
  };
  // The energy and virial sums exist only when asked for (forces only: no allocation, no fill).
  vector<pair_sums, soa, Space> sums(Energy || Virial ? pair_sum_slots : 0, pair_sums{0, 0}, on);
  auto s = sums.view();
  // A cluster-pair list in GPU memory: the warp-per-cluster loop (cluster_pair_loop.hpp). One in memory
  // the CPU reads (host memory; the OpenMP device system): the SIMD loop over clusters
  // (cluster_pair_loop_host.hpp), which stores every particle's force itself, unless called inside a
  // parallel region of the caller's. Anywhere else (every other list) the generic loop below, a thread
  // per row.
  // The SIMD loop takes a force member of plain float or double leaves (its sums' last bits follow
  // its schedule), or one stored as fixed point (fixed_force_member above), as the GPU loop does.
  // A row range or per-pair rounding: the generic loop below, whatever the list.
  constexpr bool generic_only = PerPair;
  bool host_cluster_loop = false;
  if constexpr (is_cluster_pairs && !cluster_loop && !generic_only) {
    host_cluster_loop = (plain_force || fixed_force_member) && !in_parallel_region() && every_row;
  }
  // The GPU loop (cluster_pair_loop.hpp) sums plain forces, or a fixed-point member's integers, in slot
  // order and stores them at the end.
  bool const cluster_gpu_loop = cluster_loop && !generic_only && every_row;
  bool const sums_in_slots = cluster_gpu_loop && (plain_force || fixed_force_member);
  // Half lists add reactions into other rows: every force starts at zero, then atomics.
  if (half && !host_cluster_loop && !sums_in_slots) zero_forces<Space>(v, force, 0, n, on);
  auto const to_fixed = fixed_rounding_of_pairs<Real>::of(fixed);  // PerPair's rounding
  auto const pass = [=] COALESCE_HOST_DEVICE(std::size_t row) {
    (void)s;  // captured here, not first inside an if constexpr (nvcc's rule for extended lambdas)
    (void)rows, (void)fixed, (void)half, (void)row_count, (void)force, (void)to_fixed;
    std::size_t const i = first_row + row;
    auto const xi = v[i][position.pointer];
    Real const x0 = coordinate<Real>(xi, 0), x1 = coordinate<Real>(xi, 1), x2 = coordinate<Real>(xi, 2);
    std::size_t const ti = type_of(v[i], type_member);
    auto const excluded = exclusions.row(i);  // i's partners (no_exclusions: nothing, tested nowhere)
    Real f0 = 0, f1 = 0, f2 = 0;
    std::int64_t g0 = 0, g1 = 0, g2 = 0;  // PerPair: the row's sum as the format's integers
    double energy = 0, virial = 0;
    // Lengths in the loop's type once per row, not a conversion per pair.
    Real const len[3] = {static_cast<Real>(length[0]), static_cast<Real>(length[1]), static_cast<Real>(length[2])};
    // The row's loop with the list's kind a compile-time constant: a full list's loop then stores
    // nothing but its sums and the pair's work sits under one condition, so the compiler vectorises
    // it on the CPU (with the kind a run-time flag, its reactions' atomics kept the loop scalar:
    // 3.9x a hand-written padded loop at the LJ liquid, 2026-12-06).
    auto const row_loop = [&](auto half_list) {
      constexpr bool Half = decltype(half_list)::value;
      for_each_neighbor(list, i, [&](std::uint32_t j) {
        auto const xj = v[j][position.pointer];
        // The minimum image as the list builds choose it (cluster_tile.hpp's nearest_image).
        Real const d[3] = {x0 - nearest_image(x0, coordinate<Real>(xj, 0), periodic[0], len[0]),
                           x1 - nearest_image(x1, coordinate<Real>(xj, 1), periodic[1], len[1]),
                           x2 - nearest_image(x2, coordinate<Real>(xj, 2), periodic[2], len[2])};
        Real const r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        std::size_t const tj = type_of(v[j], type_member);
        if (within_cutoff(r2, table, ti, tj)) {
          // After the cutoff: only pairs in reach scan the row. i's row is enough on a half list too
          // (the exclusions are symmetric).
          if constexpr (excludes_pairs<Exclusions>) {
            if (excluded.contains(j)) return;
          }
          pair_value<Real> const p = law(r2, table.param(ti, tj));
          if constexpr (PerPair) {
            // Three named sums, not a loop over g[a]: kept in registers (the loop kept them on the stack).
            std::int64_t const q0 = to_fixed(p.force_over_r * d[0]), q1 = to_fixed(p.force_over_r * d[1]),
                               q2 = to_fixed(p.force_over_r * d[2]);
            g0 += q0, g1 += q1, g2 += q2;
            if constexpr (Half) {  // exactly -q: the pair sums to zero
              add_fixed_integer(v[j][force.pointer][0], -q0, fixed);
              add_fixed_integer(v[j][force.pointer][1], -q1, fixed);
              add_fixed_integer(v[j][force.pointer][2], -q2, fixed);
            }
          } else {
            f0 += p.force_over_r * d[0];
            f1 += p.force_over_r * d[1];
            f2 += p.force_over_r * d[2];
            if constexpr (Half) {
              atomic_add(v[j][force.pointer][0], -p.force_over_r * d[0]);
              atomic_add(v[j][force.pointer][1], -p.force_over_r * d[1]);
              atomic_add(v[j][force.pointer][2], -p.force_over_r * d[2]);
            }
          }
          // Each pair once over the whole pass: a full list meets it twice.
          [[maybe_unused]] constexpr double share = Half ? 1.0 : 0.5;
          if constexpr (Energy) energy += share * static_cast<double>(p.energy);
          if constexpr (Virial) virial += share * static_cast<double>(p.force_over_r) * static_cast<double>(r2);
        }
      });
    };
    if (half) {
      row_loop(std::true_type{});
    } else {
      row_loop(std::false_type{});
    }
    if constexpr (PerPair) {
      std::int64_t const g[3] = {g0, g1, g2};
      for (int a = 0; a < 3; ++a) {
        if (half) {
          add_fixed_integer(v[i][force.pointer][a], g[a], fixed);
        } else {
          store_fixed(v[i][force.pointer][a], g[a]);
        }
      }
    } else {
      finish_row_force(v, force, i, f0, f1, f2, half);
    }
    if constexpr (Energy || Virial) add_row_sums<Energy, Virial>(s, energy, virial, row, row_count);
  };
  if (cluster_gpu_loop) {
    if constexpr (cluster_loop && !generic_only) {
      run_staged_cluster_pairs<Energy, Virial, plain_force, Real>(
          v, position, force, type_member, list, law, table, exclusions, length, periodic, half,
          fixed_force_member ? &fixed_force : nullptr, s, check_in_staging, refuse, on);
    }
  } else if (host_cluster_loop) {
    if constexpr (is_cluster_pairs && !cluster_loop && !generic_only) {
      constexpr bool threads = kind_of_space<Space> == memory_kind::device;  // OpenMP; coalesce::host: one
      cluster_pair_sums const t = cluster_pair_loop_host<Energy, Virial, threads, Real>(
          list, v, position, force, type_member, law, table, exclusions, length, periodic,
          fixed_force_member ? &fixed_force : nullptr);
      if constexpr (Energy) s[0][&pair_sums::energy] = t.energy;
      if constexpr (Virial) s[0][&pair_sums::virial] = t.virial;
    }
  } else {
    for_each_index(Space{}, row_count, pass, on);
  }
  // Rows past the list's (list_rows: ghosts) get no force of their own on a full list (a pass over
  // some rows writes nothing else).
  if (!half && rows < n && every_row) zero_forces<Space>(v, force, rows, n - rows, on);
  return read_pair_totals<Energy, Virial>(sums, on);
}

// A force leaf that can hold a fixed-point format: a converting reference (stored_as); plain float
// and double leaves are references to the numbers themselves.
template <class Leaf> constexpr bool fixed_point_member = !std::is_lvalue_reference_v<Leaf>;

// The force member's format for pair_options::round_each_pair: fixed point of 8 or 4 bytes on each
// coordinate, else a coalesce::error saying what to store the member as.
template <class T, class L, class Space, class ForceMember>
stored_format fixed_force_format(vector<T, L, Space>& particles, ForceMember force) {
  auto const refuse = [](std::string const& what) {
    throw_error(
        "compute_pairs: pair_options::round_each_pair rounds each pair's force to the force member's fixed "
        "point, but " +
        what +
        "; store it as fixed point (coalesce::stored_as<..., coalesce::store<&T::force, "
        "coalesce::fixed_point<std::int64_t, 32>>>) or drop round_each_pair; nothing was written");
  };
  auto const v = particles.view();
  using leaf = decltype(v[0][force.pointer][0]);
  if constexpr (!fixed_point_member<leaf>) {
    refuse("the member holds plain floating-point numbers");
    return {};
  } else {
    stored_format f{};
    if (particles.size() > 0) {
      f = v[0][force.pointer][0].format();
      bool const same = v[0][force.pointer][1].format() == f && v[0][force.pointer][2].format() == f;
      if (f.kind != number_kind::fixed || (f.bytes != 4 && f.bytes != 8) || !same)
        refuse("the member is stored as " + format_name(f));
    }
    return f;
  }
}

// raw (the integer of fixed-point format f) added into a leaf stored in f, atomically.
template <class Leaf> COALESCE_HOST_DEVICE COALESCE_INLINE void add_fixed_integer(Leaf const& leaf, std::int64_t raw,
                                                                                  stored_format const& f) {
  if (f.bytes == 8) {
    atomic_add_raw(leaf, raw, f);
  } else {
    atomic_add_raw(leaf, static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(raw))), f);
  }
}

template <class Evaluator, class T, class L, class Space, class PositionMember, class ForceMember, class TypeMember,
          class List, class Table, class Exclusions>
pair_totals dispatch_pairs(vector<T, L, Space>& particles, PositionMember position, ForceMember force,
                           TypeMember type_member, List const& list, box const& domain, Evaluator const& law,
                           Table const& table, Exclusions const& exclusions, pair_options options, stream on) {
  bool const half = list_is_half(list, options.half, "compute_pairs");
  stored_format const fixed = options.round_each_pair ? fixed_force_format(particles, force) : stored_format{};
  auto run = [&]<bool E, bool W>() {
    auto const with = [&]<bool PerPair>() {
      return run_pairs<E, W, PerPair>(particles, position, force, type_member, list, domain, law, table, exclusions,
                                      half, options.rows, fixed, on);
    };
    if constexpr (fixed_point_member<decltype(particles.view()[0][force.pointer][0])>) {
      if (options.round_each_pair) return with.template operator()<true>();
    }
    return with.template operator()<false>();
  };
  if (options.energy && options.virial) return run.template operator()<true, true>();
  if (options.energy) return run.template operator()<true, false>();
  if (options.virial) return run.template operator()<false, true>();
  return run.template operator()<false, false>();
}

}  // namespace detail

// The pair law over every pair of `list` (rows: particles 0 .. list size), every particle of one
// type (a table of one type). Forces into `force` (overwritten), positions from `position`.
template <class Evaluator, class T, class L, class Space, class Pos, class Force, class List, class Param,
          std::size_t MaxTypes>
requires pair_evaluator<Evaluator> && neighbor_list_view<List> pair_totals
compute_pairs(vector<T, L, Space>& particles, Pos T::*position, Force T::*force, List const& list, box const& domain,
              Evaluator const& law, pair_table<Param, MaxTypes> const& table, pair_options options = {},
              stream on = default_stream) {
  if (table.types() != 1) {
    detail::throw_error("compute_pairs: the pair table has " + std::to_string(table.types()) +
                        " types; give the member that holds each particle's type");
  }
  return detail::dispatch_pairs(particles, detail::member_handle<Pos, T>{position},
                                detail::member_handle<Force, T>{force}, detail::no_type_member{}, list, domain, law,
                                table, detail::no_exclusions{}, options, on);
}

// The same with each particle's type read from the member `type` (an integer below table.types()).
template <class Evaluator, class T, class L, class Space, class Pos, class Force, class Type, class List, class Param,
          std::size_t MaxTypes>
requires pair_evaluator<Evaluator> && neighbor_list_view<List> && std::is_integral_v<Type> pair_totals
compute_pairs(vector<T, L, Space>& particles, Pos T::*position, Force T::*force, Type T::*type, List const& list,
              box const& domain, Evaluator const& law, pair_table<Param, MaxTypes> const& table,
              pair_options options = {}, stream on = default_stream) {
  return detail::dispatch_pairs(particles, detail::member_handle<Pos, T>{position},
                                detail::member_handle<Force, T>{force}, detail::member_handle<Type, T>{type}, list,
                                domain, law, table, detail::no_exclusions{}, options, on);
}

// The members as template arguments: compute_pairs<&Atom::pos, &Atom::force>(d, view, domain, law,
// table). The loop then reads and writes them as a kernel of the user's that names them does (each
// coordinate a column or a field at an offset known when compiling); given as function arguments
// they are values the loop resolves per access (a branch over the layout's fields: on the H200 the
// engine's padded_columns loop took 1.84 ms so against 1.18 ms for a kernel naming the member).
template <auto Position, auto Force, class Evaluator, class T, class L, class Space, class List, class Param,
          std::size_t MaxTypes>
requires pair_evaluator<Evaluator> && neighbor_list_view<List> pair_totals
compute_pairs(vector<T, L, Space>& particles, List const& list, box const& domain, Evaluator const& law,
              pair_table<Param, MaxTypes> const& table, pair_options options = {}, stream on = default_stream) {
  static_assert(detail::is_member_of<T>(Position) && detail::is_member_of<T>(Force),
                "coalesce::compute_pairs<Position, Force>: both are pointers to members of the particles' type");
  if (table.types() != 1) {
    detail::throw_error("compute_pairs: the pair table has " + std::to_string(table.types()) +
                        " types; give the member that holds each particle's type (compute_pairs<position, force, "
                        "type>)");
  }
  return detail::dispatch_pairs(particles, detail::constant_member<Position>{}, detail::constant_member<Force>{},
                                detail::no_type_member{}, list, domain, law, table, detail::no_exclusions{}, options,
                                on);
}

// The same with each particle's type read from the member Type (an integer below table.types()).
template <auto Position, auto Force, auto Type, class Evaluator, class T, class L, class Space, class List, class Param,
          std::size_t MaxTypes>
requires pair_evaluator<Evaluator> && neighbor_list_view<List> pair_totals
compute_pairs(vector<T, L, Space>& particles, List const& list, box const& domain, Evaluator const& law,
              pair_table<Param, MaxTypes> const& table, pair_options options = {}, stream on = default_stream) {
  static_assert(detail::is_member_of<T>(Position) && detail::is_member_of<T>(Force) && detail::is_member_of<T>(Type),
                "coalesce::compute_pairs<Position, Force, Type>: all three are pointers to members of the particles' "
                "type");
  static_assert(detail::is_integral_member(Type), "coalesce::compute_pairs: the type member is an integer");
  return detail::dispatch_pairs(particles, detail::constant_member<Position>{}, detail::constant_member<Force>{},
                                detail::constant_member<Type>{}, list, domain, law, table, detail::no_exclusions{},
                                options, on);
}

// Each form above with exclusions (pair_exclusions.hpp) after the table: an excluded pair (a bonded
// pair) adds no force, energy or virial. The exclusions live in the particles' memory and were built
// for as many particles (else a coalesce::error, nothing written).
namespace detail {
template <class Space, class ExclusionSpace> constexpr void check_exclusion_space() {
  static_assert(std::is_same_v<Space, ExclusionSpace>,
                "coalesce::compute_pairs: the exclusions live in the particles' memory; build "
                "pair_exclusions<Space> with the vector's Space (coalesce::host or coalesce::device)");
}
}  // namespace detail

// One particle type, the members as pointers, with exclusions.
template <class Evaluator, class T, class L, class Space, class Pos, class Force, class List, class Param,
          std::size_t MaxTypes, class ExclusionSpace>
requires pair_evaluator<Evaluator> && neighbor_list_view<List> pair_totals compute_pairs(
    vector<T, L, Space>& particles, Pos T::*position, Force T::*force, List const& list, box const& domain,
    Evaluator const& law, pair_table<Param, MaxTypes> const& table, pair_exclusions<ExclusionSpace> const& exclusions,
    pair_options options = {}, stream on = default_stream) {
  detail::check_exclusion_space<Space, ExclusionSpace>();
  if (table.types() != 1) {
    detail::throw_error("compute_pairs: the pair table has " + std::to_string(table.types()) +
                        " types; give the member that holds each particle's type");
  }
  return detail::dispatch_pairs(particles, detail::member_handle<Pos, T>{position},
                                detail::member_handle<Force, T>{force}, detail::no_type_member{}, list, domain, law,
                                table, exclusions.view(), options, on);
}

// Several particle types (each particle's in the member `type`), the members as pointers, with
// exclusions.
template <class Evaluator, class T, class L, class Space, class Pos, class Force, class Type, class List, class Param,
          std::size_t MaxTypes, class ExclusionSpace>
requires pair_evaluator<Evaluator> && neighbor_list_view<List> && std::is_integral_v<Type> pair_totals compute_pairs(
    vector<T, L, Space>& particles, Pos T::*position, Force T::*force, Type T::*type, List const& list,
    box const& domain, Evaluator const& law, pair_table<Param, MaxTypes> const& table,
    pair_exclusions<ExclusionSpace> const& exclusions, pair_options options = {}, stream on = default_stream) {
  detail::check_exclusion_space<Space, ExclusionSpace>();
  return detail::dispatch_pairs(particles, detail::member_handle<Pos, T>{position},
                                detail::member_handle<Force, T>{force}, detail::member_handle<Type, T>{type}, list,
                                domain, law, table, exclusions.view(), options, on);
}

// One particle type, the members as template arguments (compute_pairs<&P::pos, &P::force>), with
// exclusions.
template <auto Position, auto Force, class Evaluator, class T, class L, class Space, class List, class Param,
          std::size_t MaxTypes, class ExclusionSpace>
requires pair_evaluator<Evaluator> && neighbor_list_view<List> pair_totals
compute_pairs(vector<T, L, Space>& particles, List const& list, box const& domain, Evaluator const& law,
              pair_table<Param, MaxTypes> const& table, pair_exclusions<ExclusionSpace> const& exclusions,
              pair_options options = {}, stream on = default_stream) {
  static_assert(detail::is_member_of<T>(Position) && detail::is_member_of<T>(Force),
                "coalesce::compute_pairs<Position, Force>: both are pointers to members of the particles' type");
  detail::check_exclusion_space<Space, ExclusionSpace>();
  if (table.types() != 1) {
    detail::throw_error("compute_pairs: the pair table has " + std::to_string(table.types()) +
                        " types; give the member that holds each particle's type (compute_pairs<position, force, "
                        "type>)");
  }
  return detail::dispatch_pairs(particles, detail::constant_member<Position>{}, detail::constant_member<Force>{},
                                detail::no_type_member{}, list, domain, law, table, exclusions.view(), options, on);
}

// Several particle types, the members as template arguments (compute_pairs<&P::pos, &P::force,
// &P::type>), with exclusions.
template <auto Position, auto Force, auto Type, class Evaluator, class T, class L, class Space, class List, class Param,
          std::size_t MaxTypes, class ExclusionSpace>
requires pair_evaluator<Evaluator> && neighbor_list_view<List> pair_totals
compute_pairs(vector<T, L, Space>& particles, List const& list, box const& domain, Evaluator const& law,
              pair_table<Param, MaxTypes> const& table, pair_exclusions<ExclusionSpace> const& exclusions,
              pair_options options = {}, stream on = default_stream) {
  static_assert(detail::is_member_of<T>(Position) && detail::is_member_of<T>(Force) && detail::is_member_of<T>(Type),
                "coalesce::compute_pairs<Position, Force, Type>: all three are pointers to members of the particles' "
                "type");
  static_assert(detail::is_integral_member(Type), "coalesce::compute_pairs: the type member is an integer");
  detail::check_exclusion_space<Space, ExclusionSpace>();
  return detail::dispatch_pairs(particles, detail::constant_member<Position>{}, detail::constant_member<Force>{},
                                detail::constant_member<Type>{}, list, domain, law, table, exclusions.view(), options,
                                on);
}

}  // namespace coalesce
