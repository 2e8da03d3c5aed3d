// particle_integrator: the same integrator step on aos, soa and aosoa<32>, on the GPU when
// coalesce has CUDA and on all CPU cores otherwise. Checks that every layout gives
// bit-identical particles, then times each kernel against the copy ceiling measured in the same
// run and against hand-written raw-pointer kernels, and prints (and writes as JSON) the table.
//
//   particle_integrator [--n particles] [--runs r] [--json file] [--per-thread-records bytes]
// --per-thread-records: the largest record a conversion into aos records writes one record per
// thread instead of through the shared-memory tile (0: always the tile), to compare the paths.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "../common/bench_timer.hpp"
#include "kernels.hpp"
#include "particles.hpp"

using namespace sample;

namespace {

constexpr float dt = 1.0f / 64.0f;

struct options {
  std::size_t n = coalesce::device_is_gpu ? (std::size_t{1} << 25) : (std::size_t{1} << 22);
  int runs = 30;
  std::string json;
  long per_thread_records = -1;   // -1: the library's default
  long tile_bytes = -1;           // -1: the library's default
  bool conversions_only = false;  // skip the kernels (ncu_conversions.sh profiles the conversions alone)
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string const arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--n") {
      o.n = std::stoull(value());
    } else if (arg == "--runs") {
      o.runs = std::stoi(value());
    } else if (arg == "--json") {
      o.json = value();
    } else if (arg == "--per-thread-records") {
      o.per_thread_records = std::stol(value());
    } else if (arg == "--tile-bytes") {
      o.tile_bytes = std::stol(value());
    } else if (arg == "--conversions-only") {
      o.conversions_only = true;
    } else {
      std::fprintf(stderr,
                   "usage: particle_integrator [--n particles] [--runs r] [--json file] [--per-thread-records bytes] "
                   "[--tile-bytes bytes] [--conversions-only]\n");
      std::exit(2);
    }
  }
  if (o.n == 0 || o.runs < 1) {
    std::fprintf(stderr, "--n and --runs must be positive\n");
    std::exit(2);
  }
  return o;
}

// Positions packed (padded to 16 bytes), velocities (and the fat record's other fields) as columns.
using split_pos = coalesce::split<coalesce::fields<&particle::pos>, coalesce::aos, coalesce::soa>;
using split_fat_pos = coalesce::split<coalesce::fields<&fat_particle::pos>, coalesce::aos, coalesce::soa>;

// Deterministic, varied inputs (never zeros: they hide unwritten outputs).
std::vector<particle> make_particles(std::size_t n) {
  std::vector<particle> out(n);
  std::uint32_t s = 12345u;
  auto next = [&] {
    s = s * 1664525u + 1013904223u;
    return static_cast<float>(s >> 8) / static_cast<float>(1u << 24) - 0.5f;
  };
  for (auto& p : out) p = {{next(), next(), next()}, {next(), next(), next()}};
  return out;
}

std::vector<fat_particle> make_fat(std::size_t n) {
  auto const base = make_particles(n);
  std::vector<fat_particle> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    float const f = static_cast<float>(i % 1000);
    out[i] = {base[i].pos, base[i].vel, {f, -f, 0.5f}, 1.0f + f, -1.0f, 0.1f, {f, f, f, f}};
  }
  return out;
}

template <class V> soa_pointers pointers_of(V& v) {
  auto view = v.view();
  return {view.template column<0>().data(), view.template column<1>().data(), view.template column<2>().data(),
          view.template column<3>().data(), view.template column<4>().data(), view.template column<5>().data()};
}

template <class T, class V> std::vector<T> records_of(V const& v) {
  std::vector<T> out(v.size());
  v.copy_to(out);
  return out;
}

int failures = 0;
template <class T> void expect_identical(char const* what, std::vector<T> const& got, std::vector<T> const& want) {
  bool const same = got.size() == want.size() && std::memcmp(got.data(), want.data(), sizeof(T) * got.size()) == 0;
  std::printf("  %-44s %s\n", what, same ? "bit-identical" : "DIFFERENT");
  failures += !same;
}

