// libFuzzer target for coalesce::analysis: every entry point and the index-file reader, fed with
// arbitrary parameters. coalesce::error is the expected answer to bad input; anything else (a
// crash, a sanitizer report, another exception, a broken invariant) is a bug.
//
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCOALESCE_ENABLE_CUDA=OFF \
//         -DCOALESCE_BUILD_FUZZERS=ON && cmake --build build-fuzz --target coalesce_analysis_fuzz
//   build-fuzz/tests/fuzz/coalesce_analysis_fuzz -max_total_time=60 -max_len=4096
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include <coalesce/analysis/analysis.hpp>

namespace ca = coalesce::analysis;

// Reflected types live in a named namespace: coalesce cannot reflect types with internal linkage
// (detail/member_types.hpp's declared-only helper; clang rejects it, gcc fails to link).
namespace analysis_fuzz {
struct vec3 {
  float x, y, z;
};
struct Particle {
  vec3 pos;
  vec3 vel;
  float mass;
  std::uint32_t id;
};
struct Odd {
  std::uint8_t tag;
  std::array<std::uint16_t, 3> small;
  double energy;
  std::array<float, 5> history;
};
}  // namespace analysis_fuzz
using analysis_fuzz::Odd;
using analysis_fuzz::Particle;

namespace {

// Reads fixed-size values from the input; zeros once it runs out.
class reader {
 public:
  reader(std::uint8_t const* data, std::size_t size) : data_(data), size_(size) {}
  template <class T> T get() {
    T value{};
    std::size_t const n = std::min(sizeof(T), size_ - pos_);
    std::memcpy(&value, data_ + pos_, n);
    pos_ += n;
    return value;
  }
  std::span<const std::byte> rest() {
    auto const* p = reinterpret_cast<std::byte const*>(data_ + pos_);
    std::span<const std::byte> out(p, size_ - pos_);
    pos_ = size_;
    return out;
  }
  std::size_t left() const { return size_ - pos_; }

