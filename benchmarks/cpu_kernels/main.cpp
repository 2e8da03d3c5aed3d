// cpu_kernels: coalesce kernels on the CPU (OpenMP device system) against hand-written
// `omp parallel for simd` loops over plain arrays of the same shape, in the same run.
//
//   OMP_NUM_THREADS=2 cpu_kernels [--n particles] [--runs r] [--only text] [--json file]
//
// Records: 6 fields (vec3 pos, vel; 24 bytes) and 16 fields (64 bytes). Kernels: the step
// x += v * dt in load/store form (T p = v[i]; ...; v[i] = p), bound-reference form (structured
// bindings) and member-pointer form (v[i][&T::pos][&vec3::x]); drift_x (x += vx * dt: 2 of 16
// fields) in the last two forms. Layouts aos, soa, aosoa<8>, aosoa<16>, aosoa<32> and split<pos> (pos packed
// in 16-byte slots, the rest columns: split<fields<&T::pos>, aos, soa>). Every kernel is first
// checked bit-identical to its baseline; then each pair is timed alternately (raw, coalesce,
// coalesce, raw, ...) so both see the same machine, and the ratio of medians is reported with the
// interquartile range of the per-run ratios (the noise of this run) and the ratio of the fastest
// runs (on a shared machine the least disturbed run of each is the steadier estimate).
// benchmarks/cpu_kernels/check_asm.py reads the binary and says which loops are inlined, vectorized
// and free of gathers.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "kernels.hpp"
#include "raw.hpp"
#include "records.hpp"

using namespace cpu_kernels;

namespace {

constexpr float dt = 1.0f / 64.0f;

struct options {
  std::size_t n = std::size_t{1} << 22;
  int runs = 11;
  std::string only;
  std::string json;
};

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: cpu_kernels [--n particles] [--runs r (>= 1; figures want >= 7)] [--only text] "
               "[--json file]\n");
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string const arg = argv[i];
    if (i + 1 >= argc) usage();
    std::string const value = argv[++i];
    if (arg == "--n") {
      o.n = std::stoull(value);
    } else if (arg == "--runs") {
      o.runs = std::stoi(value);
    } else if (arg == "--only") {
      o.only = value;
    } else if (arg == "--json") {
      o.json = value;
    } else {
      usage();
    }
  }
  if (o.n == 0 || o.runs < 1) usage();
  return o;
}

// Deterministic, varied inputs (never zeros: they hide unwritten outputs).
template <class T> std::vector<T> make_records(std::size_t n) {
  std::vector<T> out(n);
  std::uint32_t s = 12345u;
  for (auto& r : out) {
    for (int k = 0; k < fields_of<T>; ++k) {
      s = s * 1664525u + 1013904223u;
      raw::set_field(r, k, static_cast<float>(s >> 8) / static_cast<float>(1u << 24) - 0.5f);
    }
  }
  return out;
}

template <class T> char const* record_name() { return std::is_same_v<T, particle6> ? "6 fields" : "16 fields"; }
// Each layout with the raw arrays of the same shape.
template <class T> using split_pos = coalesce::split<coalesce::fields<&T::pos>, coalesce::aos, coalesce::soa>;
template <class T> using split_pos_unpadded =
    coalesce::split<coalesce::fields<&T::pos>, coalesce::aos, coalesce::soa, coalesce::unpadded>;
// A layout, the raw arrays it is held against, and the row's name. The split rows held against
// raw soa columns show what the layout costs, not only the library: the padded 16-byte position
// slot moves more bytes per particle than three columns (step: 16 read + 16 written + 12 read =
// 44 B against 36; drift_x: 36 B against 12), the unpadded 12-byte slot as many (36 B) in the step.
template <class L, class Raw> struct layout_and_raw {
  using layout = L;
  using raw = Raw;
};

// One kernel in one form: the coalesce version and the baseline it is held against.
enum class kernel { step, drift };
enum class form { load_store, bindings, members };
char const* kernel_name(kernel k) { return k == kernel::step ? "step" : "drift_x"; }
char const* form_name(form f) {
  return f == form::load_store ? "load/store" : f == form::bindings ? "bindings" : "member ptr";
}

