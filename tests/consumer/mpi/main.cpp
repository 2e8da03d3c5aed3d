// Migrates ten particles on one rank through the installed coalesce::mpi.
#include <coalesce/mpi.hpp>

#include <cstdio>
#include <vector>

namespace user {
struct vec3 {
  float x, y, z;
};
struct Particle {
  vec3 pos;
  float mass;
};
}  // namespace user

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    coalesce::mpi::decomposition const d(MPI_COMM_WORLD, coalesce::box{.lo = {0, 0, 0}, .hi = {4, 4, 4}});
    coalesce::host_vector<user::Particle> particles(std::vector<user::Particle>(10, user::Particle{{1, 2, 3}, 1}));
    auto const moved = coalesce::mpi::migrate(d, particles, &user::Particle::pos);
    std::printf("mpi consumer: kept %zu of %zu\n", moved.kept, particles.size());
    status = moved.kept == 10 ? 0 : 1;
  }
  MPI_Finalize();
  return status;
}
