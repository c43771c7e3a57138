// SPDX-License-Identifier: BSD-3-Clause
// finecast-export on ICON checkpoints: the grid tables it writes into the module (patch map, context
// stencil, interpolant, regression, covariate normalisation) let the Python example of
// docs/export.md, run as written by Debian's Python, reproduce finecast-downscale's ensemble of a
// real R2B4 output file without finecast: for a model with the default context and for one with
// every context option. And the grid flags' errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "coupling/conditioning/conditioning_spec.hpp"
#include "tests/plugin/replay_test_util.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/downscaler.hpp"

namespace fc = finecast::coupling;
namespace ft = finecast::trainer;
namespace ftr = finecast::testing_replay;

namespace {

const std::string kData = "/usr/share/ncarg/data/nug/atm_phy_mag0004_1985.nc";

/// One model: trained by a replay of the data file's step on 2 ranks, applied by
/// finecast-downscale (4 members, seed 42) and exported; then the docs' Python block in its folder.
struct ExportRun {
  std::string dir;
  ftr::CommandResult surface, train, downscale, exported, python;
};

class ExportIcon : public ::testing::Test {
 protected:
  static bool available() {
    return ftr::exists(ftr::kIconGrid) && ftr::exists(kData) && ftr::exists(ftr::kEtopo20) &&
           std::system("/usr/bin/python3 -c 'import netCDF4, numpy, torch' > /dev/null 2>&1") == 0;
  }
  static void SetUpTestSuite() {
    if (available()) dir_ = new ftr::ScratchDir("export_icon");
  }
  static void TearDownTestSuite() {
    delete simple_;
    delete full_;
    delete dir_;
    simple_ = full_ = nullptr;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!available())
      GTEST_SKIP() << "needs " << ftr::kIconGrid << ", " << kData << " (libncarg-data), " << ftr::kEtopo20
                   << " (ferret-datasets) and /usr/bin/python3 with netCDF4, numpy and torch";
  }

  /// The plugin's defaults: a context of 7 values, the residual from the patch mean, an MLP, DDIM 10.
  static const ExportRun& simple() {
    if (!simple_)
      simple_ = new ExportRun(run_case("simple", "ts",
                                       "model: {hidden: 32, depth: 2, time_embedding: 16, diffusion_steps: 10}\n", "",
                                       "", "--var ts"));
    return *simple_;
  }
  /// Two fields, 2 rings, relative values, the orography, 2 covariates, the regression base with
  /// local slopes, the uniform geometry, the graph denoiser, DDPM with an inflation.
  static const ExportRun& full() {
    if (!full_)
      full_ = new ExportRun(
          run_case("full", "ts, rsns",
                   "patch: {context_rings: 2, relative_context: true, orography: topography_c, static: [topography_c, "
                   "fr_land], residual: regression, local_slopes: 1, local_slope_static: [topography_c]}\n"
                   "model: {arch: graph, unet_channels: 8, time_embedding: 16, diffusion_steps: 10}\n",
                   "sampler: ddpm, inflation: 1.5, ",
                   "  static: [{file: surface.nc, var: topography_c, name: topography_c}, "
                   "{file: surface.nc, var: fr_land, name: fr_land}]\n",
                   "--var ts --var rsns --orography surface.nc:topography_c --static surface.nc:topography_c "
                   "--static surface.nc:fr_land",
                   " --geometry uniform"));
    return *full_;
  }

