// SPDX-License-Identifier: BSD-3-Clause
// The run configuration: one YAML file parsed once into typed structs, validated up front.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "common/schema.hpp"
#include "coupling/conditioning/conditioning_settings.hpp"
#include "trainer/options.hpp"

namespace finecast::plugin {

// The grid types and residual bases are the conditioning spec's (coupling/conditioning/).
using coupling::GridType;
using coupling::IconGeometry;
using coupling::Residual;
enum class OnError { kAbort, kDisable };
enum class CommunicatorKind { kHost, kPlugin };
/// coupling.device_fields: read a GPU host's fields from their device copies.
enum class DeviceFields { kAuto, kOn, kOff };
/// Where the trainer ranks sit in the communicator: spread evenly over it (across nodes) or
/// packed next to coupling.trainer_rank.
enum class Placement { kSpread, kPacked, kExternal };
/// File format of the sampled ensembles (docs/output.md).
enum class OutputFormat { kNetcdf4, kCdf5 };
/// sample.calibration: the members' spread as sampled (none: sample.inflation) or inflated by the
/// run's own errors on the steps it sampled before (prequential).
enum class Calibration { kNone, kPrequential };
/// Points of a coupling step where testing.fault makes a run fail on purpose.
enum class FaultPoint { kNone, kGather, kTraining, kCheckpoint, kSampling, kOutput, kWriteBack };

const schema::Names<OnError>& names(OnError);
const schema::Names<OutputFormat>& names(OutputFormat);
const schema::Names<CommunicatorKind>& names(CommunicatorKind);
const schema::Names<DeviceFields>& names(DeviceFields);
const schema::Names<Placement>& names(Placement);
const schema::Names<FaultPoint>& names(FaultPoint);
const schema::Names<Calibration>& names(Calibration);

/// Every default lives in these initialisers (and in the trainer's option structs and the
/// conditioning settings) and nowhere else; every key is declared once, in the option tables of
/// plugin/config.cpp, trainer/options.cpp and coupling/conditioning/conditioning_settings.hpp;
/// configs/reference.yaml mirrors them and a test keeps the two in agreement.
struct LogConfig {
  log::Level level = log::Level::kInfo;
  bool all_ranks = false;  ///< training progress on every rank, not only the trainer rank
};

struct CouplingConfig {
  std::string entry_point = "EP_ATM_WRITE_OUTPUT_BEFORE";   ///< ComIn entry point that couples
  int every = 1;                                            ///< couple on every n-th call of the entry point
  CommunicatorKind communicator = CommunicatorKind::kHost;  ///< plugin: the plugin's comm from the namelist
  int trainer_rank = 0;  ///< rank (of the communicator) that gathers, trains and samples
  int domain = 1;        ///< ComIn domain id (1-based)
  /// auto: where the host has a device (ComIn's has_device) and this rank loads the CUDA
  /// driver, read the fields' owned cells from their device copies (COMIN_FLAG_DEVICE) instead
  /// of having ComIn copy whole fields to the host before every callback; on: that or stop; off:
  /// host access.
  DeviceFields device_fields = DeviceFields::kAuto;
};

struct BufferConfig {
  int capacity = 48;  ///< coupling steps held (FIFO)
};

/// The train section: when the plugin trains, plus every option of the trainer's optimisation
/// (trainer::TrainOptions; `threads` 0 = cores / ranks on this node, at least 1).
struct TrainConfig : trainer::TrainOptions {
  bool async = true;  ///< train on a background thread of the trainer rank
  /// Nice levels the asynchronous training thread runs below the host's thread (Linux; capped at
  /// 19; 0 = the host's priority): the host's ranks take the cores first. -1 (auto): 0 where the
  /// trainer has CPUs no host rank is bound to (free_cores), 19 where it shares the host's.
  int nice = -1;
  /// With async, where the MPI launcher binds the ranks to cores and leaves some of the node's
  /// free: the training thread and its OpenMP threads run there (shared among the node's
  /// trainers) rather than on the trainer rank's own cores, which the host's steps need.
  bool free_cores = true;
  /// "lat0,lat1,lon0,lon1": patches wholly inside (every fine cell centre, in the grid's own
  /// coordinates) are never trained on, though their coarse values stay in their neighbours'
  /// context and they are sampled ("" = none).
  std::string hold_out;
  int every = 48;      ///< coupling steps between training sessions
  int min_steps = 48;  ///< buffer fill (steps) before the first session
  int epochs = 1;
  /// Trainer ranks: the patches are split among them (each receives, buffers and samples its
  /// own), and they train data-parallel, summing gradients every step.
  int ranks = 1;
  Placement placement = Placement::kSpread;
  std::vector<int> gpu_ids;  ///< CUDA device of each trainer rank on a node ([] = 0, 1, ... in rank order)
  /// The largest fraction of its CUDA device's memory a trainer rank's LibTorch may hold (its
  /// caching allocator's per-process fraction); half by default, since a trainer in the host's
  /// job often shares its GPU with a GPU model's rank. No effect on the CPU.
  double device_memory_fraction = 0.5;
};

/// The sample section: when and where the plugin samples, plus the trainer's sampling options.
struct SampleConfig : trainer::SampleOptions {
  int every = 0;  ///< coupling steps between samplings; 0 = only at the end of the run
  /// Sample the final weights at the end of the run (unless the latest sampling used them);
  /// false: an offline evaluation that samples with finecast-downscale skips it (issue 43).
  bool at_end = true;
  std::string output = "finecast_output.nc";
  std::string write_back;  ///< host variable (created by the plugin) for the ensemble mean; "" = none
  std::string device;      ///< device that samples ("" = the training device)
  /// prequential: each sampling's inflation is sqrt(sum e2 / sum s2) over the samplings before it
  /// (the ensemble mean's squared error against the host's field, the members' variance before
  /// inflation), sample.inflation until the first; docs/plugin.md, "Calibration".
  Calibration calibration = Calibration::kNone;
  /// prequential: the weight each scored sampling's sums keep when the next is scored (a forgetting
  /// factor): 1 pools every sampling alike, 0 keeps only the latest, 0.5 halves an older one's
  /// weight at every sampling; docs/plugin.md, "Calibration".
  double calibration_decay = 0.5;
};

/// The output section: how the sampled ensembles (sample.output) are stored.
struct OutputConfig {
  OutputFormat format = OutputFormat::kNetcdf4;
  int deflate = 1;          ///< zlib level of every variable (netcdf4); 0 = off
  std::string title;        ///< global attribute title ("" = none)
  std::string source;       ///< global attribute source ("" = "finecast <version>")
  std::string institution;  ///< global attribute institution ("" = none)
};

struct CheckpointConfig {
  std::string dir = "checkpoints";
  int every = 0;  ///< coupling steps between checkpoints; 0 = only at the end
  int keep = 3;
  /// checkpoint file, or directory (its newest valid checkpoint), to resume from; "auto" = the
  /// newest usable checkpoint in `dir` not later than the host's restart time, a fresh start when
  /// `dir` holds none (restart chains), an error when it holds only damaged or later ones;
  /// "auto-or-fresh" = the same, but a fresh start with a warning instead of that error;
  /// "" = start fresh
  std::string resume;
  bool at_host_restart = true;  ///< also checkpoint at EP_ATM_CHECKPOINT_AFTER (the host's restart)
  bool buffer = true;           ///< also snapshot the rolling buffer so a resumed run keeps its samples
};

/// Deliberate failures, for testing how a run survives them (on_error). Never set in production.
struct TestingConfig {
  FaultPoint fault = FaultPoint::kNone;
  int fault_step = 0;   ///< coupling step at which to fail; 0 = at every occasion
  int fault_rank = -1;  ///< rank of the plugin communicator that fails; -1 = the trainer rank
};

/// The run configuration. Its conditioning settings (grid, fields, target, patch) are the part a
/// checkpoint's conditioning spec records (fields required: host variables, every one a coarse
/// predictor; grid.file required; target "" = the first field).
struct Config : coupling::ConditioningSettings {
  std::string source;             ///< file the config came from (for messages)
  std::vector<int> field_levels;  ///< per field: level of a 3-D variable (1 = model top), 0 = 2-D
  std::string device = "auto";    ///< auto | cpu | cuda | cuda:N | mps
  uint64_t seed = 42;
  OnError on_error = OnError::kAbort;
  LogConfig log;
  CouplingConfig coupling;
  BufferConfig buffer;
  trainer::ModelOptions model;  ///< context_size and patch_size are set by the run from the grid
  TrainConfig train;
  SampleConfig sample;
  OutputConfig output;
  CheckpointConfig checkpoint;
  TestingConfig testing;
};

/// The downscaled field: `target`, or the first of `fields`.
const std::string& target_field(const Config& config);
/// The host variables the plugin reads: `fields`, then patch.orography when set, then
/// patch.static (the static ones are sent once, or with patch.static_refresh every step).
int input_count(const Config& config);
/// The index among those inputs of the first patch.static variable (after the fields and the orography).
int first_static_input(const Config& config);
/// Its index in `fields`.
int target_index(const Config& config);

/// Splits a plugin options string ("CONFIG.yaml key.path=value ...") into words at blanks, as a
/// shell would: single or double quotes keep blanks inside a word and are removed
/// ("fields='[{name: temp, level: 90}]'" is one word). Throws ConfigError on an unterminated quote.
std::vector<std::string> split_options(const std::string& options);

/// Reads and validates a config file. `overrides` are "key.path=value" strings (the value is
/// YAML), applied before validation. Throws finecast::ConfigError with "file:line: key.path ...".
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});

/// Same from YAML text; `source` names it in messages.
Config parse_config(const std::string& yaml_text, const std::string& source,
                    const std::vector<std::string>& overrides = {});

/// The fully resolved config as YAML (every key, defaults filled in).
std::string to_yaml(const Config& config);

/// configs/reference.yaml: every key with its default (examples for the required ones) and the
/// comment of its schema row, in file order (`finecast-config --reference`).
std::string reference_yaml();
/// The keys whose values differ between `a` and `b`, in file order.
std::vector<std::string> config_differences(const Config& a, const Config& b);

/// A fingerprint of a resolved config's text (to_yaml): 16 hex digits of its 64-bit FNV-1a hash.
/// Checkpoints record it; finecast-trainer logs the one it received.
std::string config_hash(const std::string& yaml_text);

/// Every key path the schema knows, in file order (e.g. "train.batch_size").
std::vector<std::string> config_keys();

/// Key paths that have no default and must be given.
std::vector<std::string> required_config_keys();

/// ComIn entry point names accepted by coupling.entry_point, and their ids.
int entry_point_id(const std::string& name);  ///< -1 when unknown

}  // namespace finecast::plugin