// ------------------------------------------------------------------------ correctness first
void check_layouts(std::size_t n) {
  std::printf("checking that every layout gives bit-identical particles (%zu particles, 3 steps)\n", n);
  auto const records = make_particles(n);
  coalesce::device_vector<particle> raw(records);
  for (int s = 0; s < 3; ++s) raw_soa_step(pointers_of(raw), n, dt);
  auto const want = records_of<particle>(raw);

  auto run = [&]<class Layout>(char const* name, Layout) {
    coalesce::device_vector<particle, Layout> a(records), b(records);
    for (int s = 0; s < 3; ++s) {
      step(a.view(), dt);
      step_bindings(b.view(), dt);
    }
    expect_identical((std::string(name) + " step").c_str(), records_of<particle>(a), want);
    expect_identical((std::string(name) + " step (bound references)").c_str(), records_of<particle>(b), want);
  };
  run("aos", coalesce::aos{});
  run("soa", coalesce::soa{});
  run("aosoa<32>", coalesce::aosoa<32>{});
  run("split<pos: aos, soa>", split_pos{});
  coalesce::device_vector<particle, coalesce::aos> raw_aos(records);
  for (int s = 0; s < 3; ++s) {
    raw_aos_step(reinterpret_cast<particle*>(raw_aos.storage().base()), n, dt);
  }
  expect_identical("hand-written aos step", records_of<particle>(raw_aos), want);

  auto const fat = make_fat(n);
  coalesce::device_vector<fat_particle> fat_raw(fat);
  auto fv = fat_raw.view();
  raw_soa_drift_x(fv.column(&fat_particle::pos, &vec3::x).data(), fv.column(&fat_particle::vel, &vec3::x).data(), n,
                  dt);
  auto const fat_want = records_of<fat_particle>(fat_raw);
  auto run_fat = [&]<class Layout>(char const* name, Layout) {
    coalesce::device_vector<fat_particle, Layout> f(fat);
    drift_x(f.view(), dt);
    expect_identical((std::string(name) + " drift_x (64-byte record)").c_str(), records_of<fat_particle>(f), fat_want);
  };
  run_fat("aos", coalesce::aos{});
  run_fat("soa", coalesce::soa{});
  run_fat("aosoa<32>", coalesce::aosoa<32>{});
  run_fat("split<pos: aos, soa>", split_fat_pos{});
}

// ---------------------------------------------------------------------------- then speed
struct row {
  std::string group, name;
  double ms, bytes, ceiling_gbs, baseline_ms;
  double gbs() const { return bytes / (ms * 1e6); }
};
std::vector<row> rows;

void add(std::string group, std::string name, double ms, double bytes, double ceiling_gbs, double baseline_ms) {
  rows.push_back({std::move(group), std::move(name), ms, bytes, ceiling_gbs, baseline_ms});
}
// A conversion of soa particles into a stored layout (`there`) and back out of it (`back`), timed
// each way: the rows "soa -> soa, <what>" and "soa, <what> -> soa", `bytes` moved by each.
template <class There, class Back> void add_round_trip(std::string const& what, There there, Back back, double bytes,
                                                       double copy_gbs, double copy_ms, int runs) {
  add("convert", "soa -> soa, " + what, bench::median_ms(there, runs), bytes, copy_gbs, copy_ms);
  add("convert", "soa, " + what + " -> soa", bench::median_ms(back, runs), bytes, copy_gbs, copy_ms);
}