  /// Trains (a replay of the data file's step, twice, on 2 ranks), downscales, exports and runs the
  /// docs' block in dir/name; with `statics` (the replay's input.static), the fine surface height
  /// and land fraction on the data's (uniform) geometry first, as surface.nc.
  static ExportRun run_case(const std::string& name, const std::string& fields, const std::string& config,
                            const std::string& sample, const std::string& statics, const std::string& downscale_flags,
                            const std::string& replay_flags = "") {
    ExportRun c;
    c.dir = dir_->path() + "/" + name;
    c.surface.rc = 0;  // none needed
    const std::string cd = "cd '" + c.dir + "' && ";
    ftr::run_command("mkdir -p '" + c.dir + "'");
    if (!statics.empty()) {
      ftr::write_text(c.dir + "/host.yaml", "grid: " + ftr::kIconGrid + "\norography: " + ftr::kEtopo20 +
                                                "\norography_variable: ROSE\nstart: 1985-01-01T00:00:00\n"
                                                "dt: 1800\nsteps: 1\nnproma: 24\nnlev: 1\nprogress_every: 0\n");
      c.surface = ftr::run_command(cd + "mpiexec -n 1 " + ftr::binary("finecast-host") +
                                   " host.yaml --geometry uniform --write-orography surface.nc");
    }
    ftr::write_text(c.dir + "/plugin.yaml",
                    "fields: [" + fields + "]\ndevice: cpu\nseed: 5\ngrid: {type: icon, file: " + ftr::kIconGrid +
                        ", coarse_level: 0}\n"
                        "buffer: {capacity: 2}\n" +
                        config +
                        "train: {async: false, every: 1, min_steps: 1, epochs: 1, batch_size: 16, threads: 1}\n"
                        "sample: {" +
                        sample + "every: 0, members: 2}\ncheckpoint: {dir: ckpt}\n");
    ftr::write_text(c.dir + "/run.yaml", "input:\n  files: " + kData + "\n  variables: [" + fields + "]\n" + statics +
                                             "grid: {type: icon, file: " + ftr::kIconGrid +
                                             "}\nepochs: 2\nnproma: 16\ndecomposition: lat_bands\n"
                                             "plugins:\n  - {name: finecast, library: " +
                                             ftr::plugin_library() + ", options: plugin.yaml}\n");
    c.train = ftr::run_command(cd + "mpiexec -n 2 --oversubscribe " + ftr::binary("finecast-replay") +
                               " run.yaml --progress lines" + replay_flags);
    c.downscale = ftr::run_command(cd + ftr::binary("finecast-downscale") + " --checkpoint ckpt --input " + kData +
                                   " " + downscale_flags + " --grid " + ftr::kIconGrid +
                                   " --members 4 --seed 42 --output downscaled.nc --device cpu --threads 1");
    c.exported = ftr::run_command(cd + ftr::binary("finecast-export") + " --checkpoint ckpt --output downscaler.pt");
    // The docs' block that reads netCDF4, as written.
    const std::string doc = std::string(FINECAST_SOURCE_DIR) + "/docs/export.md";
    c.python = ftr::run_command(cd +
                                "/usr/bin/python3 -c \"import re; open('example.py', 'w').write([b for b in "
                                "re.findall(r'\\x60\\x60\\x60python\\n(.*?)\\x60\\x60\\x60', open('" +
                                doc + "').read(), re.S) if 'netCDF4' in b][0])\" && /usr/bin/python3 example.py");
    return c;
  }

  /// The number after `before` in `text` (NaN when absent).
  static double number_after(const std::string& text, const std::string& before) {
    const size_t at = text.find(before);
    return at == std::string::npos ? std::nan("") : std::strtod(text.c_str() + at + before.size(), nullptr);
  }

  /// What Debian's Python prints (stdout and stderr) for `expression` on the grid tables `g` of
  /// module `path` (None when it has none).
  static std::string tables(const std::string& path, const std::string& expression) {
    const ftr::CommandResult r =
        ftr::run_command("/usr/bin/python3 -c \"import torch; m = torch.jit.load('" + path +
                         "'); g = getattr(m, 'grid_tables', None); print((" + expression + "))\"");
    return r.rc == 0 ? r.output : "failed: " + r.output;
  }

