// A set-associative, least-recently-used cache of sectors: the advisor's model of one SM's L1
// and of the shared L2 (src/analysis/advisor.cpp). Sectors, not lines, are what the L1 asks L2
// for and what L2 fetches from DRAM on sectored GPUs, so the unit here is the sector.
//
// The replay looks a sector up here hundreds of millions of times for one advice (three lookups
// per L1 miss in a random-order gather), so a lookup is kept to a scan of one host cache line:
// the low 32 bits of each way's tag, compared four at a time, the full tag read only on a match;
// a set of up to 16 ways keeps its recency order as 16 nibbles of one word (way at rank 0 = most
// recently used), so a hit moves a nibble and a miss takes the last one (larger sets keep a clock
// per way and search for the oldest on a miss); the set index takes a multiply, not a division. A slot may
// carry a Note of the caller's (the L1 keeps there which read sent the sector to L2, and when),
// reset when the slot is taken for another sector.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace coalesce::detail {

__extension__ typedef unsigned __int128 cache_wide_int;  // the set index's 64 x 64 -> 128-bit product

struct no_note {};

template <class Note = no_note> class sector_cache {
 public:
  // A cache of `bytes` (at least one set of `ways` sectors) of `sector_bytes`-byte sectors.
  sector_cache(std::uint64_t bytes, std::uint32_t sector_bytes, std::uint32_t ways)
      : ways_(ways),
        stride_((ways + 3) / 4 * 4),
        sets_(std::max<std::uint64_t>(1, bytes / sector_bytes / ways)),
        reciprocal_(~std::uint64_t{0} / sets_),
        nibbles_(ways <= 16) {
    low_.assign(sets_ * stride_, 0);
    tags_.assign(sets_ * ways_, 0);
    if (nibbles_) {
      order_.assign(sets_, identity_order);
    } else {
      used_.assign(sets_ * ways_, 0);
    }
    dirty_.assign(sets_ * ways_, 0);
    notes_.assign(sets_ * ways_, Note{});
  }

  // Empty again, as newly made (no allocation).
  void reset() {
    std::fill(low_.begin(), low_.end(), 0);
    std::fill(tags_.begin(), tags_.end(), 0);
    std::fill(order_.begin(), order_.end(), identity_order);
    std::fill(used_.begin(), used_.end(), 0);  // empty ways are the least recently used
    std::fill(dirty_.begin(), dirty_.end(), 0);
    clock_ = 0;
  }

  struct outcome {
    bool hit = false;
    bool evicted_dirty = false;  // the sector made room for had been written (a write-back)
    Note* note = nullptr;        // the slot's note (null: a miss left out of the cache)
  };

  // Looks `sector` up; on a miss it takes the least recently used way of its set (an empty one
  // first). `write` marks it dirty (a write-back cache: L2); `allocate` false leaves a miss out
  // of the cache.
  outcome access(std::uint64_t sector, bool write = false, bool allocate = true) {
    std::uint64_t const set = set_of(sector);
    std::uint64_t const first = set * ways_;
    std::uint64_t const tag = sector + 1;  // 0: an empty slot
    std::uint32_t const w = find(&low_[set * stride_], static_cast<std::uint32_t>(tag), &tags_[first], tag);
    if (w != ways_) {
      touch(set, first, w);
      dirty_[first + w] |= static_cast<std::uint8_t>(write);
      return {true, false, &notes_[first + w]};
    }
    outcome out;
    if (!allocate) return out;
    // The least recently used way. Empty ways are older than any used one (never touched), so a
    // set fills before it evicts; which empty way is taken changes nothing.
    std::uint32_t const victim = least_recent(set, first);
    touch(set, first, victim);
    out.evicted_dirty = tags_[first + victim] != 0 && dirty_[first + victim] != 0;
    low_[set * stride_ + victim] = static_cast<std::uint32_t>(tag);
    tags_[first + victim] = tag;
    dirty_[first + victim] = static_cast<std::uint8_t>(write);
    notes_[first + victim] = Note{};
    out.note = &notes_[first + victim];
    return out;
  }

  // Sectors still dirty (written back after the kernel).
  std::uint64_t dirty() const {
    std::uint64_t n = 0;
    for (std::size_t s = 0; s < tags_.size(); ++s) n += tags_[s] != 0 && dirty_[s] != 0;
    return n;
  }

 private:
  // The way holding `tag` (ways_ if none): low 32 bits first, the full tag on a match.
  std::uint32_t find(std::uint32_t const* low, std::uint32_t low_tag, std::uint64_t const* tags,
                     std::uint64_t tag) const {
#if defined(__SSE2__)
    __m128i const wanted = _mm_set1_epi32(static_cast<int>(low_tag));
    for (std::uint32_t base = 0; base < ways_; base += 4) {
      __m128i const four = _mm_loadu_si128(reinterpret_cast<__m128i const*>(low + base));
      auto matches = static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(four, wanted))));
      while (matches != 0) {
        std::uint32_t const w = base + static_cast<std::uint32_t>(std::countr_zero(matches));
        matches &= matches - 1;
        if (w < ways_ && tags[w] == tag) return w;
      }
    }