// Conversions of one record type between mappings (into storage that already exists), each
// against a copy kernel over the same bytes in the same run.
template <class Rec, class Split>
void time_conversions(std::string const& record, std::vector<Rec> const& records, int runs) {
  std::size_t const n = records.size();
  double const bytes = 2.0 * static_cast<double>(n * sizeof(Rec));
  coalesce::device_vector<Rec, coalesce::aos> aos_v(records), aos_copy(n);
  double const copy_ms =
      bench::median_ms([&] { copy_ceiling(aos_copy.storage().base(), aos_v.storage().base(), n * sizeof(Rec)); }, runs);
  double const copy_gbs = bytes / (copy_ms * 1e6);
  std::string const g = "convert";
  add(g, record + ": copy kernel", copy_ms, bytes, copy_gbs, copy_ms);
  coalesce::device_vector<Rec> soa_v(records), soa_copy(records);
  coalesce::device_vector<Rec, coalesce::aosoa<32>> aosoa_v(records);
  coalesce::device_vector<Rec, Split> split_v(records);
  auto row = [&](char const* name, auto&& work) {
    add(g, record + ": " + name, bench::median_ms(work, runs), bytes, copy_gbs, copy_ms);
  };
  row("aos -> soa", [&] { soa_v = aos_v; });
  row("soa -> aos", [&] { aos_v = soa_v; });
  row("soa -> aosoa<32>", [&] { aosoa_v = soa_v; });
  row("aosoa<32> -> aos", [&] { aos_v = aosoa_v; });
  row("soa -> split", [&] { split_v = soa_v; });
  row("split -> aos", [&] { aos_v = split_v; });
  row("aos -> split", [&] { split_v = aos_v; });  // LLAMA's AoS -> Split pair
  row("soa -> soa", [&] { soa_copy = soa_v; });
#if COALESCE_WITH_CUDA
  // The same conversions queued on a stream, 10 per timing (per conversion below): without the
  // wait each default-stream assignment ends with, what is left is the kernels and the host's
  // queueing (a 16 KiB record's conversion is ~40 us of copying).
  cudaStream_t raw = nullptr;
  bench::check_cuda(cudaStreamCreate(&raw), "cudaStreamCreate");
  coalesce::stream const on(raw);
  auto queued = [&](char const* name, auto&& convert) {
    double const ms = bench::median_ms(
        [&] {
          for (int k = 0; k < 10; ++k) convert();
          bench::check_cuda(cudaStreamSynchronize(raw), "cudaStreamSynchronize");
        },
        runs);
    add(g, record + ": " + name + ", 10 queued", ms / 10, bytes, copy_gbs, copy_ms);
  };
  queued("aos -> soa", [&] { soa_v.assign(aos_v, on); });
  queued("soa -> aos", [&] { aos_v.assign(soa_v, on); });
  queued("soa -> aosoa<32>", [&] { aosoa_v.assign(soa_v, on); });
  queued("aosoa<32> -> aos", [&] { aos_v.assign(aosoa_v, on); });
  queued("soa -> split", [&] { split_v.assign(soa_v, on); });
  bench::check_cuda(cudaStreamDestroy(raw), "cudaStreamDestroy");
#endif
  // Round trips bit for bit.
  std::vector<Rec> back(n);
  aos_v = split_v;
  aos_v.copy_to(back);
  if (std::memcmp(back.data(), records.data(), n * sizeof(Rec)) != 0) {
    std::fprintf(stderr, "%s: conversions changed the records\n", record.c_str());
    std::exit(1);
  }
}

// Velocities stored as half (core/stored_as.hpp): the step moves 30 bytes per particle instead
// of 36, so its time should follow (target: <= 30/36 of the float soa step, x 1.05); its error
// against the all-float step is printed beside the time. Conversions into and out of it count
// the stored bytes against the copy ceiling.
using vel_half = coalesce::stored_as<coalesce::soa, coalesce::store<&particle::vel, coalesce::half>>;
void time_stored_velocities(std::vector<particle> const& records, double step_ceiling, double raw_ms, int runs) {
  std::size_t const n = records.size();
  double const stored_step_bytes = 30.0 * static_cast<double>(n);
  coalesce::device_vector<particle> plain(records);
  coalesce::device_vector<particle, vel_half> half(records);
  double const plain_ms = bench::median_ms([&] { step(plain.view(), dt); }, runs);
  double const half_ms = bench::median_ms([&] { step(half.view(), dt); }, runs);
  add("step", "coalesce soa (again, for vel as half)", plain_ms, 36.0 * static_cast<double>(n), step_ceiling, raw_ms);
  add("step", "coalesce soa, vel stored as half", half_ms, stored_step_bytes, step_ceiling, raw_ms);
  // Error: 10 steps from the same particles, positions against the all-float run.
  coalesce::device_vector<particle> a(records);
  coalesce::device_vector<particle, vel_half> b(records);
  for (int s = 0; s < 10; ++s) {
    step(a.view(), dt);
    step(b.view(), dt);
  }
  auto const want = records_of<particle>(a), got = records_of<particle>(b);
  double largest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    largest = std::max({largest, std::fabs(static_cast<double>(got[i].pos.x) - want[i].pos.x),
                        std::fabs(static_cast<double>(got[i].pos.y) - want[i].pos.y),
                        std::fabs(static_cast<double>(got[i].pos.z) - want[i].pos.z)});
  }
  std::printf(
      "vel as half: step %.4f ms = %.3f x the float soa step (target <= %.3f = 30/36 x 1.05); largest "
      "position error after 10 steps %.3g (positions and velocities in [-0.5, 0.5], dt = 1/64)\n",
      half_ms, half_ms / plain_ms, 30.0 / 36.0 * 1.05, largest);
}

