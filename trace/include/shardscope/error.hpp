#pragma once
// The one error type of shardscope's module APIs (docs/contributing.md rule 10). Lives in the trace
// library because trace is the bottom layer that every other module already links.

#include <stdexcept>
#include <string>

namespace shardscope {

/// What kind of failure an Error reports; the CLI maps it to an exit code (kInvalidInput and
/// kUnsupported -> 2, kBackend and kInternal and kTimeout -> 3).
enum class ErrorCode {
  kInvalidInput,  ///< a malformed or out-of-range user input (flag, placement, file, trace line)
  kUnsupported,   ///< a well-formed request that shardscope (like PyTorch) does not support
  kBackend,       ///< a communication backend failed (MPI, NCCL, a missing rank)
  kTimeout,       ///< a collective was not joined by every rank within the watchdog timeout
  kInternal,      ///< a broken invariant inside shardscope: a bug, please report it
};

/// Exception carrying a code and a one-line message that names the bad token and where it was.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

/// Convenience constructors.
inline Error InvalidInput(const std::string& message) { return Error(ErrorCode::kInvalidInput, message); }
inline Error Unsupported(const std::string& message) { return Error(ErrorCode::kUnsupported, message); }
inline Error InternalError(const std::string& message) { return Error(ErrorCode::kInternal, message); }

/// Exit code for the CLI (docs/contributing.md rule 11).
inline int ExitCodeFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidInput:
    case ErrorCode::kUnsupported:
      return 2;
    default:
      return 3;
  }
}

}  // namespace shardscope
