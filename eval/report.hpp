// SPDX-License-Identifier: BSD-3-Clause
// An EvalReport as a text table, as JSON (spectra included) and as CSV.
#pragma once

#include <string>

#include "eval/evaluation.hpp"

namespace finecast::eval {

/// A fixed-width table, one line per prediction, with a header line.
std::string format_table(const EvalReport& report);

/// The JSON document: meta, grid, per-prediction scores and spectra, the truth spectrum.
std::string to_json(const EvalReport& report);

/// CSV: a header line and one line per prediction (scores only, no spectra).
std::string to_csv(const EvalReport& report);

/// Writes text to path atomically (common/atomic_file.hpp); throws IoError naming the path.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace finecast::eval