template <class View> void run_coalesce(kernel k, form f, View v) {
  if (k == kernel::step) {
    if (f == form::load_store)
      step_load_store(v, dt);
    else if (f == form::bindings)
      step_bindings(v, dt);
    else
      step_members(v, dt);
  } else if constexpr (std::is_same_v<typename View::value_type, particle16>) {  // drift_x: the 16-field record
    if (f == form::bindings)
      drift_bindings(v, dt);
    else
      drift_members(v, dt);
  }
}
template <class T, class Raw> void run_raw(kernel k, form f, Raw& r) {
  if (k == kernel::step) {
    if (f == form::load_store)
      raw::step_load_store(r, dt);
    else
      raw::step(r, dt);
  } else if constexpr (std::is_same_v<T, particle16>) {
    raw::drift(r, dt);
  }
}

struct row {
  std::string record, kernel, form, layout;
  double raw_ms = 0, lib_ms = 0, raw_min_ms = 0, lib_min_ms = 0, ratio_q1 = 0, ratio_q3 = 0, ratio_min = 0,
         ratio_max = 0;
  double ratio() const { return lib_ms / raw_ms; }
};
std::vector<row> rows;
int failures = 0;

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double const pos = q * static_cast<double>(v.size() - 1);
  std::size_t const lo = static_cast<std::size_t>(pos);
  std::size_t const hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

