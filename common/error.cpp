// SPDX-License-Identifier: BSD-3-Clause
#include "common/error.hpp"

namespace finecast {

void throw_error(ErrorCode code, const std::string& message) {
  switch (code) {
    case ErrorCode::kConfig:
      throw ConfigError(message);
    case ErrorCode::kIo:
      throw IoError(message);
    case ErrorCode::kGrid:
      throw GridError(message);
    case ErrorCode::kCheckpoint:
      throw CheckpointError(message);
    case ErrorCode::kMpi:
      throw MpiError(message);
    case ErrorCode::kInternal:
      throw InternalError(message);
    case ErrorCode::kError:
      break;
  }
  throw Error(message);
}

}  // namespace finecast