  /// The case ran, and Python's members are finecast-downscale's to 2.5e-4 (8 float ulps of a
  /// 300 K value: the fused CPU sampler rounds in another order than the module; another noise
  /// would be off by kelvins), and differ from each other.
  static void expect_reproduced(const ExportRun& c) {
    ASSERT_EQ(c.surface.rc, 0) << c.surface.output;
    ASSERT_EQ(c.train.rc, 0) << c.train.output;
    ASSERT_EQ(c.downscale.rc, 0) << c.downscale.output;
    ASSERT_EQ(c.exported.rc, 0) << c.exported.output;
    EXPECT_NE(c.exported.output.find("Grid tables of " + ftr::kIconGrid + " (R2B4 -> R2B0"), std::string::npos)
        << c.exported.output;
    ASSERT_EQ(c.python.rc, 0) << c.python.output;
    std::printf("%s: %s", c.dir.c_str(), c.python.output.c_str());
    const double worst = number_after(c.python.output, "at most ");
    EXPECT_LT(worst, 2.5e-4) << c.python.output;
    EXPECT_GT(number_after(c.python.output, "differ by up to "), 1e-2) << c.python.output;
  }

  static ftr::ScratchDir* dir_;
  static ExportRun *simple_, *full_;
};
ftr::ScratchDir* ExportIcon::dir_ = nullptr;
ExportRun* ExportIcon::simple_ = nullptr;
ExportRun* ExportIcon::full_ = nullptr;

}  // namespace

TEST_F(ExportIcon, SimpleModelReproducesDownscale) {
  expect_reproduced(simple());
  EXPECT_NE(simple().exported.output.find("a context of 7 values"), std::string::npos) << simple().exported.output;
  // The patch, its 3 edge neighbours; no base and no covariates, so no interpolant; the file's
  // geometry. The file's cells are numbered hierarchically: patch k holds cells 256 k ... 256 k + 255.
  const std::string printed = tables(simple().dir + "/downscaler.pt",
                                     "tuple(g.fine_of_patch.shape), tuple(g.context_cells.shape), "
                                     "hasattr(g, 'interp_cells'), g.geometry, "
                                     "bool((g.fine_of_patch.min(1).values == torch.arange(80) * 256).all())");
  EXPECT_NE(printed.find("((80, 256), (80, 4), False, 'file', True)"), std::string::npos) << printed;
}

TEST_F(ExportIcon, CovariateModelReproducesDownscale) {
  expect_reproduced(full());
  EXPECT_NE(full().exported.output.find("a context of 1050 values, the idw interpolant, the regression's coefficients"),
            std::string::npos)
      << full().exported.output;
  // 2 rings (9 cells), the 6 nearest coarse centres, 2 coefficients per covariate and 1 local-slope
  // term, the uniform geometry.
  const std::string printed = tables(full().dir + "/downscaler.pt",
                                     "tuple(g.context_cells.shape), tuple(g.interp_cells.shape), "
                                     "tuple(g.regression.shape), g.slope_terms, g.geometry");
  EXPECT_NE(printed.find("((80, 10), (80, 256, 6), (5,), [0], 'uniform')"), std::string::npos) << printed;
}

