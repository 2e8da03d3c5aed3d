// halo_exchange: the GPU side of coalesce::mpi measured against its ceilings in the same run.
//   mpiexec -n R halo_exchange [--n-per-rank N] [--reps K] [--transport staged|device_pointers|both]
//
// Each rank owns N particles (device_vector<Particle>, soa, sorted along x as after a spatial
// reorder) in its slab of a clamped box split along x, plus a 64-byte payload per particle (soa);
// the halo (cutoff 1 in slabs 10 wide) holds about 10% of a neighbour's particles per face. Reported, median of K repetitions:
//   pack + unpack   the halo's first stage packed (gather through the send list into a message)
//                   and unpacked (into the ghost range), against cudaMemcpyAsync of the same bytes
//                   on this GPU (ratio = 2 x copy time / (pack + unpack time));
//   forward         forward(halo, payload): pack, exchange with the neighbour ranks, unpack,
//                   per transport, as GB/s of payload received per rank, against
//                   cudaMemcpyPeerAsync of the same bytes between GPU 0 and GPU 1 (rank 0, when
//                   two GPUs are visible);
//   reverse         reverse(halo, payload): ghosts' sums back to the owners;
//   MPI floor       MPI_Sendrecv of the same bytes between rank pairs, nothing packed;
//   overlap         an interior kernel over the owned particles on one stream, launched before
//                   forward(payload) on the halo's own stream: the time of both against each
//                   alone (1.0 = the exchange fully hidden behind the interior work).
// Ranks take GPU (local rank mod GPU count). GPU pointers need a CUDA-aware MPI: see
// docs/distributed.md.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <coalesce/coalesce.hpp>
#include <coalesce/mpi.hpp>

#include "common/bench_timer.hpp"
#include "neighbor_reorder/pair_force.hpp"

