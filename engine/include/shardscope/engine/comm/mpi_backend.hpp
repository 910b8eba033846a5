#pragma once
// The `mpi` backend: one rank per process under mpirun/srun. Hermetic: mpi.h appears only in
// engine/src/comm/mpi/mpi_backend.cpp. Every collective first all-gathers the members' small call
// descriptors on the group's communicator, so every member runs ValidateGroupCalls on the same
// data and throws the same error; then data moves as packed, chunked MPI_Ialltoallv rounds.
// Reductions accumulate the received contributions in group order with the local backend's
// code, so results are bitwise identical to it. Builds without MPI throw on construction.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "shardscope/engine/comm/communicator.hpp"

namespace shardscope::engine {

/// True when this build contains the MPI backend (SHARDSCOPE_WITH_MPI found MPI).
bool MpiBackendAvailable();

struct MpiOptions {
  /// A collective that has not completed within this time fails with Error(kTimeout) naming the
  /// call, the group and this rank. MPI cannot cancel a started collective: the job must then be
  /// aborted (MpiWorld::Abort), which is what the runner does.
  std::chrono::milliseconds timeout{30000};
  /// Most bytes one rank sends to one peer in one MPI call; larger transfers run in rounds. The
  /// backend also caps it so that every count and displacement fits MPI's int. Tests lower it to
  /// exercise the chunked path with small tensors.
  int64_t max_chunk_bytes = int64_t{1} << 30;
};

class MpiCommunicator;

/// The MPI environment of this process: MPI_Init_thread on construction unless MPI is already
/// initialized (then this object does not own it), MPI_Finalize on destruction when it owns it.
/// One per process at a time; not thread-safe. Throws Error(kInvalidInput) in a build without
/// MPI and Error(kBackend) when MPI fails to start.
class MpiWorld {
 public:
  explicit MpiWorld(const MpiOptions& options = {});
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int64_t rank() const;
  int64_t size() const;
  /// This process's communicator over MPI_COMM_WORLD (global rank = MPI world rank).
  Communicator& comm();

  /// Estimates this rank's steady_clock offset to rank 0 by ping-pong (min-RTT sample of
  /// `samples` exchanges per rank). Collective over the world. Returns the value to add to this
  /// rank's steady timestamps to get rank 0's (0 on rank 0) and the RTT of the sample used.
  struct ClockEstimate {
    int64_t offset_ns = 0;
    int64_t rtt_ns = 0;
  };
  ClockEstimate EstimateClockOffset(int samples = 50);

  /// A barrier over the world that sleeps ~1 ms between polls: for ranks that wait while one
  /// rank works alone (a benchmark's local-backend baseline) without taking its cores.
  void IdleBarrier();

  /// Writes `message` to stderr and aborts every process of the job with `exit_code`
  /// (MPI_Abort on MPI_COMM_WORLD). For failures after which ranks can no longer agree.
  [[noreturn]] void Abort(const std::string& message, int exit_code);

  /// True when the environment says this process was started by an MPI launcher.
  static bool LaunchedByMpirun();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// One rank's endpoint over MPI. Group communicators are created on first use with
/// MPI_Comm_create_group (collective over the group's members only) and cached by rank list.
/// Errors: the Communicator contract; MPI failures are Error(kBackend) naming the MPI call, the
/// collective, the group, this rank and MPI_Error_string.
class MpiCommunicator final : public Communicator {
 public:
  /// Used by MpiWorld; `world_rank` and `world_size` are MPI_COMM_WORLD's.
  MpiCommunicator(int64_t world_rank, int64_t world_size, const MpiOptions& options);
  ~MpiCommunicator() override;
  std::string_view backend_name() const override { return "mpi"; }
  /// True after a collective timed out or failed mid-flight: peers may be stuck, so the caller
  /// must abort the job instead of calling further collectives or MPI_Finalize.
  bool broken() const { return broken_; }

 protected:
  void Execute(CollectiveCall& call) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  bool broken_ = false;
};

}  // namespace shardscope::engine
