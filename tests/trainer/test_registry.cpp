// SPDX-License-Identifier: BSD-3-Clause
// The registry of denoisers (trainer/denoisers/): every registered architecture, built from its
// entry's example options, trains and samples alike on every path its entry claims: eager
// (autograd), the fused CPU path, the capturable training step and staged sampler loop (run
// eagerly on the CPU, as test_graphs.cpp does), and the exported TorchScript module, all for the
// same data and noise. A new denoiser is covered by registering it.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tests/trainer/random_rows.hpp"
#include "tests/trainer/trainer_test_data.hpp"
#include "trainer/denoisers/registry.hpp"
#include "trainer/downscaler.hpp"
#include "trainer/downscaler_impl.hpp"
#include "trainer/sample_graph.hpp"
#include "trainer/torchscript_export.hpp"

namespace ft = finecast::trainer;

namespace {

using Rows = ft::testing::RandomRows;

ft::TrainOptions eager_training() {
  ft::TrainOptions to;
  to.batch_size = 16;
  to.warmup_steps = 2;
  to.seed = 9;
  to.force_autograd = true;
  return to;
}

/// The samples of `model` for `in` with `so` and seed 5.
std::vector<float> samples(const ft::Downscaler& model, const Rows& in, const ft::SampleOptions& so) {
  std::vector<float> out(static_cast<size_t>(in.n * so.members * model.model_options().patch_size));
  model.sample(in.context.data(), in.coarse.data(), in.weights.data(), in.n, so, 5, out.data());
  return out;
}

/// max |a - b| / max(1, max |b|).
double difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0, scale = 1;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::abs(b[i])));
  }
  return worst / scale;
}

/// `to` takes `from`'s trained and published weights (both trained on the same data, so the
/// normalisation is the same).
void copy_weights(const ft::Downscaler& from, ft::Downscaler& to) {
  torch::NoGradGuard no_grad;
  ft::internals(to).flat.copy_(ft::internals(from).flat);
  ft::internals(to).ema.copy_(ft::internals(from).ema);
  to.publish();
}

}  // namespace