namespace {

using neighbor_reorder::Particle;

struct Payload {  // 64 bytes: what a large halo exchange moves (forces, velocities, extras)
  std::array<float, 16> f;
};

void check(cudaError_t status, char const* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(status));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}
#define CHECK_CUDA(call) check((call), #call)

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double max_over_ranks(double v) {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

template <class F> double time_ms(int reps, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < reps + 1; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_CUDA(cudaDeviceSynchronize());
    auto const start = std::chrono::steady_clock::now();
    f();
    CHECK_CUDA(cudaDeviceSynchronize());
    double const ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) t.push_back(ms);  // the first run warms up (allocations of message buffers)
  }
  return max_over_ranks(median(t));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::size_t n = 8u << 20;
  int reps = 20;
  std::string transports = "both";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string const a = argv[i];
    if (a == "--n-per-rank")
      n = std::stoull(argv[i + 1]);
    else if (a == "--reps")
      reps = std::stoi(argv[i + 1]);
    else if (a == "--transport")
      transports = argv[i + 1];
  }
  int gpus = 0;
  CHECK_CUDA(cudaGetDeviceCount(&gpus));
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  int local_rank = 0;
  MPI_Comm_rank(local, &local_rank);
  CHECK_CUDA(cudaSetDevice(local_rank % gpus));

  {  // everything MPI-owned (the decomposition's communicator) is gone before MPI_Finalize
    double const width = 10.0, cutoff = 1.0;
    coalesce::box const box{.lo = {0, 0, 0}, .hi = {width * size, width, width}, .edges = coalesce::boundary::open};
    coalesce::mpi::decomposition d(MPI_COMM_WORLD, box, 3, {size, 1, 1});
    auto const sub = d.subdomain();
    std::vector<Particle> records(n);
    std::mt19937 rng(11u + static_cast<unsigned>(rank));
    std::uniform_real_distribution<float> ux(static_cast<float>(sub.lo[0]), static_cast<float>(sub.hi[0]) - 1e-3f),
        u(0.0f, static_cast<float>(width) - 1e-3f);
    for (std::size_t i = 0; i < n; ++i)
      records[i] = {{ux(rng), u(rng), u(rng)}, {0, 0, 0}, 1.0f, static_cast<std::uint32_t>(rank * n + i)};
    // Sorted along x, as a simulation keeps its particles in spatial order (coalesce's reorder):
    // the ghosts near a face are then neighbours in memory too.
    std::sort(records.begin(), records.end(), [](Particle const& a, Particle const& b) { return a.pos.x < b.pos.x; });
    coalesce::device_vector<Particle> particles(records);
    // The payload says whose it is (f[0]: the particle's id mod 2^20), so the ghosts can be checked.
    std::vector<Payload> payloads(n, Payload{{{0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}});
    for (std::size_t i = 0; i < n; ++i) payloads[i].f[0] = static_cast<float>(records[i].id % (1u << 20));
    coalesce::device_vector<Payload> payload(payloads);
    auto halo = coalesce::mpi::build_halo(d, particles, &Particle::pos, cutoff);
    payload.resize(halo.owned() + halo.ghosts());
    std::size_t ghosts_from_neighbours = halo.ghosts();
    if (rank == 0) {
      std::printf(
          "halo_exchange: %d rank(s), %d GPU(s) visible, %zu particles per rank, %zu ghosts on rank 0 (%.1f%%)\n", size,
          gpus, n, halo.ghosts(), 100.0 * static_cast<double>(halo.ghosts()) / static_cast<double>(n));
    }

    // pack + unpack of the first stage that sends anything, against a copy of the same bytes.
    {
      std::size_t stage = 0;
      while (stage < halo.stages().size() && halo.stages()[stage].sent_count == 0) ++stage;
      if (stage < halo.stages().size()) {
        auto const& st = halo.stages()[stage];
        auto m = coalesce::detail::columns_of("bench", payload);
        std::size_t const count = st.sent_count, bytes = m.bytes(count);
        coalesce::detail::buffer message(coalesce::detail::memory_kind::device, bytes),
            copy(coalesce::detail::memory_kind::device, bytes);
        double const pack = bench::median_ms(
            [&] {
              coalesce::detail::pack(m, count, coalesce::detail::index_map{st.sent_indices(), 0}, message.data(),
                                     nullptr);
            },
            reps, 1);
        double const unpack = bench::median_ms(
            [&] {
              coalesce::detail::unpack(m, count, message.data(), coalesce::detail::index_map{nullptr, halo.owned()},
                                       nullptr);
            },
            reps, 1);
        double const copy_ms = bench::median_ms(
            [&] { CHECK_CUDA(cudaMemcpyAsync(copy.data(), message.data(), bytes, cudaMemcpyDeviceToDevice)); }, reps,
            1);
        double const ratio = 2 * copy_ms / (pack + unpack);
        double worst = 0;
        double const mine = -ratio;
        MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (rank == 0) {
          std::printf(
              "pack %.3f ms + unpack %.3f ms of %zu x 64 B (%.1f MB): %.2f x copy bandwidth (copy %.3f ms, %.0f GB/s); "
              "lowest over ranks %.2f\n",
              pack, unpack, count, bytes / 1e6, ratio, copy_ms, bytes / copy_ms / 1e6, -worst);
        }
      }
    }

    // The ceiling between GPUs: cudaMemcpyPeerAsync of one neighbour's ghost payload.
    double peer_gbs = 0;
    std::size_t const exchange_bytes = ghosts_from_neighbours * sizeof(Payload);
    if (rank == 0 && gpus >= 2 && exchange_bytes > 0) {
      int can = 0;
      CHECK_CUDA(cudaDeviceCanAccessPeer(&can, 0, 1));
      if (can) {
        cudaDeviceEnablePeerAccess(1, 0);
        (void)cudaGetLastError();
        void *src = nullptr, *dst = nullptr;
        CHECK_CUDA(cudaMalloc(&src, exchange_bytes));
        CHECK_CUDA(cudaSetDevice(1));
        CHECK_CUDA(cudaMalloc(&dst, exchange_bytes));
        CHECK_CUDA(cudaSetDevice(0));
        double const ms =
            bench::median_ms([&] { CHECK_CUDA(cudaMemcpyPeerAsync(dst, 1, src, 0, exchange_bytes)); }, reps, 1);
        peer_gbs = exchange_bytes / ms / 1e6;
        std::printf("cudaMemcpyPeerAsync GPU 0 -> GPU 1, %.1f MB: %.3f ms, %.0f GB/s (the ceiling)\n",
                    exchange_bytes / 1e6, ms, peer_gbs);
        CHECK_CUDA(cudaSetDevice(1));
        CHECK_CUDA(cudaFree(dst));
        CHECK_CUDA(cudaSetDevice(0));
        CHECK_CUDA(cudaFree(src));
      }
    }
    MPI_Bcast(&peer_gbs, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);

    for (auto how : {coalesce::mpi::transport::staged, coalesce::mpi::transport::device_pointers}) {
      bool const pointers = how == coalesce::mpi::transport::device_pointers;
      if (transports != "both" && transports != (pointers ? "device_pointers" : "staged")) continue;
      halo.set_transport(how);
      double const fwd = time_ms(reps, [&] { coalesce::mpi::forward(halo, payload); });
      {  // every ghost got its owner's payload
        std::vector<Payload> got(payload.size());
        std::vector<Particle> ghosts(particles.size());
        payload.copy_to(got);
        particles.copy_to(ghosts);
        std::size_t wrong = 0;
        for (std::size_t g = halo.owned(); g < got.size(); ++g) {
          wrong += got[g].f[0] != static_cast<float>(ghosts[g].id % (1u << 20)) || got[g].f[15] != 16.0f;
        }
        unsigned long long wrong_anywhere = wrong;
        MPI_Allreduce(MPI_IN_PLACE, &wrong_anywhere, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (wrong_anywhere != 0) {
          if (rank == 0)
            std::printf("WRONG: %llu ghosts did not get their owner's payload (%s)\n", wrong_anywhere,
                        pointers ? "device_pointers" : "staged");
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
      }
      double const pos = time_ms(reps, [&] { coalesce::mpi::forward(halo, particles, &Particle::pos); });
      coalesce::device_vector<Payload> sums = payload;  // reverse adds into the owners: not the checked payload
      double const rev = time_ms(reps, [&] { coalesce::mpi::reverse(halo, sums); });
      double const gbs = exchange_bytes / fwd / 1e6;
      // The MPI floor: the same bytes exchanged by MPI_Sendrecv between neighbouring ranks, from
      // and into buffers of the transport's kind (GPU memory for GPU pointers, pinned host memory
      // for staged), nothing packed.
      double mpi_ms = 0;
      unsigned long long floor_bytes = exchange_bytes;  // the same count on both sides of a pair
      MPI_Allreduce(MPI_IN_PLACE, &floor_bytes, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
      if (size > 1 && floor_bytes > 0) {
        void *out = nullptr, *in = nullptr;
        if (pointers) {
          CHECK_CUDA(cudaMalloc(&out, floor_bytes));
          CHECK_CUDA(cudaMalloc(&in, floor_bytes));
        } else {
          CHECK_CUDA(cudaMallocHost(&out, floor_bytes));
          CHECK_CUDA(cudaMallocHost(&in, floor_bytes));
        }
        int const partner = rank ^ 1;
        bool const paired = partner < size;
        mpi_ms = time_ms(reps, [&] {
          if (paired) {
            MPI_Sendrecv(out, static_cast<int>(floor_bytes), MPI_BYTE, partner, 7, in, static_cast<int>(floor_bytes),
                         MPI_BYTE, partner, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          }
        });
        if (pointers) {
          CHECK_CUDA(cudaFree(out));
          CHECK_CUDA(cudaFree(in));
        } else {
          CHECK_CUDA(cudaFreeHost(out));
          CHECK_CUDA(cudaFreeHost(in));
        }
      }
      // Overlap: the interior work (a pass over every owned particle's payload) on `compute`,
      // the halo on its own stream, as a simulation overlaps interior forces with the exchange.
      cudaStream_t compute = nullptr, exchange = nullptr;
      CHECK_CUDA(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
      CHECK_CUDA(cudaStreamCreateWithFlags(&exchange, cudaStreamNonBlocking));
      halo.set_stream(exchange);
      auto values = payload.view();
      std::size_t const owned = halo.owned();
      auto interior = [&] {
        for (int pass = 0; pass < 8; ++pass) {
          coalesce::for_each_index(coalesce::device{compute}, owned, [=] COALESCE_HOST_DEVICE(std::size_t i) {
            auto r = values[i];
            float const x = r[&Payload::f][0];
            r[&Payload::f][1] = x * 0.5f + r[&Payload::f][2];
          });
        }
      };
      double const alone = time_ms(reps, interior);
      double const both = time_ms(reps, [&] {
        interior();
        coalesce::mpi::forward(halo, payload);
      });
      halo.set_stream(coalesce::stream{});
      CHECK_CUDA(cudaStreamDestroy(compute));
      CHECK_CUDA(cudaStreamDestroy(exchange));
      if (rank == 0) {
        std::printf(
            "%-15s forward(payload) %.3f ms (%.1f MB in, %.0f GB/s%s), forward(positions) %.3f ms, reverse(payload) "
            "%.3f ms\n",
            pointers ? "device_pointers" : "staged", fwd, exchange_bytes / 1e6, gbs,
            peer_gbs > 0 ? (", " + std::to_string(gbs / peer_gbs).substr(0, 4) + " x peer copy").c_str() : "", pos,
            rev);
        if (mpi_ms > 0) {
          std::printf(
              "%-15s MPI_Sendrecv of the same bytes, nothing packed: %.3f ms (%.0f GB/s): forward is %.2f x the MPI "
              "floor\n",
              pointers ? "device_pointers" : "staged", mpi_ms, floor_bytes / mpi_ms / 1e6, fwd / mpi_ms);
        }
        std::printf(
            "%-15s overlap: interior %.3f ms, forward %.3f ms, both %.3f ms: %.2f x the longer alone (1.00: hidden)\n",
            pointers ? "device_pointers" : "staged", alone, fwd, both, both / std::max(alone, fwd));
      }
    }
  }
  MPI_Comm_free(&local);
  MPI_Finalize();
  return 0;
}
