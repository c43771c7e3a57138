// SPDX-License-Identifier: BSD-3-Clause
// Validation of a session on its held-out (most recent) samples, and what acts on the score:
// early stopping, plateau learning-rate reduction, the kept best state (internal).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "trainer/data.hpp"
#include "trainer/downscaler_impl.hpp"

namespace finecast::trainer::validation {

/// Validation scores of the EMA weights.
struct Scores {
  double loss = SessionStats::kNone;          ///< the training loss on held-out samples (fixed noise draws)
  double crps = SessionStats::kNone;          ///< ensemble CRPS per fine value, in the data's units
  double crps_fair = SessionStats::kNone;     ///< the same ensemble's fair CRPS (unbiased in M)
  double spread_ratio = SessionStats::kNone;  ///< ensemble spread / RMSE of the ensemble mean
};

/// Scores the EMA weights on held-out clean data. The loss uses fixed noise and steps (a
/// generator seeded from train.seed), so successive sessions are compared on equal terms.
/// `note` gets the scores' line (SessionStats::notes: information, not a warning).
Scores score(Downscaler::Impl& im, const CleanData& held_out, const std::function<void(const std::string&)>& note);

/// Records a session's score: best score and step, sessions without improvement, plateau
/// reduction, early stopping, the kept best state. Returns whether the score improved. `note`
/// gets a line for a plateau reduction and for early stopping.
bool record(Downscaler::Impl& im, double score, const std::function<void(const std::string&)>& note);

/// The CRPS of an ensemble `members` [M] for the observation y (the usual estimator
/// mean|X - y| - mean|X - X'| / 2 over all pairs, computed from the sorted members).
double crps(std::vector<float> members, double y);

/// The fair CRPS (Ferro 2014): mean|X - y| - sum over pairs |X - X'| / (2 M (M - 1)), the
/// expected CRPS of the distribution the members are drawn from. The usual estimator exceeds
/// it by E|X - X'| / (2M), a penalty on spread that makes a small validation ensemble prefer
/// under-dispersed states.
double crps_fair(std::vector<float> members, double y);

/// A score as the notes print it: 5 significant digits ("%.5g").
std::string score_text(double v);

}  // namespace finecast::trainer::validation
