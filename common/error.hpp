// SPDX-License-Identifier: BSD-3-Clause
// finecast's one error family: a result code mirrored by one exception type per cause.
#pragma once

#include <stdexcept>
#include <string>

namespace finecast {

/// The cause of a failure; each code has its exception type below. Code that reports failures
/// for others (the HDF5 wrapper, AtomicFile) takes the code from its caller and throws through
/// throw_error(), so a checkpoint fails with a CheckpointError and a data file with an IoError.
enum class ErrorCode {
  kError,       ///< unspecified (a plain Error)
  kConfig,      ///< ConfigError
  kIo,          ///< IoError
  kGrid,        ///< GridError
  kCheckpoint,  ///< CheckpointError
  kMpi,         ///< MpiError
  kInternal,    ///< InternalError
};

/// Base of every finecast error; what() is the full user-facing message.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : Error(ErrorCode::kError, message) {}
  ErrorCode code() const noexcept { return code_; }

 protected:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}

 private:
  ErrorCode code_;
};

/// A config file, key or value is wrong (message names file:line and key path).
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message) : Error(ErrorCode::kConfig, message) {}
};

/// A file cannot be read or written, or its content is not what was expected.
class IoError : public Error {
 public:
  explicit IoError(const std::string& message) : Error(ErrorCode::kIo, message) {}
};

/// A grid is inconsistent (e.g. the refinement hierarchy has unequal patch sizes).
class GridError : public Error {
 public:
  explicit GridError(const std::string& message) : Error(ErrorCode::kGrid, message) {}
};

/// A checkpoint cannot be written, read, or does not fit the model it is loaded into.
/// what() names the file and, where it applies, the tensor or option that differs.
class CheckpointError : public Error {
 public:
  explicit CheckpointError(const std::string& message) : Error(ErrorCode::kCheckpoint, message) {}
};

/// An MPI call failed, or ranks disagree (CHECK_MPI in coupling/error.hpp raises it).
class MpiError : public Error {
 public:
  explicit MpiError(const std::string& message) : Error(ErrorCode::kMpi, message) {}
};

/// A bug in finecast: an invariant that must hold did not.
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& message) : Error(ErrorCode::kInternal, message) {}
};

/// Throws the exception type that `code` stands for, with `message` as its what().
[[noreturn]] void throw_error(ErrorCode code, const std::string& message);

}  // namespace finecast