// Conversions into and out of velocities stored as half: read 24 + write 18 bytes per particle
// (and back).
using pos_fixed =
    coalesce::stored_as<coalesce::soa, coalesce::store<&particle::pos, coalesce::fixed_point<std::int32_t, 20>>>;
using pos_boxed =
    coalesce::stored_as<coalesce::soa, coalesce::store<&particle::pos, coalesce::box_fixed<coalesce::wrap>>>;
void time_stored_conversions(std::vector<particle> const& records, double copy_gbs, double copy_ms, int runs) {
  std::size_t const n = records.size();
  coalesce::device_vector<particle> plain(records);
  coalesce::device_vector<particle, vel_half> half(records);
  double const bytes = 42.0 * static_cast<double>(n);
  add_round_trip(
      "vel as half", [&] { half = plain; }, [&] { plain = half; }, bytes, copy_gbs, copy_ms, runs);
  // Positions as 32-bit fixed point and as fractions of a box: read 24 + write 24 bytes.
  double const same_bytes = 48.0 * static_cast<double>(n);
  coalesce::device_vector<particle, pos_fixed> fixed(records);
  add_round_trip(
      "pos as fixed_point", [&] { fixed = plain; }, [&] { plain = fixed; }, same_bytes, copy_gbs, copy_ms, runs);
  coalesce::device_vector<particle, pos_boxed> boxed(coalesce::box{.lo = {-4, -4, -4}, .hi = {4, 4, 4}});
  boxed.assign(plain);
  add_round_trip(
      "pos as box_fixed", [&] { boxed.assign(plain); }, [&] { plain.assign(boxed); }, same_bytes, copy_gbs, copy_ms,
      runs);
}

// Conversions into and out of bit-packed fields (type, charge, flags and ghost in one 32-bit word):
// read 22 + write 16 bytes per particle (and back), against the copy ceiling.
using tagged_bits = coalesce::stored_as<coalesce::soa, coalesce::store<&tagged_particle::type, coalesce::bits<3>>,
                                        coalesce::store<&tagged_particle::charge, coalesce::signed_bits<4>>,
                                        coalesce::store<&tagged_particle::flags, coalesce::bits<5>>,
                                        coalesce::store<&tagged_particle::ghost, coalesce::bits<1>>>;
using tagged_two_words = coalesce::stored_as<coalesce::soa, coalesce::store<&tagged_particle::type, coalesce::bits<20>>,
                                             coalesce::store<&tagged_particle::charge, coalesce::signed_bits<16>>,
                                             coalesce::store<&tagged_particle::flags, coalesce::bits<5>>,
                                             coalesce::store<&tagged_particle::ghost, coalesce::bits<1>>>;
using tagged_half_bits = coalesce::stored_as<coalesce::soa, coalesce::store<&tagged_particle::pos, coalesce::half>,
                                             coalesce::store<&tagged_particle::type, coalesce::bits<3>>,
                                             coalesce::store<&tagged_particle::charge, coalesce::signed_bits<4>>,
                                             coalesce::store<&tagged_particle::flags, coalesce::bits<5>>,
                                             coalesce::store<&tagged_particle::ghost, coalesce::bits<1>>>;
