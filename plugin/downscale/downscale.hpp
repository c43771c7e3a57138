// SPDX-License-Identifier: BSD-3-Clause
// finecast-downscale's work: a checkpoint applied to the coarse (or coarsened fine) fields of a
// NetCDF file, written as the plugin's ensemble output. No MPI.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "coupling/conditioning/conditioning_spec.hpp"
#include "trainer/options.hpp"

namespace finecast::plugin {

/// Every option of finecast-downscale; defaults are the plugin config's.
struct DownscaleOptions {
  std::string checkpoint;  ///< checkpoint file, or directory (its newest valid checkpoint)
  /// More checkpoints (files or directories) whose members are pooled with the first's: each of
  /// the 1 + pool.size() draws members / (1 + pool.size()) members, the k-th (0 = checkpoint)
  /// with the sampling seed seed + k, in that order along the member dimension (issue 26).
  std::vector<std::string> pool;
  std::string input;              ///< NetCDF file with the fields (fine or coarse)
  std::vector<std::string> vars;  ///< the fields the model was trained on; the first is downscaled
  std::string output = "finecast_downscaled.nc";
  int members = 8;
  std::string device = "auto";      ///< auto | cpu | cuda | cuda:N | mps
  std::string grid;                 ///< ICON grid file, or lat-lon file of the fine grid ("" = the input)
  std::string grid_var;             ///< lat-lon: variable whose coordinates define the fine grid
  std::string geometry;             ///< ICON: file | uniform ("" = the checkpoint's grid.geometry)
  int block = 0;                    ///< lat-lon block; 0 = sqrt(patch size of the checkpoint)
  int coarse_level = -1;            ///< ICON coarse level; -1 = from the checkpoint's patch size
  std::string input_kind = "auto";  ///< auto (by size) | fine | coarse
  // The sampling options given (trainer/sample_flags.hpp); each one unset takes the value the
  // checkpoint's run sampled with (its /sampling group, or sample.* of its /metadata
  // config_resolved for checkpoints written before the group), else the plugin's default. So a
  // checkpoint samples as the plugin that wrote it did, its fitted sample.inflation included; with
  // several --checkpoint, each takes its own.
  trainer::SampleOverrides sample;
  std::vector<std::string> times;  ///< steps to downscale (0-based index or ISO date); empty = all
  unsigned long long seed = 42;
  int threads = 0;  ///< torch threads; 0 = LibTorch's default
  /// FILE[:VAR]: the surface height on the fine grid, for checkpoints trained with an orography
  /// context (patch.orography); VAR defaults to the host field the checkpoint names.
  std::string orography;
  /// FILE:VAR, one per static covariate of a checkpoint trained with patch.static, in its order.
  std::vector<std::string> statics;
  /// Sample only the patches finecast-eval --hold-out scores (issue 43): a box lat0,lat1,lon0,lon1
  /// (patches wholly inside, in the grid's own coordinates) or FILE:VAR, a mask on the fine grid
  /// (patches with a finite non-zero cell); the rule of train.hold_out. "" = every patch.
  std::string hold_out;
  /// Sample only the patches wholly inside this box (finecast-eval --region); "" = every patch.
  /// With hold_out: the patches both select.
  std::string region;
  /// patch.global_blend W for every checkpoint (unset: each one's own, as its run sampled): the
  /// members' mean moved to the global regression + W (mean - it); W < 1 needs a checkpoint that
  /// recorded the global regression (patch.global_regression).
  std::optional<double> global_blend;
  /// patch.spread_regression k for every checkpoint (unset: each one's own): each patch's members
  /// spread by r2^k, r2 the global regression's mean square term; k > 0 needs that regression.
  std::optional<double> spread_regression;
};

/// What run_downscale did.
struct DownscaleResult {
  std::string checkpoint;  ///< the checkpoint file used
  std::string device;      ///< LibTorch device, e.g. "cpu"
  bool coarse_input = false;
  bool orography = false;        ///< the context holds the coarse orography
  bool static_features = false;  ///< the context holds the position features
  int context_rings = 0;         ///< patch.context_rings of the checkpoint
  bool interp_base = false;      ///< patch.residual: interp
  int n_static = 0;              ///< static covariates read (--static)
  std::string sampling;          ///< the first checkpoint's sampling options, as logged ("ddpm, inflation 2")
  long long n_coarse = 0, patch_size = 0, steps_written = 0;
  long long n_sampled = 0;                ///< patches sampled per step: n_coarse, or those --hold-out / --region select
  std::vector<unsigned long long> seeds;  ///< the sampling seed of each --checkpoint (--seed + k)
};

/// Loads the checkpoint (and those of `pool`), builds the patches exactly as the plugin does (coarsening a fine input
/// first, and the fine orography when the checkpoint's context has one), samples `members`
/// members per step and writes `output` (EnsembleWriter layout, with "<var>_coarse"). Throws
/// finecast::ConfigError / GridError / IoError or trainer::CheckpointError with a message naming
/// the file, option and the sizes that differ, and ConfigError naming --orography when the
/// checkpoint needs an orography that was not given (or was given to one that has none).
DownscaleResult run_downscale(const DownscaleOptions& options);

/// The conditioning spec checkpoint file `checkpoint` recorded, of any version (its /conditioning
/// group, or the text of its /metadata before it: coupling::read_spec).
coupling::StoredSpec read_checkpoint_spec(const std::string& checkpoint);

}  // namespace finecast::plugin
