// coalesce/mpi.hpp - particles over MPI ranks (the optional target coalesce::mpi): the ranks
// (mpi/communicator.hpp), the decomposition and migration (mpi/migrate.hpp), the ghosts of a
// geometric halo (mpi/halo.hpp) and of a halo from export lists (mpi/export_halo.hpp). See
// docs/distributed.md.
#pragma once
#include "mpi/communicator.hpp"
#include "mpi/export_halo.hpp"
#include "mpi/halo.hpp"
#include "mpi/migrate.hpp"