#else
    for (std::uint32_t w = 0; w < ways_; ++w) {
      if (low[w] == low_tag && tags[w] == tag) return w;
    }
#endif
    return ways_;
  }

  // Recency: way w of `set` becomes the most recently used.
  void touch(std::uint64_t set, std::uint64_t first, std::uint32_t w) {
    if (!nibbles_) {
      used_[first + w] = ++clock_;  // unique and increasing: the order of use (only larger sets)
      return;
    }
    std::uint64_t const order = order_[set];
    // The rank of w: the lowest nibble equal to w (the zero-nibble test on order ^ w's nibbles;
    // a borrow can only mark nibbles above the first true zero).
    std::uint64_t const x = order ^ (std::uint64_t{w} * 0x1111111111111111ull);
    std::uint64_t const zero = (x - 0x1111111111111111ull) & ~x & 0x8888888888888888ull;
    auto const rank = static_cast<unsigned>(std::countr_zero(zero)) / 4;
    std::uint64_t const below = rank == 0 ? 0 : order & (~std::uint64_t{0} >> (64 - 4 * rank));
    std::uint64_t const above = rank == 15 ? 0 : order & (~std::uint64_t{0} << (4 * (rank + 1)));
    order_[set] = above | (below << 4) | w;
  }
  std::uint32_t least_recent(std::uint64_t set, std::uint64_t first) const {
    if (nibbles_) return static_cast<std::uint32_t>((order_[set] >> (4 * (ways_ - 1))) & 0xf);
    std::uint64_t const* const used = &used_[first];
    std::uint32_t victim = 0;
    std::uint64_t oldest = used[0];
    for (std::uint32_t k = 1; k < ways_; ++k) {  // clocks are unique; empty ways have 0
      bool const older = used[k] < oldest;
      oldest = older ? used[k] : oldest;
      victim = older ? k : victim;
    }
    return victim;
  }

  // Consecutive sectors spread over the sets (a hash, as the hardware's set index is), so that a
  // stride of a power of two does not fall into one set. h % sets_, by a multiply by the
  // reciprocal and at most two corrections (the estimate is at most 2 below the quotient).
  std::uint64_t set_of(std::uint64_t sector) const {
    std::uint64_t h = sector * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    auto const estimate = static_cast<std::uint64_t>((static_cast<cache_wide_int>(h) * reciprocal_) >> 64);
    std::uint64_t r = h - estimate * sets_;
    while (r >= sets_) r -= sets_;
    return r;
  }

  std::uint32_t ways_;
  std::uint32_t stride_;  // ways rounded up to 4: a set's low tags, padded for four-at-a-time compares
  std::uint64_t sets_;
  std::uint64_t reciprocal_;  // floor((2^64 - 1) / sets_)
  bool nibbles_;              // up to 16 ways: recency as nibbles (order_), else clocks (used_)
  static constexpr std::uint64_t identity_order = 0xfedcba9876543210ull;  // way r at rank r
  std::uint64_t clock_ = 0;
  std::vector<std::uint32_t> low_;
  std::vector<std::uint64_t> tags_;
  std::vector<std::uint64_t> order_;
  std::vector<std::uint64_t> used_;
  std::vector<std::uint8_t> dirty_;
  std::vector<Note> notes_;
};

}  // namespace coalesce::detail
