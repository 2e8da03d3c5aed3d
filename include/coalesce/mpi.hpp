// coalesce/mpi.hpp - particles over MPI ranks (the optional target coalesce::mpi): the decomposition
// and migration (mpi/migrate.hpp) and the ghosts of a halo (mpi/halo.hpp). See docs/distributed.md.
#pragma once
#include "mpi/halo.hpp"
#include "mpi/migrate.hpp"