TEST(DenoiserRegistry, EveryDenoiserAgreesOnEveryPath) {
  ft::testing::ScratchDir scratch("registry_test");
  ASSERT_GE(ft::denoisers::all().size(), 4u);
  for (const ft::denoisers::Entry* e : ft::denoisers::all()) {
    const std::string arch = ft::name(e->arch);
    SCOPED_TRACE("model.arch " + arch);
    const ft::ModelOptions mo = e->example();
    ASSERT_EQ(mo.arch, e->arch);
    ASSERT_EQ(&ft::denoisers::entry(e->arch), e);
    const Rows data(mo, 64, 3), in(mo, 4, 11);

    // Training: one epoch of 4 steps from the same seeded weights on each path.
    ft::Downscaler eager(mo, eager_training(), "cpu");
    ASSERT_EQ(eager.training_path(), "autograd");
    const torch::Tensor init = ft::internals(eager).flat.clone();
    const double eager_loss = eager.train_epoch(data.view()).avg_loss;
    eager.publish();
    // The weights compared are those with a gradient above rounding. AdamW divides each
    // gradient by its own running magnitude, so a weight whose gradient is zero in exact
    // arithmetic (an output bias under the conservative constraint's mean removal, a bias in
    // front of a normalisation) moves by about the learning rate in the direction of its rounding
    // noise, which differs between two correct paths: on a Xeon with AVX-512 a U-Net's two such
    // weights moved by 9e-5 and 4e-4 on the graph path against 1e-4 on the eager one, their
    // root-mean-square gradient 1e-10 against 1e-3 at most. Those are left out; every other
    // weight must take the same steps.
    const torch::Tensor rms_grad = ft::internals(eager).exp_avg_sq.sqrt();
    const torch::Tensor above_rounding = rms_grad >= 1e-6 * rms_grad.max();
    // At least 80% of the weights are compared (the graph denoiser leaves 11% unused).
    EXPECT_GE(above_rounding.sum().item<int64_t>() * 5, above_rounding.numel() * 4);
    const double update = ((ft::internals(eager).flat - init) * above_rounding).norm().item<double>();
    ASSERT_GT(update, 0.0);
    auto trains_alike = [&](ft::Downscaler& other, const std::string& path) {
      ASSERT_TRUE(torch::equal(ft::internals(other).flat, init)) << path << ": same seed, same weights";
      const double loss = other.train_epoch(data.view()).avg_loss;
      const double diff =
          ((ft::internals(other).flat - ft::internals(eager).flat) * above_rounding).norm().item<double>() / update;
      std::printf(
          "[registry] %s %s training: loss %.7g vs eager %.7g, weight-update difference %.2e "
          "(%lld of %lld weights with a gradient above rounding)\n",
          arch.c_str(), path.c_str(), loss, eager_loss, diff,
          static_cast<long long>(above_rounding.sum().item<int64_t>()), static_cast<long long>(above_rounding.numel()));
      EXPECT_NEAR(loss, eager_loss, 1e-5 * eager_loss) << path;
      EXPECT_LT(diff, 1e-4) << path;
      other.publish();
    };

    // The samplers compared: DDIM with noise, DDPM over every step.
    ft::SampleOptions ddim;
    ddim.sampler = ft::Sampler::kDdim;
    ddim.steps = 5;
    ddim.eta = 0.5;
    ddim.members = 2;
    ft::SampleOptions ddpm = ddim;
    ddpm.sampler = ft::Sampler::kDdpm;
    const std::vector<ft::SampleOptions> samplers{ddim, ddpm};
    std::vector<std::vector<float>> reference;
    for (const auto& so : samplers) reference.push_back(samples(eager, in, so));

    // The fused CPU path, where the entry claims it and the build has a CBLAS.
    if (e->can.fused_cpu && ft::fused::compiled()) {
      ft::TrainOptions to = eager_training();
      to.force_autograd = false;
      ft::Downscaler fused(mo, to, "cpu");
      ASSERT_EQ(fused.training_path(), "fused-cpu");
      trains_alike(fused, "fused");
      copy_weights(eager, fused);
      ASSERT_TRUE(ft::internals(fused).sample_fused) << "the fused sampler is not taken";
      for (size_t i = 0; i < samplers.size(); ++i) {
        const double diff = difference(samples(fused, in, samplers[i]), reference[i]);
        std::printf("[registry] %s fused %s sampling: difference %.2e\n", arch.c_str(),
                    ft::name(samplers[i].sampler).c_str(), diff);
        EXPECT_LT(diff, 1e-4) << "fused " << ft::name(samplers[i].sampler);  // docs/training.md's tolerance
      }
    }

    // The capturable step and the staged sampler loop, where the entry claims capture; a model
    // without it trains eagerly even when the graph path is forced.
    {
      ft::Downscaler graph(mo, eager_training(), "cpu");
      ft::internals(graph).force_graph_path = true;
      trains_alike(graph, "graph");
      EXPECT_EQ(ft::internals(graph).train_graph != nullptr, e->can.graph_capture)
          << "the graph path is taken exactly where the registry says the step can be captured";
      if (e->can.graph_capture) {
        copy_weights(eager, graph);
        ft::internals(graph).sample_graphs = std::make_unique<ft::graphs::SampleGraphs>(torch::Device(torch::kCPU));
        for (size_t i = 0; i < samplers.size(); ++i)
          for (int call = 0; call < 3; ++call) {  // warm-up, "capture", replay
            const double diff = difference(samples(graph, in, samplers[i]), reference[i]);
            EXPECT_LT(diff, 1e-6) << "staged " << ft::name(samplers[i].sampler) << " call " << call;
          }
        EXPECT_EQ(ft::internals(graph).sample_graphs->shapes(), samplers.size());
      }
    }

    // The exported TorchScript module, fed the noise sample() draws for the same seed.
    for (size_t i = 0; i < samplers.size(); ++i) {
      const ft::SampleOptions& so = samplers[i];
      ft::ExportOptions eo;
      eo.sample = so;
      eo.metadata = {{"context_fields", "tas"}, {"target", "tas"}, {"patch.residual", "mean"}};
      const std::string file = scratch.path(arch + ".pt");
      ft::export_torchscript(eager, eo, file);
      torch::jit::Module m = torch::jit::load(file);
      auto noise_values = ft::export_noise(mo, so, in.n, 5);
      auto noise = torch::from_blob(
          noise_values.data(), {ft::export_noise_draws(mo, so), in.n * so.members, mo.patch_size}, torch::kFloat32);
      std::vector<float> context = in.context, weights = in.weights;
      torch::jit::Kwargs kw;
      kw["weights"] = torch::from_blob(weights.data(), {in.n, mo.patch_size}, torch::kFloat32);
      auto fine = m.get_method("forward")(
                       {torch::from_blob(context.data(), {in.n, mo.context_size}, torch::kFloat32), noise}, kw)
                      .toTensor()
                      .contiguous();
      ASSERT_EQ(fine.numel(), static_cast<int64_t>(reference[i].size()));
      const double diff =
          difference(std::vector<float>(fine.data_ptr<float>(), fine.data_ptr<float>() + fine.numel()), reference[i]);
      std::printf("[registry] %s exported %s sampling: difference %.2e\n", arch.c_str(), ft::name(so.sampler).c_str(),
                  diff);
      EXPECT_LT(diff, 1e-5) << "exported " << ft::name(so.sampler);
    }
  }
}

// The options an entry owns (denoisers::Entry::own_options) are exactly the model-option rows
// that apply to its architecture alone (their applies_when in the torch-free options table,
// which cannot ask the registry): a resume compares them only between two models of that
// architecture. Registering a denoiser with options of its own needs both; this keeps them equal.
TEST(DenoiserRegistry, OwnOptionsAreTheRowsThatApplyToTheirArchitectureAlone) {
  namespace dn = finecast::trainer::denoisers;
  using finecast::trainer::ModelOptions;
  for (const auto& row : finecast::trainer::model_options_table()) {
    std::vector<std::string> owners;
    for (const dn::Entry* e : dn::all()) {
      const bool owns = std::find(e->own_options.begin(), e->own_options.end(), row.key) != e->own_options.end();
      const std::string arch = "arch " + std::to_string(static_cast<int>(e->arch));
      if (owns) owners.push_back(arch);
      ModelOptions o;
      o.arch = e->arch;
      if (row.applies) {
        EXPECT_EQ(row.applies(o), owns) << row.key << " for " << arch;
      } else {
        EXPECT_FALSE(owns) << row.key << " is owned by " << arch << " but applies to every architecture";
      }
    }
    EXPECT_LE(owners.size(), 1u) << row.key << " is owned by more than one denoiser";
  }
}