void time_packed_conversions(std::vector<particle> const& records, double copy_gbs, double copy_ms, int runs) {
  std::size_t const n = records.size();
  std::vector<tagged_particle> tagged(n);
  for (std::size_t i = 0; i < n; ++i) {
    tagged[i] = {records[i].pos, static_cast<std::uint32_t>(i % 8), static_cast<std::int32_t>(i % 16) - 8,
                 static_cast<std::uint8_t>(i % 32), i % 3 == 0};
  }
  coalesce::device_vector<tagged_particle> plain(tagged);
  coalesce::device_vector<tagged_particle, tagged_bits> packed(tagged);
  double const bytes = 38.0 * static_cast<double>(n);
  add_round_trip(
      "4 fields in bits", [&] { packed = plain; }, [&] { plain = packed; }, bytes, copy_gbs, copy_ms, runs);
  // Two runs (type alone in one word, charge, flags and ghost in the next: a launch each), and one
  // run beside pos stored as half (read 22 + write 20, and read 22 + write 10 bytes per particle).
  coalesce::device_vector<tagged_particle, tagged_two_words> two(tagged);
  double const two_bytes = 42.0 * static_cast<double>(n);
  add_round_trip(
      "4 fields in 2 words", [&] { two = plain; }, [&] { plain = two; }, two_bytes, copy_gbs, copy_ms, runs);
  coalesce::device_vector<tagged_particle, tagged_half_bits> mixed(tagged);
  double const mixed_bytes = 32.0 * static_cast<double>(n);
  add_round_trip(
      "pos half + 4 in bits", [&] { mixed = plain; }, [&] { plain = mixed; }, mixed_bytes, copy_gbs, copy_ms, runs);
  // Every round trip gives the particles back (pos through half: its fields only).
  auto const check = [&](char const* what, bool with_pos) {
    auto const back = records_of<tagged_particle>(plain);
    for (std::size_t i = 0; i < n; ++i) {
      tagged_particle const& a = back[i];
      tagged_particle const& b = tagged[i];
      if (a.type != b.type || a.charge != b.charge || a.flags != b.flags || a.ghost != b.ghost ||
          (with_pos && a.pos.x != b.pos.x)) {
        std::fprintf(stderr, "bit-packed conversions (%s) changed particle %zu\n", what, i);
        std::exit(1);
      }
    }
  };
  plain = packed;
  check("one word", true);
  plain = two;
  check("two words", true);
  plain = mixed;
  check("pos as half", false);
}

void measure_kernels(options const& o, std::vector<particle> const& records, double step_ceiling);
void measure_conversions(options const& o, std::vector<particle> const& records, double copy_gbs, double copy_ms);

void measure(options const& o) {
  std::size_t const n = o.n;
  auto const records = make_particles(n);

  // The ceiling, in the same run: a plain copy of the particle data (bytes read + written).
  double const data_bytes = static_cast<double>(n * sizeof(particle));
  coalesce::device_vector<particle, coalesce::aos> copy_src(records), copy_dst(n);
  double const copy_ms = bench::median_ms(
      [&] { copy_ceiling(copy_dst.storage().base(), copy_src.storage().base(), n * sizeof(particle)); }, o.runs);
  double const copy_gbs = 2.0 * data_bytes / (copy_ms * 1e6);
  add("ceiling", "copy kernel (read + write)", copy_ms, 2.0 * data_bytes, copy_gbs, copy_ms);
  double step_ceiling = copy_gbs;
  if (!coalesce::device_is_gpu) {
    // On the CPU an in-place update pays no write-allocate: its ceiling is an in-place stream.
    double const rmw_ms = bench::median_ms(
        [&] { in_place_ceiling(reinterpret_cast<float*>(copy_dst.storage().base()), n * sizeof(particle) / 4); },
        o.runs);
    step_ceiling = 2.0 * data_bytes / (rmw_ms * 1e6);
    add("ceiling", "in-place stream (read + write)", rmw_ms, 2.0 * data_bytes, step_ceiling, rmw_ms);
  }

  if (!o.conversions_only) measure_kernels(o, records, step_ceiling);
  measure_conversions(o, records, copy_gbs, copy_ms);
}

