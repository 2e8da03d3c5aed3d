// The layout advisor's engine (coalesce/analysis/advisor.hpp): a counted kernel's accesses replayed warp
// by warp against each candidate's addresses, sectors counted, candidates ranked and explained.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include <coalesce/analysis/advisor.hpp>
#include <coalesce/core/error.hpp>

namespace coalesce {
namespace {

std::string fixed(double v, int digits = 2) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

std::string json_string(std::string const& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A pasted type without the namespace, for tables: split<fields<&Particle::pos>, aos, soa>.
std::string short_type(std::string type) {
  for (std::size_t at = type.find("coalesce::"); at != std::string::npos; at = type.find("coalesce::"))
    type.erase(at, 10);
  return type;
}

}  // namespace
}  // namespace coalesce

namespace coalesce::analysis {

double kernel_prediction::bytes_per_thread() const {
  return threads == 0 ? 0.0 : static_cast<double>(sectors) * sector_bytes / static_cast<double>(threads);
}

std::string describe(advice const& a) {
  std::ostringstream o;
  layout_prediction const& best = a.best();
  o << "layout advice (" << a.model.name << " model: distinct " << a.model.sector_bytes
    << "-byte sectors each warp reads and writes, kernels weighted)\n";
  // The name column is as wide as the longest name: every printed type is whole (it compiles).
  std::size_t width = 20;
  for (auto const& p : a.ranking) width = std::max(width, short_type(p.cpp_type).size());
  o << "  " << std::string(width, ' ');
  for (auto const& k : best.kernels)
    o << " " << std::string(std::max<int>(0, 12 - static_cast<int>(k.kernel.size())), ' ') << k.kernel;
  o << "   mix B/thread  x best\n";
  for (auto const& p : a.ranking) {
    std::string const name = short_type(p.cpp_type);
    o << "  " << name << std::string(width - name.size(), ' ');
    for (auto const& k : p.kernels)
      o << " " << std::string(std::max(0, 12 - static_cast<int>(fixed(k.bytes_per_thread(), 1).size())), ' ')
        << fixed(k.bytes_per_thread(), 1);
    o << "   " << std::string(std::max(0, 12 - static_cast<int>(fixed(p.weighted_bytes_per_thread, 1).size())), ' ')
      << fixed(p.weighted_bytes_per_thread, 1) << "  "
      << fixed(p.weighted_bytes_per_thread / best.weighted_bytes_per_thread) << "\n";
  }
  o << "recommended: " << best.cpp_type << "\n";
  for (auto const& r : a.reasons) o << "  - " << r << "\n";
  return o.str();
}

std::string to_json(advice const& a) {
  std::ostringstream o;
  o << "{\"model\": " << json_string(std::string(a.model.name))
    << ", \"recommended\": " << json_string(a.best().cpp_type) << ", \"reasons\": [";
  for (std::size_t r = 0; r < a.reasons.size(); ++r) o << (r ? ", " : "") << json_string(a.reasons[r]);
  o << "], \"ranking\": [";
  for (std::size_t i = 0; i < a.ranking.size(); ++i) {
    auto const& p = a.ranking[i];
    o << (i ? ", " : "") << "{\"layout\": " << json_string(p.layout) << ", \"type\": " << json_string(p.cpp_type)
      << ", \"mix_bytes_per_thread\": " << p.weighted_bytes_per_thread << ", \"kernels\": [";
    for (std::size_t k = 0; k < p.kernels.size(); ++k) {
      auto const& kp = p.kernels[k];
      o << (k ? ", " : "") << "{\"kernel\": " << json_string(kp.kernel) << ", \"sectors\": " << kp.sectors
        << ", \"l1_sectors\": " << kp.l1_sectors << ", \"requests\": " << kp.requests
        << ", \"bytes_per_thread\": " << kp.bytes_per_thread() << "}";
    }
    o << "]}";
  }
  o << "]}";
  return o.str();
}

}  // namespace coalesce::analysis

namespace coalesce::detail {

void counting_state::out_of_range(std::size_t element) const {
  throw_error("count_accesses('" + trace->kernel + "'): thread " + std::to_string(thread) + " touched element " +
              std::to_string(element) + " of a sample of " + std::to_string(elements) +
              " elements; the kernel's indices (a neighbour list, a cell list) must point into the sample: build "
              "them from the sample, or count with a sample that holds every element they name");
}

analysis::kernel_prediction predict_trace(analysis::device_model const& model, analysis::access_trace const& trace,
                                          std::vector<column_desc> const& columns) {
  analysis::kernel_prediction out;
  out.kernel = trace.kernel;
  out.threads = trace.threads;
  out.sector_bytes = model.fetch_bytes();
  auto const address = [&](analysis::field_access const& a) {
    column_desc const& c = columns[a.column];
    std::uint64_t const j = a.element;
    return c.block == 0 ? c.base + j * c.stride : c.base + (j / c.block) * c.block_stride + (j % c.block) * c.stride;
  };
  std::uint64_t const fetch = model.fetch_bytes();
  // Per warp: every sector touched (then sorted, duplicates dropped), and per k-th access the
  // lanes' addresses grouped by (column, direction): a few groups, searched linearly.
  std::vector<std::uint64_t> read_sectors, written_sectors;
  struct group {
    std::uint32_t column;
    bool write;
    std::vector<std::uint64_t> lanes;
  };
  std::vector<group> groups;
  for (std::size_t first = 0; first < trace.threads; first += model.warp_size) {
    std::size_t const last = std::min<std::size_t>(trace.threads, first + model.warp_size);
    read_sectors.clear();
    written_sectors.clear();
    std::size_t longest = 0;
    for (std::size_t i = first; i < last; ++i)
      longest = std::max(longest, trace.thread_begin[i + 1] - trace.thread_begin[i]);
    for (std::size_t k = 0; k < longest; ++k) {
      for (auto& g : groups) g.lanes.clear();
      std::size_t used = 0;
      for (std::size_t i = first; i < last; ++i) {
        std::size_t const at = trace.thread_begin[i] + k;
        if (at >= trace.thread_begin[i + 1]) continue;
        analysis::field_access const& a = trace.accesses[at];
        std::uint64_t const addr = address(a);
        std::size_t g = 0;
        while (g < used && !(groups[g].column == a.column && groups[g].write == a.write)) ++g;
        if (g == used) {
          if (used == groups.size()) groups.push_back({});
          groups[used].column = a.column;
          groups[used].write = a.write;
          ++used;
        }
        groups[g].lanes.push_back(addr);
        std::uint64_t const width = columns[a.column].bytes;
        auto& sectors = a.write ? written_sectors : read_sectors;
        for (std::uint64_t sector = addr / fetch; sector <= (addr + width - 1) / fetch; ++sector)
          sectors.push_back(sector);
      }
      for (std::size_t g = 0; g < used; ++g) {
        auto const stats =
            analysis::addresses(model, groups[g].lanes, static_cast<std::int64_t>(columns[groups[g].column].bytes));
        out.l1_sectors += model.fetch == analysis::fetch_unit::sector ? stats.sectors : stats.lines;
        out.requests += stats.requests;
      }
    }
    for (auto* sectors : {&read_sectors, &written_sectors}) {
      std::sort(sectors->begin(), sectors->end());
      out.sectors += static_cast<std::uint64_t>(std::unique(sectors->begin(), sectors->end()) - sectors->begin());
    }
  }
  return out;
}

std::string member_list(std::vector<std::size_t> const& members, std::vector<std::string> const& names) {
  std::string out = names.empty() ? "coalesce::member_indices<" : "coalesce::fields<";
  for (std::size_t k = 0; k < members.size(); ++k) {
    out += k ? ", " : "";
    out += names.empty() ? std::to_string(members[k]) : "&" + names[members[k]];
  }
  return out + ">";
}

namespace {

struct member_use {
  std::uint64_t reads = 0, writes = 0, gathered = 0;
  std::vector<std::string> kernels;  // kernels that touch it
};

std::string member_name(std::size_t m, std::vector<std::string> const& names) {
  if (names.empty()) return "member " + std::to_string(m);
  std::string const& n = names[m];
  auto const colon = n.rfind("::");
  return colon == std::string::npos ? n : n.substr(colon + 2);
}

}  // namespace

analysis::advice rank_layouts(analysis::device_model const& model, std::vector<analysis::layout_prediction> candidates,
                              std::span<analysis::kernel_use const> mix, std::vector<reflect::leaf_info> const& leaves,
                              std::vector<std::size_t> const& member_of_leaf,
                              std::vector<std::string> const& member_names) {
  analysis::advice a;
  a.model = model;
  // Fewest bytes for the mix first; within 1 %, fewer L1 sectors (fewer, wider requests) first.
  // "Within 1 %" is not transitive, so it cannot be a sort's comparator (std::stable_sort needs a
  // strict weak ordering): sort by bytes, then let a candidate move ahead of its predecessors
  // while it is within 1 % of them in bytes and has fewer L1 sectors (an insertion pass, stable).
  std::stable_sort(candidates.begin(), candidates.end(), [](auto const& x, auto const& y) {
    return x.weighted_bytes_per_thread < y.weighted_bytes_per_thread;
  });
  auto const close = [](double a, double b) { return std::abs(a - b) <= 0.01 * std::max(a, b); };
  for (std::size_t k = 1; k < candidates.size(); ++k) {
    for (std::size_t m = k; m > 0; --m) {
      auto& ahead = candidates[m - 1];
      auto& here = candidates[m];
      if (!close(ahead.weighted_bytes_per_thread, here.weighted_bytes_per_thread) ||
          !(here.weighted_l1_sectors < ahead.weighted_l1_sectors)) {
        break;
      }
      std::swap(ahead, here);
    }
  }
  a.ranking = std::move(candidates);

  // What each top-level member sees over the mix, for the reasons.
  std::size_t const members =
      member_of_leaf.empty() ? 0 : *std::max_element(member_of_leaf.begin(), member_of_leaf.end()) + 1;
  std::vector<member_use> use(members);
  for (auto const& k : mix) {
    for (std::size_t l = 0; l < leaves.size(); ++l) {
      for (std::size_t j = 0; j < leaves[l].extent; ++j) {
        auto const& c = k.trace->columns[leaves[l].first_column + j];
        member_use& m = use[member_of_leaf[l]];
        m.reads += c.reads;
        m.writes += c.writes;
        m.gathered += c.gathered_reads + c.gathered_writes;
        if (c.reads + c.writes > 0 &&
            std::find(m.kernels.begin(), m.kernels.end(), k.trace->kernel) == m.kernels.end()) {
          m.kernels.push_back(k.trace->kernel);
        }
      }
    }
  }
  auto const& best = a.best();
  for (std::size_t m = 0; m < members; ++m) {
    std::uint64_t const touched = use[m].reads + use[m].writes;
    std::string const name = member_name(m, member_names);
    if (touched == 0) {
      a.reasons.push_back(name +
                          ": touched by no kernel of the mix; any layout that keeps it out of the packed records "
                          "(a column) costs nothing");
    } else if (use[m].gathered * 10 >= touched * 5) {
      a.reasons.push_back(
          "pack " + name + ": " +
          fixed(100.0 * static_cast<double>(use[m].gathered) / static_cast<double>(touched), 0) +
          "% of its accesses are gathers through an index, and a packed record is one sector per gathered element");
    } else if (use[m].kernels.size() < mix.size()) {
      std::string list;
      for (auto const& k : use[m].kernels) list += (list.empty() ? "" : ", ") + k;
      a.reasons.push_back(name + ": touched by " + std::to_string(use[m].kernels.size()) + " of " +
                          std::to_string(mix.size()) + " kernels (" + list +
                          "); as a column it costs the others nothing");
    } else {
      a.reasons.push_back(name + ": streamed by every kernel, read " + std::to_string(use[m].reads) + " and written " +
                          std::to_string(use[m].writes) +
                          " times in the sample: columns keep each warp's accesses contiguous");
    }
  }
  if (a.ranking.size() > 1) {
    auto const& second = a.ranking[1];
    a.reasons.push_back(short_type(best.cpp_type) + " moves " + fixed(best.weighted_bytes_per_thread, 1) +
                        " bytes per thread for the mix; the next, " + short_type(second.cpp_type) + ", " +
                        fixed(second.weighted_bytes_per_thread, 1) + " (" +
                        fixed(second.weighted_bytes_per_thread / best.weighted_bytes_per_thread) + "x)");
  }
  return a;
}

}  // namespace coalesce::detail
