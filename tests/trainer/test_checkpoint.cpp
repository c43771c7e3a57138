// SPDX-License-Identifier: BSD-3-Clause
// HDF5 checkpoints: bitwise round trip, resume equivalence, atomicity, keep-last-K, clear errors.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "common/checkpoint_files.hpp"
#include "tests/trainer/trainer_test_data.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/downscaler_impl.hpp"

namespace fs = std::filesystem;
namespace ft = finecast::trainer;
using ft::testing::KnownDistribution;

namespace {

ft::TrainOptions tiny_training() {
  ft::TrainOptions t;
  t.batch_size = 16;
  t.warmup_steps = 5;
  t.seed = 123;
  return t;
}

/// A fresh directory per test (one torch thread: the global environment of test_downscaler.cpp).
class Checkpoint : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return scratch_.path(name); }

  /// The message of the CheckpointError that `f` throws ("" when it does not throw).
  template <class F>
  static std::string error_of(F&& f) {
    try {
      f();
    } catch (const ft::CheckpointError& e) {
      return e.what();
    }
    return "";
  }

  ft::testing::ScratchDir scratch_{"ckpt_test"};
  KnownDistribution data_{200, 4};
  ft::DataView view() const { return {data_.context.data(), data_.fine.data(), nullptr, data_.n}; }
};

}  // namespace

TEST_F(Checkpoint, RoundTripIsBitwise) {
  ft::Downscaler a(ft::testing::tiny_mlp(), tiny_training(), "cpu");
  a.train_epoch(view());
  a.save_checkpoint(path("a.h5"), {{"run", "test"}, {"host_step", "12"}});
  auto b = ft::Downscaler::load_checkpoint(path("a.h5"), "cpu");
  const auto& ia = ft::internals(a);
  const auto& ib = ft::internals(b);
  EXPECT_TRUE(torch::equal(ia.flat, ib.flat));
  EXPECT_TRUE(torch::equal(ia.ema, ib.ema));
  EXPECT_TRUE(torch::equal(ia.exp_avg, ib.exp_avg));
  EXPECT_TRUE(torch::equal(ia.exp_avg_sq, ib.exp_avg_sq));
  EXPECT_EQ(ia.sums.context_sum, ib.sums.context_sum);
  EXPECT_EQ(ia.sums.residual_sumsq, ib.sums.residual_sumsq);
  EXPECT_GT(ia.sums.fine_sumsq, 0.0);
  EXPECT_EQ(ia.sums.fine_sumsq, ib.sums.fine_sumsq);
  ASSERT_EQ(ia.sums.context_min.size(), 3u);
  EXPECT_EQ(ia.sums.context_min, ib.sums.context_min);
  EXPECT_EQ(ia.sums.context_max, ib.sums.context_max);
  EXPECT_EQ(a.step(), b.step());
  EXPECT_GT(b.step(), 0);
  EXPECT_TRUE(torch::equal(ia.gen.get_state(), ib.gen.get_state()));
  const auto md = ft::Downscaler::checkpoint_metadata(path("a.h5"));
  EXPECT_EQ(md.at("run"), "test");
  EXPECT_EQ(md.at("host_step"), "12");
  // The loaded model samples exactly what the saved one does (both published their EMA weights).
  a.publish();
  ft::SampleOptions so;
  so.members = 2;
  std::vector<float> oa(2 * 2 * 16), ob(oa.size());
  a.sample(data_.context.data(), data_.coarse.data(), nullptr, 2, so, 5, oa.data());
  b.sample(data_.context.data(), data_.coarse.data(), nullptr, 2, so, 5, ob.data());
  EXPECT_EQ(oa, ob);
  // No temporary file is left behind by the atomic write.
  for (const auto& e : fs::directory_iterator(scratch_.dir())) EXPECT_EQ(e.path().filename(), "a.h5");
}