void measure_kernels(options const& o, std::vector<particle> const& records, double step_ceiling) {
  std::size_t const n = o.n;
  double const step_bytes = 36.0 * static_cast<double>(n);  // reads 6 floats, writes 3
  coalesce::device_vector<particle> raw(records);
  double const raw_ms = bench::median_ms([&] { raw_soa_step(pointers_of(raw), n, dt); }, o.runs);
  add("step", "hand-written soa", raw_ms, step_bytes, step_ceiling, raw_ms);
  coalesce::device_vector<particle, coalesce::aos> raw_aos(records);
  double const raw_aos_ms =
      bench::median_ms([&] { raw_aos_step(reinterpret_cast<particle*>(raw_aos.storage().base()), n, dt); }, o.runs);
  add("step", "hand-written aos", raw_aos_ms, step_bytes, step_ceiling, raw_ms);

  auto time_step = [&]<class Layout>(char const* name, Layout) {
    coalesce::device_vector<particle, Layout> d(records);
    add("step", std::string("coalesce ") + name, bench::median_ms([&] { step(d.view(), dt); }, o.runs), step_bytes,
        step_ceiling, raw_ms);
    add("step", std::string("coalesce ") + name + " (bound refs)",
        bench::median_ms([&] { step_bindings(d.view(), dt); }, o.runs), step_bytes, step_ceiling, raw_ms);
  };
  time_step("soa", coalesce::soa{});
  time_step("aos", coalesce::aos{});
  time_step("aosoa<32>", coalesce::aosoa<32>{});
  time_step("split<pos: aos, soa>", split_pos{});
  time_stored_velocities(records, step_ceiling, raw_ms, o.runs);
  // The baseline once more: the spread between its two figures is this run's noise.
  add("step", "hand-written soa (again)", bench::median_ms([&] { raw_soa_step(pointers_of(raw), n, dt); }, o.runs),
      step_bytes, step_ceiling, raw_ms);

  // Partial-field kernel on a 64-byte record: 12 useful bytes per particle.
  {
    auto const fat = make_fat(n);
    double const drift_bytes = 12.0 * static_cast<double>(n);
    coalesce::device_vector<fat_particle> fat_soa(fat);
    auto fv = fat_soa.view();
    float* x = fv.column(&fat_particle::pos, &vec3::x).data();
    float const* vx = fv.column(&fat_particle::vel, &vec3::x).data();
    double const raw_drift = bench::median_ms([&] { raw_soa_drift_x(x, vx, n, dt); }, o.runs);
    add("drift_x", "hand-written soa", raw_drift, drift_bytes, step_ceiling, raw_drift);
    coalesce::device_vector<fat_particle, coalesce::aos> fat_aos(fat);
    add("drift_x", "hand-written aos",
        bench::median_ms([&] { raw_aos_drift_x(reinterpret_cast<fat_particle*>(fat_aos.storage().base()), n, dt); },
                         o.runs),
        drift_bytes, step_ceiling, raw_drift);
    auto time_drift = [&]<class Layout>(char const* name, Layout) {
      coalesce::device_vector<fat_particle, Layout> d(fat);
      add("drift_x", std::string("coalesce ") + name, bench::median_ms([&] { drift_x(d.view(), dt); }, o.runs),
          drift_bytes, step_ceiling, raw_drift);
    };
    time_drift("soa", coalesce::soa{});
    time_drift("aos", coalesce::aos{});
    time_drift("aosoa<32>", coalesce::aosoa<32>{});
    time_drift("split<pos: aos, soa>", split_fat_pos{});
  }
}

