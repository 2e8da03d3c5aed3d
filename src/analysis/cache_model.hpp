// A set-associative, least-recently-used cache of sectors: the advisor's model of one SM's L1
// and of the shared L2 (src/analysis/advisor.cpp). Sectors, not lines, are what the L1 asks L2
// for and what L2 fetches from DRAM on sectored GPUs, so the unit here is the sector.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace coalesce::detail {

class sector_cache {
 public:
  // A cache of `bytes` (at least one set of `ways` sectors) of `sector_bytes`-byte sectors.
  sector_cache(std::uint64_t bytes, std::uint32_t sector_bytes, std::uint32_t ways)
      : ways_(ways), sets_(std::max<std::uint64_t>(1, bytes / sector_bytes / ways)) {
    slots_.assign(sets_ * ways_, slot{});
  }

  struct outcome {
    bool hit = false;
    bool evicted_dirty = false;  // the sector made room for had been written (a write-back)
  };

  // Looks `sector` up; on a miss it takes the least recently used way of its set. `write` marks
  // it dirty (a write-back cache: L2); `allocate` false leaves a miss out of the cache.
  outcome access(std::uint64_t sector, bool write = false, bool allocate = true) {
    ++clock_;
    slot* const set = &slots_[set_of(sector) * ways_];
    slot* oldest = set;
    for (std::uint32_t w = 0; w < ways_; ++w) {
      if (set[w].valid && set[w].sector == sector) {
        set[w].used = clock_;
        set[w].dirty = set[w].dirty || write;
        return {true, false};
      }
      if (!set[w].valid || (oldest->valid && set[w].used < oldest->used)) oldest = &set[w];
    }
    outcome out;
    if (!allocate) return out;
    out.evicted_dirty = oldest->valid && oldest->dirty;
    *oldest = slot{sector, clock_, true, write};
    return out;
  }

  // Sectors still dirty (written back after the kernel).
  std::uint64_t dirty() const {
    return static_cast<std::uint64_t>(
        std::count_if(slots_.begin(), slots_.end(), [](slot const& s) { return s.valid && s.dirty; }));
  }

 private:
  struct slot {
    std::uint64_t sector = 0;
    std::uint64_t used = 0;
    bool valid = false;
    bool dirty = false;
  };
  // Consecutive sectors spread over the sets (a hash, as the hardware's set index is), so that a
  // stride of a power of two does not fall into one set.
  std::uint64_t set_of(std::uint64_t sector) const {
    std::uint64_t h = sector * 0x9E3779B97F4A7C15ull;
    return (h ^ (h >> 29)) % sets_;
  }

  std::uint32_t ways_;
  std::uint64_t sets_;
  std::uint64_t clock_ = 0;
  std::vector<slot> slots_;
};

}  // namespace coalesce::detail
