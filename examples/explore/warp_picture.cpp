#include "warp_picture.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

namespace explore {

namespace ca = coalesce::analysis;

std::string warp_picture(ca::device_model const& model, std::vector<std::uint64_t> const& lane_addresses,
                         std::vector<bool> const& active, std::uint64_t width, std::size_t max_rows) {
  std::uint64_t const unit = model.fetch_bytes();
  char const* const unit_name = model.fetch == ca::fetch_unit::sector ? "sector" : "line";
  std::size_t const lanes = lane_addresses.size();

  // Every unit any active lane touches (a lane of `width` bytes may touch several).
  std::set<std::uint64_t> units;
  for (std::size_t k = 0; k < lanes; ++k) {
    if (!active[k]) continue;
    std::uint64_t const first = lane_addresses[k] / unit, last = (lane_addresses[k] + width - 1) / unit;
    for (std::uint64_t u = first; u <= last; ++u) units.insert(u);  // at most 64 lanes x 4097 sectors
  }

  std::string out;
  char buf[160];
  std::string tens, ones, state;
  for (std::size_t k = 0; k < lanes; ++k) {
    tens += k % 10 == 0 ? static_cast<char>('0' + (k / 10) % 10) : ' ';
    ones += static_cast<char>('0' + k % 10);
    state += active[k] ? ' ' : 'x';
  }
  std::snprintf(buf, sizeof buf, "%-20s %s\n", "lane", tens.c_str());
  out += buf;
  std::snprintf(buf, sizeof buf, "%-20s %s   bytes of the %s used (%s)\n", "", ones.c_str(), unit_name,
                unit == 32 ? "1 char = 1 B" : ("1 char = " + std::to_string(unit / 32) + " B").c_str());
  out += buf;
  if (state.find('x') != std::string::npos) {
    std::snprintf(buf, sizeof buf, "%-20s %s   (x: inactive lane)\n", "", state.c_str());
    out += buf;
  }

  std::size_t row = 0;
  std::uint64_t previous = 0;
  for (std::uint64_t u : units) {
    if (row == max_rows) {
      out += "  ... more " + std::string(unit_name) + "s not drawn\n";
      break;
    }
    if (row != 0 && u > previous + 1) {
      out += "  ~ " + std::to_string(u - previous - 1) + " " + unit_name + (u - previous - 1 == 1 ? "" : "s") +
             " not touched ~\n";
    }
    std::uint64_t const lo = u * unit, hi = lo + unit;  // [lo, hi)
    std::string marks;
    for (std::size_t k = 0; k < lanes; ++k) {
      bool const hit = active[k] && lane_addresses[k] < hi && lane_addresses[k] + width > lo;
      marks += hit ? '#' : '.';
    }
    // Which slices of the unit are read: 32 slices of unit/32 bytes.
    std::uint64_t const slice = unit / 32;
    std::string used;
    std::uint64_t used_bytes = 0;
    for (std::uint64_t s = 0; s < 32; ++s) {
      bool any = false;
      for (std::uint64_t b = lo + s * slice; b < lo + (s + 1) * slice; ++b) {
        bool byte_used = false;
        for (std::size_t k = 0; k < lanes && !byte_used; ++k) {
          byte_used = active[k] && b >= lane_addresses[k] && b < lane_addresses[k] + width;
        }
        used_bytes += byte_used ? 1 : 0;
        any = any || byte_used;
      }
      used += any ? '#' : '.';
    }
    std::snprintf(buf, sizeof buf, "%-6s 0x%-11llx %s   %s %4llu/%llu B\n", unit_name,
                  static_cast<unsigned long long>(lo), marks.c_str(), used.c_str(),
                  static_cast<unsigned long long>(used_bytes), static_cast<unsigned long long>(unit));
    out += buf;
    previous = u;
    ++row;
  }
  return out;
}

}  // namespace explore