void measure_conversions(options const& o, std::vector<particle> const& records, double copy_gbs, double copy_ms) {
  std::size_t const n = o.n;
  double const data_bytes = static_cast<double>(n * sizeof(particle));
  time_stored_conversions(records, copy_gbs, copy_ms, o.runs);
  time_packed_conversions(records, copy_gbs, copy_ms, o.runs);
  // Conversions between layouts on the device, into storage that already exists.
  {
    coalesce::device_vector<particle, coalesce::aos> aos_v(records);
    coalesce::device_vector<particle> soa_v(records);
    coalesce::device_vector<particle, coalesce::aosoa<32>> aosoa_v(records);
    double const bytes = 2.0 * data_bytes;
    add("convert", "hand-written aos -> soa",
        bench::median_ms(
            [&] { raw_aos_to_soa(reinterpret_cast<particle const*>(aos_v.storage().base()), pointers_of(soa_v), n); },
            o.runs),
        bytes, copy_gbs, copy_ms);
    add("convert", "aos -> soa", bench::median_ms([&] { soa_v = aos_v; }, o.runs), bytes, copy_gbs, copy_ms);
    add("convert", "soa -> aos", bench::median_ms([&] { aos_v = soa_v; }, o.runs), bytes, copy_gbs, copy_ms);
    add("convert", "soa -> aosoa<32>", bench::median_ms([&] { aosoa_v = soa_v; }, o.runs), bytes, copy_gbs, copy_ms);
    add("convert", "aosoa<32> -> aos", bench::median_ms([&] { aos_v = aosoa_v; }, o.runs), bytes, copy_gbs, copy_ms);
    coalesce::device_vector<particle, split_pos> split_v(records);
    add("convert", "soa -> split<pos>", bench::median_ms([&] { split_v = soa_v; }, o.runs), bytes, copy_gbs, copy_ms);
    add("convert", "split<pos> -> aos", bench::median_ms([&] { aos_v = split_v; }, o.runs), bytes, copy_gbs, copy_ms);
    add("convert", "aosoa<32> -> split<pos>", bench::median_ms([&] { split_v = aosoa_v; }, o.runs), bytes, copy_gbs,
        copy_ms);
    coalesce::device_vector<particle> soa_copy(records);
    add("convert", "soa -> soa (same layout)", bench::median_ms([&] { soa_copy = soa_v; }, o.runs), bytes, copy_gbs,
        copy_ms);
  }
  if (coalesce::device_is_gpu) {  // the wide records: 2 GiB of 64-byte records, 64 MiB of 16 KiB ones
    time_conversions<fat_particle, split_fat_pos>("64 B", make_fat(n / 2), o.runs);
    std::vector<histogram_record> wide(4096);
    for (std::size_t i = 0; i < wide.size(); ++i) {
      wide[i].id = static_cast<std::uint32_t>(i);
      for (std::size_t k = 0; k < 4096; ++k) wide[i].counts[k] = static_cast<int>(i * 7 + k);
    }
    using split_id = coalesce::split<coalesce::fields<&histogram_record::id>, coalesce::aos, coalesce::soa>;
    time_conversions<histogram_record, split_id>("16 KiB", wide, o.runs);
  }
}

void print_table() {
  std::printf("\n%-9s %-34s %10s %10s %12s %14s\n", "kernel", "version", "ms", "GB/s", "x ceiling", "time / base");
  for (auto const& r : rows) {
    std::printf("%-9s %-34s %10.3f %10.1f %12.3f %14.3f\n", r.group.c_str(), r.name.c_str(), r.ms, r.gbs(),
                r.gbs() / r.ceiling_gbs, r.ms / r.baseline_ms);
  }
  std::printf(
      "\nGB/s counts the bytes a kernel must move (step: 36 B/particle, drift_x: 12 B/particle, convert: read +\n"
      "write of every record); 'x ceiling' divides by the ceiling measured above in this run; 'time / base'\n"
      "divides by the hand-written soa kernel of the same group (convert: by the copy kernel).\n");
}

void write_json(options const& o) {
  if (o.json.empty()) return;
  std::ofstream out(o.json);
  out << "{\n  \"device\": \"" << bench::device_name() << "\",\n  \"particles\": " << o.n << ",\n  \"runs\": " << o.runs
      << ",\n  \"rows\": [\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto const& r = rows[i];
    out << "    {\"group\": \"" << r.group << "\", \"name\": \"" << r.name << "\", \"ms\": " << r.ms
        << ", \"gbs\": " << r.gbs() << ", \"ratio_to_ceiling\": " << r.gbs() / r.ceiling_gbs
        << ", \"time_ratio_to_baseline\": " << r.ms / r.baseline_ms << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
  std::printf("wrote %s\n", o.json.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  options const o = parse(argc, argv);
  if (bench::gpu_missing()) return bench::skipped;
  if (o.tile_bytes > 0) {
    coalesce::detail::set_record_tile_bytes(static_cast<std::size_t>(o.tile_bytes));
    std::printf("record tiles of %ld bytes\n", o.tile_bytes);
  }
  if (o.per_thread_records >= 0) {
    coalesce::detail::set_per_thread_record_bytes(static_cast<std::size_t>(o.per_thread_records));
    std::printf("records of up to %ld bytes written one per thread\n", o.per_thread_records);
  }
  std::printf("particle_integrator on %s, %zu particles, medians of %d runs\n", bench::device_name(), o.n, o.runs);
  try {
    check_layouts(std::min<std::size_t>(o.n, 1000003));
    if (failures != 0) {
      std::printf("FAILED: %d layouts gave different particles\n", failures);
      return 1;
    }
    measure(o);
  } catch (coalesce::error const& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  print_table();
  write_json(o);
  return 0;
}