// Typed attribute groups (the plugin's /conditioning) are stored as their types in the same atomic
// write, read back equal, and may not take the name of one of the checkpoint's own groups.
TEST_F(Checkpoint, TypedGroupsKeepTheirTypes) {
  using finecast::schema::Value;
  const ft::Downscaler a(ft::testing::tiny_mlp(), tiny_training(), "cpu");
  const finecast::schema::Record group{{"count", Value(int64_t{256})},
                                       {"coefficients", Value(std::vector<double>{0.1, -2.5, 1e-17})},
                                       {"names", Value(std::vector<std::string>{"ts", "fr_land"})},
                                       {"none", Value(std::vector<std::string>{})},
                                       {"flag", Value(int64_t{1})},
                                       {"scale", Value(0.5)},
                                       {"empty", Value(std::string())},
                                       {"name", Value(std::string("regression"))}};
  a.save_checkpoint(path("typed.h5"), {{"run", "test"}}, {{"conditioning", group}});
  EXPECT_EQ(ft::read_checkpoint_group(path("typed.h5"), "conditioning"), group);
  EXPECT_EQ(ft::read_checkpoint_group(path("typed.h5"), "absent"), std::nullopt);
  EXPECT_EQ(ft::read_checkpoint_metadata(path("typed.h5")).at("run"), "test");
  ft::verify_checkpoint(path("typed.h5"));

  // What the file holds, as any HDF5 reader sees it.
  const hid_t f = H5Fopen(path("typed.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  auto shape_of = [&](const char* key, H5T_class_t& cls, H5S_class_t& space, hssize_t& n) {
    const hid_t at = H5Aopen_by_name(f, "conditioning", key, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(at, 0) << key;
    const hid_t type = H5Aget_type(at), sp = H5Aget_space(at);
    cls = H5Tget_class(type);
    space = H5Sget_simple_extent_type(sp);
    n = H5Sget_simple_extent_npoints(sp);
    H5Sclose(sp);
    H5Tclose(type);
    H5Aclose(at);
  };
  H5T_class_t cls;
  H5S_class_t space;
  hssize_t n = 0;
  shape_of("count", cls, space, n);
  EXPECT_EQ(cls, H5T_INTEGER);
  EXPECT_EQ(space, H5S_SCALAR);
  shape_of("coefficients", cls, space, n);
  EXPECT_EQ(cls, H5T_FLOAT);
  EXPECT_EQ(space, H5S_SIMPLE);
  EXPECT_EQ(n, 3);
  shape_of("names", cls, space, n);
  EXPECT_EQ(cls, H5T_STRING);
  EXPECT_EQ(n, 2);
  shape_of("none", cls, space, n);
  EXPECT_EQ(cls, H5T_STRING);
  EXPECT_EQ(n, 0);
  shape_of("scale", cls, space, n);
  EXPECT_EQ(cls, H5T_FLOAT);
  EXPECT_EQ(space, H5S_SCALAR);
  H5Fclose(f);

  for (const char* taken : {"model", "options", "metadata", "", "a/b"}) {
    const auto e = error_of([&] { a.save_checkpoint(path("clash.h5"), {}, {{taken, group}}); });
    EXPECT_TRUE(ft::testing::contains(e, "clash.h5: not written: the group name \"" + std::string(taken) + "\"")) << e;
    EXPECT_FALSE(fs::exists(path("clash.h5")));
  }
}

TEST_F(Checkpoint, ResumingEqualsTrainingStraight) {
  // 2N epochs straight == N epochs, save, load into a fresh object, N epochs (same seed, CPU).
  ft::Downscaler straight(ft::testing::tiny_mlp(), tiny_training(), "cpu");
  for (int e = 0; e < 4; ++e) straight.train_epoch(view());

  {
    ft::Downscaler first(ft::testing::tiny_mlp(), tiny_training(), "cpu");
    for (int e = 0; e < 2; ++e) first.train_epoch(view());
    first.save_checkpoint(path("half.h5"));
  }
  auto resumed = ft::Downscaler::load_checkpoint(path("half.h5"), "cpu");
  for (int e = 0; e < 2; ++e) resumed.train_epoch(view());
  EXPECT_EQ(resumed.step(), straight.step());
  EXPECT_TRUE(torch::equal(ft::internals(resumed).flat, ft::internals(straight).flat));
  EXPECT_TRUE(torch::equal(ft::internals(resumed).ema, ft::internals(straight).ema));
  // Without the generator state the continuation would differ: the check has teeth.
  ft::Downscaler other(ft::testing::tiny_mlp(), tiny_training(), "cpu");
  other.restore(path("half.h5"));
  ft::internals(other).gen = at::make_generator<at::CPUGeneratorImpl>(999);
  for (int e = 0; e < 2; ++e) other.train_epoch(view());
  EXPECT_FALSE(torch::equal(ft::internals(other).flat, ft::internals(straight).flat));
}

TEST_F(Checkpoint, WrongArchitectureAndShapesAreNamed) {
  ft::Downscaler mlp(ft::testing::tiny_mlp(), tiny_training(), "cpu");
  mlp.save_checkpoint(path("mlp.h5"));
  auto unet_opts = ft::testing::tiny_mlp();
  unet_opts.arch = finecast::trainer::Arch::kUnet;
  unet_opts.unet_channels = 4;
  ft::Downscaler unet(unet_opts, tiny_training(), "cpu");
  const auto e1 = error_of([&] { unet.restore(path("mlp.h5")); });
  EXPECT_TRUE(ft::testing::contains(e1, "arch: file has mlp, this model has unet")) << e1;

  auto wide = ft::testing::tiny_mlp();
  wide.hidden = 48;
  ft::Downscaler w(wide, tiny_training(), "cpu");
  const auto before = ft::internals(w).flat.clone();
  const auto e2 = error_of([&] { w.restore(path("mlp.h5")); });
  EXPECT_TRUE(ft::testing::contains(e2, "hidden: file has 32, this model has 48")) << e2;
  EXPECT_TRUE(torch::equal(before, ft::internals(w).flat)) << "a failed restore must leave the model unchanged";
}

// What a restore compares of the model options is the rows flagged compared_on_resume() in
// model_options_table() (every row but the TorchScript file's path, whose module's hash is
// compared instead), the MLP's and the U-Net's sizes only between two models of that architecture.
TEST(ModelOptionsOnResume, TheFlaggedRowsThatApplyToBothModels) {
  const auto& table = ft::model_options_table();
  for (const auto& f : table) EXPECT_EQ(f.resume_compares, f.key != "file") << f.key;
  auto keys = [&](const ft::ModelOptions& a, const ft::ModelOptions& b) {
    std::vector<std::string> out;
    for (const auto& f : finecast::schema::compared_on_resume(table, a, b)) out.push_back(f.key);
    return out;
  };
  auto has = [](const std::vector<std::string>& v, const std::string& k) {
    return std::find(v.begin(), v.end(), k) != v.end();
  };
  ft::ModelOptions unet;
  unet.arch = ft::Arch::kUnet;
  ft::ModelOptions mlp;
  mlp.arch = ft::Arch::kMlp;
  const auto both_unet = keys(unet, unet), both_mlp = keys(mlp, mlp), mixed = keys(mlp, unet);
  EXPECT_TRUE(has(both_unet, "unet_channels") && has(both_unet, "attention"));
  EXPECT_FALSE(has(both_unet, "hidden") || has(both_unet, "depth") || has(both_unet, "file"));
  EXPECT_TRUE(has(both_mlp, "hidden") && has(both_mlp, "depth"));
  EXPECT_FALSE(has(both_mlp, "unet_channels") || has(both_mlp, "attention"));
  EXPECT_TRUE(has(mixed, "arch") && has(mixed, "diffusion_steps"));
  EXPECT_FALSE(has(mixed, "hidden") || has(mixed, "unet_channels"));
}

TEST_F(Checkpoint, MissingAndMisshapenTensorsAreListed) {
  ft::Downscaler a(ft::testing::tiny_mlp(), tiny_training(), "cpu");
  a.save_checkpoint(path("a.h5"));
  {
    const hid_t f = H5Fopen(path("a.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    ASSERT_GE(H5Ldelete(f, "/ema/layer1.bias", H5P_DEFAULT), 0);
    ASSERT_GE(H5Ldelete(f, "/model/out.weight", H5P_DEFAULT), 0);
    std::vector<float> wrong(7, 0.0f);
    const hsize_t dims[1] = {7};
    const hid_t space = H5Screate_simple(1, dims, nullptr);
    const hid_t ds = H5Dcreate2(f, "/model/out.weight", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, wrong.data());
    H5Dclose(ds);
    H5Sclose(space);
    H5Fclose(f);
  }
  ft::Downscaler b(ft::testing::tiny_mlp(), tiny_training(), "cpu");
  const auto e = error_of([&] { b.restore(path("a.h5")); });
  EXPECT_TRUE(ft::testing::contains(e, "missing tensor /ema/layer1.bias")) << e;
  EXPECT_TRUE(ft::testing::contains(e, "/model/out.weight is float32[7], the model expects float32[16,32]")) << e;
}

TEST_F(Checkpoint, WrongFormatVersionIsRefused) {
  ft::Downscaler a(ft::testing::tiny_mlp(), tiny_training(), "cpu");
  a.save_checkpoint(path("a.h5"));
  {
    const hid_t f = H5Fopen(path("a.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t attr = H5Aopen(f, "format_version", H5P_DEFAULT);
    const int64_t v = ft::kCheckpointFormatVersion + 1;
    H5Awrite(attr, H5T_NATIVE_INT64, &v);
    H5Aclose(attr);
    H5Fclose(f);
  }
  const auto e = error_of([&] { ft::Downscaler::load_checkpoint(path("a.h5"), "cpu"); });
  EXPECT_TRUE(ft::testing::contains(e, "checkpoint format version " + std::to_string(ft::kCheckpointFormatVersion + 1) +
                                           ", but this build reads versions 1 to " +
                                           std::to_string(ft::kCheckpointFormatVersion)))
      << e;
  EXPECT_TRUE(ft::testing::contains(e, "newer finecast")) << e;
  EXPECT_FALSE(ft::newest_valid_checkpoint(scratch_.dir().string()).has_value());
}

TEST_F(Checkpoint, TruncatedCorruptAndForeignFilesGiveClearErrors) {
  ft::Downscaler a(ft::testing::tiny_mlp(), tiny_training(), "cpu");
  a.train_epoch(view());
  a.save_checkpoint(path("good.h5"));
  const auto size = fs::file_size(path("good.h5"));

  fs::copy_file(path("good.h5"), path("truncated.h5"));
  fs::resize_file(path("truncated.h5"), size / 2);
  const auto e1 = error_of([&] { ft::Downscaler::load_checkpoint(path("truncated.h5"), "cpu"); });
  EXPECT_TRUE(ft::testing::contains(e1, "truncated.h5")) << e1;
  EXPECT_TRUE(ft::testing::contains(e1, "truncated or corrupt")) << e1;

  // Flip bytes inside the raw data of one tensor: the Fletcher-32 checksum must catch it.
  fs::copy_file(path("good.h5"), path("corrupt.h5"));
  haddr_t offset = 0;
  {
    const hid_t f = H5Fopen(path("corrupt.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t ds = H5Dopen2(f, "/model/layer0.weight", H5P_DEFAULT);
    const hsize_t origin[2] = {0, 0};
    unsigned mask = 0;
    hsize_t chunk_size = 0;
    ASSERT_GE(H5Dget_chunk_info_by_coord(ds, origin, &mask, &offset, &chunk_size), 0);
    H5Dclose(ds);
    H5Fclose(f);
  }
  {
    std::fstream io(path("corrupt.h5"), std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(offset + 100));
    const char junk[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    io.write(junk, sizeof junk);
  }
  const auto e2 = error_of([&] { ft::Downscaler::load_checkpoint(path("corrupt.h5"), "cpu"); });
  EXPECT_TRUE(ft::testing::contains(e2, "cannot read dataset model/layer0.weight")) << e2;
  EXPECT_TRUE(ft::testing::contains(e2, "checksum")) << e2;
  const auto e2v = error_of([&] { ft::verify_checkpoint(path("corrupt.h5")); });
  EXPECT_TRUE(ft::testing::contains(e2v, "layer0.weight")) << e2v;

  {
    std::ofstream junk(path("text.h5"));
    junk << "this is not HDF5\n";
  }
  const auto e3 = error_of([&] { ft::Downscaler::load_checkpoint(path("text.h5"), "cpu"); });
  EXPECT_TRUE(ft::testing::contains(e3, "not an HDF5 file")) << e3;

  const hid_t f = H5Fcreate(path("foreign.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose(f);
  const auto e4 = error_of([&] { ft::Downscaler::load_checkpoint(path("foreign.h5"), "cpu"); });
  EXPECT_TRUE(ft::testing::contains(e4, "not a finecast checkpoint")) << e4;

  const auto e5 = error_of([&] { ft::Downscaler::load_checkpoint(path("absent.h5"), "cpu"); });
  EXPECT_TRUE(ft::testing::contains(e5, "no such checkpoint file")) << e5;
}

// NaN or Inf weights would poison every run resumed from them: they are never written, and a file
// that holds them with valid checksums (written by another program, or damaged before HDF5
// computed the checksums) is refused at load instead of downscaling to all-fill output.
TEST_F(Checkpoint, NonFiniteWeightsAreNeverWrittenAndRefusedAtLoad) {
  ft::Downscaler a(ft::testing::tiny_mlp(), tiny_training(), "cpu");
  a.train_epoch(view());
  a.save_checkpoint(path("good.h5"));
  {
    ft::Downscaler poisoned(ft::testing::tiny_mlp(), tiny_training(), "cpu");
    {
      const torch::NoGradGuard no_grad;
      ft::internals(poisoned).flat.view(-1)[0].fill_(std::numeric_limits<float>::quiet_NaN());
    }
    const auto e = error_of([&] { poisoned.save_checkpoint(path("poisoned.h5")); });
    EXPECT_TRUE(ft::testing::contains(e, "not written")) << e;
    EXPECT_FALSE(fs::exists(path("poisoned.h5")));
  }
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    const std::string name = std::isnan(bad) ? "nan.h5" : "inf.h5";
    fs::copy_file(path("good.h5"), path(name));
    {
      // Through HDF5, so that the chunk's Fletcher-32 checksum is written anew and stays valid.
      const hid_t f = H5Fopen(path(name).c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
      const hid_t ds = H5Dopen2(f, "/model/layer0.weight", H5P_DEFAULT);
      const hid_t space = H5Dget_space(ds);
      std::vector<float> values(static_cast<size_t>(H5Sget_simple_extent_npoints(space)));
      ASSERT_GE(H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
      values[values.size() / 2] = bad;
      ASSERT_GE(H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
      H5Sclose(space);
      H5Dclose(ds);
      H5Fclose(f);
    }
    const auto e = error_of([&] { ft::Downscaler::load_checkpoint(path(name), "cpu"); });
    EXPECT_TRUE(ft::testing::contains(e, name)) << e;
    EXPECT_TRUE(ft::testing::contains(e, "/model holds NaN or Inf values")) << e;
  }
}

TEST_F(Checkpoint, DirectoryKeepsTheLastKAndFallsBackToTheNewestValid) {
  ft::Downscaler a(ft::testing::tiny_mlp(), tiny_training(), "cpu");
  const std::string d = path("ckpts");
  std::vector<std::string> written;
  for (int e = 0; e < 4; ++e) {
    a.train_epoch(view());
    written.push_back(ft::save_checkpoint_in_dir(a, d, 3, {{"epoch", std::to_string(e)}}));
  }
  EXPECT_EQ(written.back(), finecast::checkpoint_files::checkpoint_path(d, a.step()));
  EXPECT_TRUE(ft::testing::contains(written.back(), "ckpt_000000" + std::to_string(a.step()) + ".h5"))
      << written.back();
  EXPECT_FALSE(fs::exists(written[0]));  // only the last 3 are kept
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(fs::exists(written[i]));
  EXPECT_EQ(ft::newest_valid_checkpoint(d), written[3]);

  // A crash mid-write leaves a temporary file and, worst case, a damaged newest file.
  { std::ofstream(d + "/ckpt_99999999.h5.tmp") << "partial"; }
  fs::resize_file(written[3], fs::file_size(written[3]) / 3);
  std::vector<std::string> skipped;
  const auto best = ft::newest_valid_checkpoint(d, [&](const std::string& s) { skipped.push_back(s); });
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(*best, written[2]);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_TRUE(ft::testing::contains(skipped[0], written[3])) << skipped[0];
  EXPECT_EQ(ft::read_checkpoint_metadata(*best).at("epoch"), "2");
  EXPECT_FALSE(ft::newest_valid_checkpoint(path("empty")).has_value());
}

TEST_F(Checkpoint, AFailedWriteLeavesThePreviousCheckpointIntact) {
  ft::Downscaler a(ft::testing::tiny_mlp(), tiny_training(), "cpu");
  a.save_checkpoint(path("keep.h5"));
  const auto bytes = fs::file_size(path("keep.h5"));
  // A directory where the file should go makes the final rename fail after the write.
  fs::create_directories(path("blocked.h5/sub"));
  const auto e = error_of([&] { a.save_checkpoint(path("blocked.h5")); });
  EXPECT_TRUE(ft::testing::contains(e, "cannot rename")) << e;
  for (const auto& entry : fs::directory_iterator(scratch_.dir()))
    EXPECT_FALSE(ft::testing::contains(entry.path().filename().string(), ".tmp")) << "temporary file left behind";
  EXPECT_EQ(fs::file_size(path("keep.h5")), bytes);
  EXPECT_NO_THROW(ft::verify_checkpoint(path("keep.h5")));
}

TEST_F(Checkpoint, FileIsReadableWithStandardTools) {
  ft::Downscaler a(ft::testing::tiny_mlp(), tiny_training(), "cpu");
  a.save_checkpoint(path("a.h5"));
  if (!fs::exists("/usr/bin/h5dump")) GTEST_SKIP() << "h5dump not installed";
  const std::string cmd = "/usr/bin/h5dump -H " + path("a.h5") + " > " + path("dump.txt") + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(path("dump.txt"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* what : {"GROUP \"model\"", "DATASET \"layer0.weight\"", "GROUP \"optimizer\"",
                           "GROUP \"normalisation\"", "ATTRIBUTE \"format_version\"", "\"rng\""})
    EXPECT_TRUE(ft::testing::contains(text, what)) << what;
}

TEST_F(Checkpoint, VersionOneFilesAreReadWithTheNewKeysAtTheirDefaults) {
  // A version-1 file has no model.activation/attention, none of the version-2 train options and
  // no /validation group: rewrite a new file into that shape and load it.
  ft::Downscaler a(ft::testing::tiny_mlp(), tiny_training(), "cpu");
  a.train_epoch(view());
  a.save_checkpoint(path("v1.h5"));
  {
    const hid_t f = H5Fopen(path("v1.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t attr = H5Aopen(f, "format_version", H5P_DEFAULT);
    const int64_t v = 1;
    H5Awrite(attr, H5T_NATIVE_INT64, &v);
    H5Aclose(attr);
    for (const char* key : {"activation", "attention"}) H5Adelete_by_name(f, "options", key, H5P_DEFAULT);
    for (const char* key : {"accumulate", "validation", "early_stop", "keep_best", "max_device_memory", "threads"})
      H5Adelete_by_name(f, "train_options", key, H5P_DEFAULT);
    H5Ldelete(f, "validation", H5P_DEFAULT);
    H5Fclose(f);
  }
  auto b = ft::Downscaler::load_checkpoint(path("v1.h5"), "cpu");
  EXPECT_EQ(b.model_options().activation, ft::Activation::kSilu);
  EXPECT_FALSE(b.model_options().attention);
  EXPECT_EQ(b.train_options().accumulate, 1);
  EXPECT_EQ(b.train_options().validation, 0.0);
  EXPECT_TRUE(std::isnan(b.validation_record().best_score));
  EXPECT_FALSE(b.validation_record().stopped);
  EXPECT_TRUE(torch::equal(ft::internals(b).flat, ft::internals(a).flat));
  EXPECT_EQ(b.step(), a.step());
}

TEST_F(Checkpoint, OneWithoutTheTrainingRangeSamplesUnclipped) {
  // Checkpoints written before sample.clip_context have no /normalisation/context_min|max: they
  // sample as they did, the network seeing the context as it is, and no row counts as beyond.
  ft::Downscaler a(ft::testing::tiny_mlp(), tiny_training(), "cpu");
  a.train_epoch(view());
  a.publish();
  a.save_checkpoint(path("old.h5"));
  {
    const hid_t f = H5Fopen(path("old.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    EXPECT_GE(H5Ldelete(f, "normalisation/context_min", H5P_DEFAULT), 0);
    EXPECT_GE(H5Ldelete(f, "normalisation/context_max", H5P_DEFAULT), 0);
    H5Fclose(f);
  }
  auto old = ft::Downscaler::load_checkpoint(path("old.h5"), "cpu");
  EXPECT_TRUE(ft::internals(old).sums.context_min.empty());
  const std::vector<float> beyond = {1e3f, -1e3f, 1e3f};
  const float coarse = 0.5f;
  auto sample = [&](ft::Downscaler& ds, bool clip) {
    ft::SampleOptions so;
    so.members = 2;
    so.clip_context = clip;
    std::vector<float> out(static_cast<size_t>(2 * ft::testing::tiny_mlp().patch_size));
    ds.sample(beyond.data(), &coarse, nullptr, 1, so, 5, out.data());
    return out;
  };
  EXPECT_EQ(sample(old, true), sample(old, false));
  EXPECT_EQ(sample(old, true), sample(a, false));
  EXPECT_NE(sample(a, true), sample(a, false));  // with its range the same checkpoint clips
  EXPECT_EQ(old.rows_beyond_training_range(beyond.data(), 1, 0.25), 0);
  EXPECT_EQ(a.rows_beyond_training_range(beyond.data(), 1, 0.25), 1);
}
