// Where a library call's time goes, measured from outside it: this header defines MPI_Allgather,
// MPI_Alltoall, MPI_Isend, MPI_Irecv and MPI_Waitall (MPI's profiling interface, forwarding to
// PMPI_*) so that they stamp the clock while the probe is armed; a benchmark then splits a call
// at its first collective and its messages. The definitions take the place of the MPI library's
// for every caller in the program, libcoalesce_mpi included, so include this header in exactly
// one file of a program (the migration benchmarks' main).
#pragma once
#include <mpi.h>

#include <chrono>

namespace mpi_probe {
using steady = std::chrono::steady_clock;
inline bool armed = false;
inline bool seen_allgather = false, seen_alltoall = false, seen_message = false;
// The first MPI_Allgather's and MPI_Alltoall's begin and end, the first Isend or Irecv, the last
// Waitall's end, of the armed call.
inline steady::time_point allgather_begin, allgather_end, alltoall_begin, alltoall_end, message_begin, waitall_end;

inline void arm() {
  armed = true;
  seen_allgather = seen_alltoall = seen_message = false;
}
inline void disarm() { armed = false; }
inline void message() {
  if (armed && !seen_message) message_begin = steady::now(), seen_message = true;
}
}  // namespace mpi_probe

extern "C" int MPI_Allgather(void const* send, int send_count, MPI_Datatype send_type, void* received,
                             int received_count, MPI_Datatype received_type, MPI_Comm comm) {
  bool const first = mpi_probe::armed && !mpi_probe::seen_allgather;
  if (first) mpi_probe::allgather_begin = mpi_probe::steady::now();
  int const status = PMPI_Allgather(send, send_count, send_type, received, received_count, received_type, comm);
  if (first) mpi_probe::allgather_end = mpi_probe::steady::now(), mpi_probe::seen_allgather = true;
  return status;
}
extern "C" int MPI_Alltoall(void const* send, int send_count, MPI_Datatype send_type, void* received,
                            int received_count, MPI_Datatype received_type, MPI_Comm comm) {
  bool const first = mpi_probe::armed && !mpi_probe::seen_alltoall;
  if (first) mpi_probe::alltoall_begin = mpi_probe::steady::now();
  int const status = PMPI_Alltoall(send, send_count, send_type, received, received_count, received_type, comm);
  if (first) mpi_probe::alltoall_end = mpi_probe::steady::now(), mpi_probe::seen_alltoall = true;
  return status;
}
extern "C" int MPI_Isend(void const* data, int count, MPI_Datatype type, int to, int tag, MPI_Comm comm,
                         MPI_Request* request) {
  mpi_probe::message();
  return PMPI_Isend(data, count, type, to, tag, comm, request);
}
extern "C" int MPI_Irecv(void* data, int count, MPI_Datatype type, int from, int tag, MPI_Comm comm,
                         MPI_Request* request) {
  mpi_probe::message();
  return PMPI_Irecv(data, count, type, from, tag, comm, request);
}
extern "C" int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  int const status = PMPI_Waitall(count, requests, statuses);
  if (mpi_probe::armed) mpi_probe::waitall_end = mpi_probe::steady::now();
  return status;
}