template <class F> double time_ms(F&& f) {
  auto const t0 = std::chrono::steady_clock::now();
  f();
  auto const t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

template <class T, class Pair>
void run_layout(options const& o, kernel k, std::vector<form> const& forms, char const* name) {
  using L = typename Pair::layout;
  using Raw = typename Pair::raw;
  for (form f : forms) {
    std::string const label = std::string(record_name<T>()) + " " + kernel_name(k) + " " + form_name(f) + " " + name;
    if (!o.only.empty() && label.find(o.only) == std::string::npos) continue;

    // Correctness first, on a size that leaves a partial last block.
    {
      auto const records = make_records<T>(10007);
      coalesce::device_vector<T, L> lib(records);
      Raw base{std::span<T const>(records)};
      run_coalesce(k, f, lib.view());
      coalesce::synchronize(coalesce::device{});
      run_raw<T>(k, f, base);
      std::vector<T> got(records.size()), want(records.size());
      lib.copy_to(got);
      base.store(want);
      if (std::memcmp(got.data(), want.data(), sizeof(T) * got.size()) != 0) {
        std::printf("DIFFERENT from the baseline: %s\n", label.c_str());
        ++failures;
        continue;
      }
    }

    auto const records = make_records<T>(o.n);
    coalesce::device_vector<T, L> lib(records);
    Raw base{std::span<T const>(records)};
    auto const v = lib.view();
    auto lib_once = [&] {
      run_coalesce(k, f, v);
      coalesce::synchronize(coalesce::device{});
    };
    auto raw_once = [&] { run_raw<T>(k, f, base); };
    for (int w = 0; w < 2; ++w) {
      lib_once();
      raw_once();
    }
    std::vector<double> raw_ms, lib_ms, ratios;
    for (int r = 0; r < o.runs; ++r) {
      double a, b;
      if (r % 2 == 0) {
        a = time_ms(raw_once);
        b = time_ms(lib_once);
      } else {
        b = time_ms(lib_once);
        a = time_ms(raw_once);
      }
      raw_ms.push_back(a);
      lib_ms.push_back(b);
      ratios.push_back(b / a);
    }
    row out{record_name<T>(), kernel_name(k), form_name(f), name};
    out.raw_ms = quantile(raw_ms, 0.5);
    out.lib_ms = quantile(lib_ms, 0.5);
    out.raw_min_ms = quantile(raw_ms, 0.0);
    out.lib_min_ms = quantile(lib_ms, 0.0);
    out.ratio_q1 = quantile(ratios, 0.25);
    out.ratio_q3 = quantile(ratios, 0.75);
    out.ratio_min = quantile(ratios, 0.0);
    out.ratio_max = quantile(ratios, 1.0);
    std::printf("%-10s %-8s %-11s %-24s %9.3f %12.3f %7.2fx   %5.2f-%-5.2f %7.2fx\n", out.record.c_str(),
                out.kernel.c_str(), out.form.c_str(), out.layout.c_str(), out.raw_ms, out.lib_ms, out.ratio(),
                out.ratio_q1, out.ratio_q3, out.lib_min_ms / out.raw_min_ms);
    std::fflush(stdout);
    rows.push_back(out);
  }
}

template <class T> void run_record(options const& o, kernel k, std::vector<form> const& forms) {
  run_layout<T, layout_and_raw<coalesce::aos, raw::aos_arrays<T>>>(o, k, forms, "aos");
  run_layout<T, layout_and_raw<coalesce::soa, raw::soa_arrays<T>>>(o, k, forms, "soa");
  run_layout<T, layout_and_raw<coalesce::aosoa<8>, raw::aosoa_arrays<T, 8>>>(o, k, forms, "aosoa<8>");
  run_layout<T, layout_and_raw<coalesce::aosoa<16>, raw::aosoa_arrays<T, 16>>>(o, k, forms, "aosoa<16>");
  run_layout<T, layout_and_raw<coalesce::aosoa<32>, raw::aosoa_arrays<T, 32>>>(o, k, forms, "aosoa<32>");
  run_layout<T, layout_and_raw<split_pos<T>, raw::split_arrays<T>>>(o, k, forms, "split<pos>");
  run_layout<T, layout_and_raw<split_pos<T>, raw::soa_arrays<T>>>(o, k, forms, "split<pos> vs raw soa");
  run_layout<T, layout_and_raw<split_pos_unpadded<T>, raw::soa_arrays<T>>>(o, k, forms, "split<pos,unpad> vs soa");
}

void write_json(options const& o) {
  if (o.json.empty()) return;
  std::ofstream out(o.json);
  out << "{\n  \"compiler\": \"" << __VERSION__ << "\",\n  \"threads\": " << omp_get_max_threads()
      << ",\n  \"particles\": " << o.n << ",\n  \"runs\": " << o.runs << ",\n  \"rows\": [\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto const& r = rows[i];
    out << "    {\"record\": \"" << r.record << "\", \"kernel\": \"" << r.kernel << "\", \"form\": \"" << r.form
        << "\", \"layout\": \"" << r.layout << "\", \"raw_ms\": " << r.raw_ms << ", \"coalesce_ms\": " << r.lib_ms
        << ", \"raw_min_ms\": " << r.raw_min_ms << ", \"coalesce_min_ms\": " << r.lib_min_ms
        << ", \"ratio\": " << r.ratio() << ", \"ratio_q1\": " << r.ratio_q1 << ", \"ratio_q3\": " << r.ratio_q3
        << ", \"ratio_min\": " << r.ratio_min << ", \"ratio_max\": " << r.ratio_max << "}"
        << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
  std::printf("wrote %s\n", o.json.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  options const o = parse(argc, argv);
  std::printf(
      "cpu_kernels: %zu particles, %d OpenMP threads, %d timed runs per kernel (alternating with its "
      "baseline), %s\n\n",
      o.n, omp_get_max_threads(), o.runs, __VERSION__);
  std::printf("%-10s %-8s %-11s %-24s %9s %12s %8s   %-11s %8s\n", "record", "kernel", "form", "layout", "raw ms",
              "coalesce ms", "ratio", "ratio IQR", "min/min");
  try {
    std::vector<form> const all = {form::load_store, form::bindings, form::members};
    run_record<particle6>(o, kernel::step, all);
    run_record<particle16>(o, kernel::step, all);
    run_record<particle16>(o, kernel::drift, {form::bindings, form::members});
  } catch (coalesce::error const& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::printf(
      "\nraw: the same kernel by hand over plain arrays of the same shape, `omp parallel for simd` (aosoa:\n"
      "`parallel for` over blocks, `simd` over lanes); ratio = median coalesce time / median raw time;\n"
      "min/min = fastest coalesce run / fastest raw run. \"vs raw soa\": the split layout against three raw\n"
      "columns (the layout's cost too): the step moves 44 B per particle through the padded 16-byte slot\n"
      "(16 read, 16 written, 12 of vel read), 36 B unpadded and in soa; drift_x 36 B padded, 28 B unpadded,\n"
      "12 B in soa.\n");
  write_json(o);
  if (failures != 0) {
    std::printf("FAILED: %d kernels differ from their baseline\n", failures);
    return 1;
  }
  return 0;
}