// The grid flags and what finecast-export refuses, on untrained checkpoints with a conditioning spec.
TEST_F(ExportIcon, GridFlagsAndTheirErrors) {
  auto checkpoint = [](const std::string& name, const fc::ConditioningSpec& spec, int64_t context) {
    ft::ModelOptions mo;
    mo.context_size = context;
    mo.patch_size = 256;
    mo.hidden = 8;
    mo.depth = 1;
    mo.time_embedding = 8;
    mo.diffusion_steps = 10;
    const std::string path = dir_->file(name + ".h5");
    ft::Downscaler(mo, ft::TrainOptions{}, "cpu")
        .save_checkpoint(path, {}, {{fc::kConditioningGroup, fc::spec_record(spec)}});
    return path;
  };
  auto run = [](const std::string& checkpoint, const std::string& output, const std::string& flags) {
    return ftr::run_command(ftr::binary("finecast-export") + " --checkpoint " + checkpoint + " --output " +
                            dir_->file(output) + " " + flags);
  };
  fc::ConditioningSpec spec;
  spec.grid.file = ftr::kIconGrid;
  spec.patch_size = 256;
  spec.fields = {"ts"};
  spec.target = "ts";
  const std::string plain = checkpoint("plain", spec, 7);

  // --no-grid: the module alone (the tables by default: the tests above).
  const ftr::CommandResult alone = run(plain, "alone.pt", "--no-grid");
  ASSERT_EQ(alone.rc, 0) << alone.output;
  EXPECT_NE(alone.output.find("No grid tables (--no-grid)"), std::string::npos) << alone.output;
  EXPECT_NE(tables(dir_->file("alone.pt"), "g").find("None"), std::string::npos);

  // A grid that cannot be read names the file and the flags, and nothing is written.
  const ftr::CommandResult missing = run(plain, "missing.pt", "--grid " + dir_->file("none.nc"));
  EXPECT_NE(missing.rc, 0);
  EXPECT_NE(missing.output.find(dir_->file("none.nc")), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find("give the fine ICON grid with --grid FILE, or --no-grid"), std::string::npos)
      << missing.output;
  EXPECT_FALSE(ftr::exists(dir_->file("missing.pt")));

  // A grid whose patches do not fit the model: R2B3 -> R2B0 gives 64 cells per patch.
  const std::string r2b3 = dir_->file("r2b3.nc");
  ASSERT_EQ(ftr::run_command(ftr::binary("finecast-grid") + " --write-icon-grid " + r2b3 + " --level 3").rc, 0);
  const ftr::CommandResult other = run(plain, "other.pt", "--grid " + r2b3);
  EXPECT_NE(other.rc, 0);
  EXPECT_NE(other.output.find("expects patches of 256 fine cells and a context of 7 values, but " + r2b3 +
                              " (R2B3 -> R2B0) with its conditioning spec gives 64 and 7"),
            std::string::npos)
      << other.output;
  EXPECT_FALSE(ftr::exists(dir_->file("other.pt")));

  // A context the spec does not give on the grid (the checkpoint's model has 8 values, not 7).
  const ftr::CommandResult wider = run(checkpoint("wider", spec, 8), "wider.pt", "");
  EXPECT_NE(wider.rc, 0);
  EXPECT_NE(wider.output.find("a context of 8 values, but " + ftr::kIconGrid +
                              " (R2B4 -> R2B0) with its conditioning spec "
                              "gives 256 and 7"),
            std::string::npos)
      << wider.output;

  // A regression base without its coefficients (a checkpoint written before its first step).
  fc::ConditioningSpec regression = spec;
  regression.patch.statics = {"topography_c"};
  regression.static_norms = {{100.0, 50.0}};
  regression.patch.residual = fc::Residual::kRegression;
  const ftr::CommandResult unfitted = run(checkpoint("unfitted", regression, 7 + 1 + 2 * 256), "unfitted.pt", "");
  EXPECT_NE(unfitted.rc, 0);
  EXPECT_NE(unfitted.output.find(": trained with patch.residual: regression, but records 0 coefficient(s) for its 2 "
                                 "predictors"),
            std::string::npos)
      << unfitted.output;

  // No tables, with the reason, for a lat-lon checkpoint and for one that records no grid file.
  fc::ConditioningSpec latlon = spec;
  latlon.grid.type = fc::GridType::kLatLon;
  const ftr::CommandResult blocks = run(checkpoint("latlon", latlon, 8), "latlon.pt", "");
  ASSERT_EQ(blocks.rc, 0) << blocks.output;
  EXPECT_NE(blocks.output.find("was trained on a lat-lon grid"), std::string::npos) << blocks.output;
  fc::ConditioningSpec nowhere = spec;
  nowhere.grid.file.clear();
  const ftr::CommandResult unnamed = run(checkpoint("nowhere", nowhere, 7), "nowhere.pt", "");
  ASSERT_EQ(unnamed.rc, 0) << unnamed.output;
  EXPECT_NE(unnamed.output.find("records no grid file (grid.file); give the ICON grid with --grid FILE"),
            std::string::npos)
      << unnamed.output;
}
