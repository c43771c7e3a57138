// SPDX-License-Identifier: BSD-3-Clause
// The run configuration: one YAML file parsed once into typed structs, validated up front.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace finecast::plugin {

/// Every default lives in these initialisers and nowhere else; configs/reference.yaml mirrors
/// them and a test keeps the two in agreement.
struct LogConfig {
  std::string level = "info";  ///< debug | info | warning | error
  bool all_ranks = false;      ///< training progress on every rank, not only the trainer rank
};

struct GridConfig {
  std::string type = "icon";  ///< icon | latlon
  std::string file;           ///< required: ICON grid file, or a CF NetCDF file with the lat/lon coordinates
  std::string variable;       ///< latlon: the variable whose coordinates define the grid ("" = first field)
  int coarse_level = 0;       ///< icon: patches are the cells of R2B<coarse_level>
  int block = 16;             ///< latlon: patches are block x block cells
};

struct CouplingConfig {
  std::string entry_point = "EP_ATM_WRITE_OUTPUT_BEFORE";  ///< ComIn entry point that couples
  int every = 1;                  ///< couple on every n-th call of the entry point
  std::string communicator = "host";  ///< host | plugin (the plugin must have a comm in the namelist)
  int trainer_rank = 0;           ///< rank (of the communicator) that gathers, trains and samples
  int domain = 1;                 ///< ComIn domain id (1-based)
};

struct PatchConfig {
  bool static_features = true;  ///< add sin lat, cos lat cos lon, cos lat sin lon to the context
  std::string orography;        ///< host variable with the surface height ("" = none)
};

struct BufferConfig {
  int capacity = 48;  ///< coupling steps held (FIFO)
};

struct ModelConfig {
  std::string arch = "mlp";  ///< mlp | unet (unet needs square patches: latlon blocks)
  int hidden = 256;
  int depth = 3;
  int time_embedding = 64;
  int unet_channels = 32;
  int diffusion_steps = 50;
  std::string schedule = "cosine";  ///< linear | cosine
  std::string objective = "v";      ///< v | eps (v: well-conditioned DDIM/DDPM with few steps; see docs/plugin.md)
  bool conservative = true;
};

struct TrainConfig {
  bool async = true;  ///< train on a background thread of the trainer rank
  int every = 48;     ///< coupling steps between training sessions
  int min_steps = 48; ///< buffer fill (steps) before the first session
  int epochs = 1;
  int batch_size = 16;
  double lr = 1e-3;
  double weight_decay = 1e-4;
  int warmup_steps = 100;
  int decay_steps = 10000;
  double min_lr_ratio = 0.1;
  double grad_clip = 1.0;
  double ema_decay = 0.999;
  bool mixed_precision = false;  ///< bf16 autocast (CUDA only)
  int max_bad_steps = 10;
  int threads = 0;  ///< torch threads on the trainer rank; 0 = cores / ranks on this node, min 1
};

struct SampleConfig {
  int every = 0;  ///< coupling steps between samplings; 0 = only at the end of the run
  int members = 8;
  std::string sampler = "ddim";  ///< ddpm | ddim
  int steps = 10;                ///< ddim steps (ddpm uses model.diffusion_steps)
  double eta = 0.0;              ///< ddim noise per step: 0 deterministic .. 1 ancestral
  std::string output = "finecast_output.nc";
  std::string write_back;  ///< host variable (created by the plugin) for the ensemble mean; "" = none
};

struct CheckpointConfig {
  std::string dir = "checkpoints";
  int every = 0;   ///< coupling steps between checkpoints; 0 = only at the end
  int keep = 3;
  /// checkpoint file, or directory (its newest valid checkpoint), to resume from; "auto" = the
  /// newest valid checkpoint in `dir` when there is one, else a fresh start (restart chains);
  /// "" = start fresh
  std::string resume;
  bool at_host_restart = true;  ///< also checkpoint at EP_ATM_CHECKPOINT_AFTER (the host's restart)
  bool buffer = true;  ///< also snapshot the rolling buffer so a resumed run keeps its samples
};

/// Deliberate failures, for testing how a run survives them (on_error). Never set in production.
struct TestingConfig {
  std::string fault = "none";  ///< none | gather | training | checkpoint | sampling | output | write_back
  int fault_step = 0;          ///< coupling step at which to fail; 0 = at every occasion
  int fault_rank = -1;         ///< rank of the plugin communicator that fails; -1 = the trainer rank
};

struct Config {
  std::string source;               ///< file the config came from (for messages)
  std::vector<std::string> fields;  ///< required: host variables; the first is downscaled
  std::vector<int> field_levels;    ///< per field: level of a 3-D variable (1 = model top), 0 = 2-D
  std::string device = "auto";      ///< auto | cpu | cuda | cuda:N | mps
  uint64_t seed = 42;
  std::string on_error = "abort";   ///< abort | disable
  LogConfig log;
  GridConfig grid;
  CouplingConfig coupling;
  PatchConfig patch;
  BufferConfig buffer;
  ModelConfig model;
  TrainConfig train;
  SampleConfig sample;
  CheckpointConfig checkpoint;
  TestingConfig testing;
};

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

/// Every key path the schema knows, in file order (e.g. "train.batch_size").
std::vector<std::string> config_keys();

/// Key paths that have no default and must be given.
std::vector<std::string> required_config_keys();

/// ComIn entry point names accepted by coupling.entry_point, and their ids.
int entry_point_id(const std::string& name);  ///< -1 when unknown

}  // namespace finecast::plugin