 private:
  std::uint8_t const* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

void require(bool ok) {
  if (!ok) __builtin_trap();
}

// Invariants every successful result must keep.
void check(ca::access_stats const& s, ca::device_model const& m) {
  require(s.requests >= 1 || s.lanes == 0);
  require(s.sectors >= s.requests);
  require(s.lines <= s.sectors);
  require(s.sectors <= s.requests * m.warp_size * (1 + 16 / m.sector_bytes));
  require(s.bytes_useful <= s.bytes_fetched);
  require(s.bytes_useful <= s.bytes_requested);
  require(s.efficiency() <= 1.0);
}

ca::device_model model_from(reader& in) {
  std::uint8_t const pick = in.get<std::uint8_t>();
  switch (pick % 4) {
    case 0:
      return ca::device_model::hopper();
    case 1:
      return ca::device_model::line_based();
    case 2:
      return ca::device_model::sectored();
    default: {
      ca::device_model m{"fuzzed"};
      m.warp_size = in.get<std::uint8_t>();
      m.sector_bytes = in.get<std::uint16_t>();
      m.line_bytes = in.get<std::uint16_t>();
      m.fetch = (in.get<std::uint8_t>() & 1) ? ca::fetch_unit::line : ca::fetch_unit::sector;
      return m;
    }
  }
}

template <class T, class Layout>
void table(ca::device_model const& m, std::vector<std::size_t> const& leaves, std::uint64_t warps) {
  ca::layout_report const r = ca::layout_table<T, Layout>(m, leaves, warps);
  for (auto const& row : r.rows) check(row.stats, m);
  (void)ca::describe(r);
}

void one_input(reader& in) {
  std::uint8_t const entry = in.get<std::uint8_t>();
  ca::device_model const m = model_from(in);
  switch (entry % 8) {
    case 0: {  // strided pattern
      ca::strided_pattern p;
      p.width = in.get<std::int16_t>();
      p.stride = in.get<std::int64_t>();
      p.offset = in.get<std::uint64_t>();
      p.active = in.get<std::uint64_t>();
      if (in.get<std::uint8_t>() & 1) p.active = ca::first_lanes(in.get<std::int8_t>());
      ca::access_stats const s = ca::strided(m, p);
      check(s, m);
      (void)ca::describe(s, m);
      break;
    }
    case 1: {  // explicit addresses
      std::int64_t const width = in.get<std::int16_t>();
      std::vector<std::uint64_t> addresses;
      std::size_t const n = in.get<std::uint8_t>() % 70;
      for (std::size_t k = 0; k < n; ++k) addresses.push_back(in.get<std::uint64_t>() >> (in.get<std::uint8_t>() % 64));
      check(ca::addresses(m, addresses, width), m);
      break;
    }
    case 2: {  // the index reader, then a flat gather
      ca::index_width const w = (in.get<std::uint8_t>() & 1) ? ca::index_width::u64 : ca::index_width::u32;
      std::int64_t const element_size = in.get<std::int16_t>();
      std::vector<std::uint64_t> const idx = ca::parse_indices(in.rest(), w, "fuzz input");
      ca::report const r = w == ca::index_width::u64
                               ? ca::gather(m, idx, element_size)
                               : ca::gather(m, std::vector<std::uint32_t>(idx.begin(), idx.end()), element_size);
      check(r.data, m);
      check(r.index_loads, m);
      std::uint64_t counted = 0;
      for (auto c : r.sectors_histogram) counted += c;
      require(counted == r.data.requests);
      (void)ca::describe(r);
      break;
    }
    case 3: {  // a neighbour list
      std::int64_t const max_neighbors = in.get<std::int8_t>();
      ca::neighbor_list_ref list{
          {},
          max_neighbors,
          (in.get<std::uint8_t>() & 1) ? coalesce::neighbor_order::column_major : coalesce::neighbor_order::row_major};
      if (in.get<std::uint8_t>() & 1) list.empty_slot = in.get<std::uint32_t>();
      std::int64_t const element_size = in.get<std::int16_t>();
      std::vector<std::uint32_t> idx(in.left() / 4);
      for (auto& v : idx) v = in.get<std::uint32_t>();
      list.indices = idx;
      ca::report const r = ca::gather(m, list, element_size);
      check(r.data, m);
      check(r.index_loads, m);
      break;
    }
    case 4: {  // shared-memory banks
      ca::bank_model b;
      if (in.get<std::uint8_t>() & 1) {
        b.banks = in.get<std::uint8_t>();
        b.bank_bytes = in.get<std::uint8_t>();
        b.warp_size = in.get<std::uint8_t>();
      }
      ca::tile_access t;
      t.row_elements = in.get<std::int32_t>();
      t.element_bytes = in.get<std::int8_t>();
      t.row0 = in.get<std::int32_t>();
      t.col0 = in.get<std::int32_t>();
      t.row_step = in.get<std::int16_t>();
      t.col_step = in.get<std::int16_t>();
      t.active = in.get<std::uint64_t>();
      std::uint8_t const what = in.get<std::uint8_t>();
      ca::bank_stats s;
      if (what % 3 == 0) {
        s = ca::bank_conflicts(t, in.get<std::int16_t>(), b);
      } else if (what % 3 == 1) {
        s = ca::best_padding(t, in.get<std::int8_t>() % 40, b).stats;
      } else {
        ca::strided_pattern p{in.get<std::int8_t>(), in.get<std::int32_t>(), in.get<std::uint32_t>(),
                              in.get<std::uint64_t>()};
        s = ca::bank_conflicts(p, b);
      }
      require(s.ideal_wavefronts >= 1 && s.wavefronts >= s.ideal_wavefronts && s.degree >= 1);
      (void)ca::describe(s);
      break;
    }
    case 5: {  // reflected layouts
      std::vector<std::size_t> leaves;
      std::size_t const n = in.get<std::uint8_t>() % 6;
      for (std::size_t k = 0; k < n; ++k) leaves.push_back(in.get<std::uint8_t>() % 12);
      std::uint64_t const warps = in.get<std::uint8_t>() % 6;  // 0 is bad input
      switch (in.get<std::uint8_t>() % 6) {
        case 0:
          table<Particle, coalesce::aos>(m, leaves, warps);
          break;
        case 1:
          table<Particle, coalesce::soa>(m, leaves, warps);
          break;
        case 2:
          table<Particle, coalesce::aosoa<8>>(m, leaves, warps);
          break;
        case 3:
          table<Odd, coalesce::aos>(m, leaves, warps);
          break;
        case 4:
          table<Odd, coalesce::soa>(m, leaves, warps);
          break;
        default:
          table<Odd, coalesce::aosoa<4>>(m, leaves, warps);
          break;
      }
      break;
    }
    case 6: {  // the index reader through a real file
      static std::string const path = "/tmp/coalesce_fuzz_index_" + std::to_string(::getpid()) + ".bin";
      ca::index_width const w = (in.get<std::uint8_t>() & 1) ? ca::index_width::u64 : ca::index_width::u32;
      auto const bytes = in.rest();
      if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fclose(f);
      }
      struct remove_at_exit {
        std::string const& p;
        ~remove_at_exit() { std::remove(p.c_str()); }
      } const cleanup{path};
      auto const idx = ca::read_index_file(path, w);
      require(idx.size() * static_cast<std::size_t>(w) == bytes.size());
      break;
    }
    default: {  // first_lanes and model validation alone
      std::uint64_t const mask = ca::first_lanes(in.get<std::int8_t>());
      require(mask != 0);
      m.validate();
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  reader in(data, size);
  try {
    one_input(in);
  } catch (coalesce::error const& e) {
    // Expected for bad input; the message must say it comes from coalesce.
    require(std::strncmp(e.what(), "coalesce: ", 10) == 0);
  }
  return 0;
}
