// Hand-computed edge cases and bad input for the regression, aggregation, epoch, image and
// confusion-matrix metrics (classification: classification_test.cpp; composites: composite_test.cpp).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "distmetrics/runtime/comm.h"
#include "distmetrics/metrics/aggregation.h"
#include "distmetrics/metrics/confusion_matrix.h"
#include "distmetrics/metrics/epoch.h"
#include "distmetrics/metrics/errors.h"
#include "distmetrics/metrics/image.h"
#include "distmetrics/metrics/regression.h"
#include "test_support.h"

namespace distmetrics::metrics {
namespace {

using testing::values_close;

using testing::batch;
using testing::doubles;
using testing::longs;

template <typename E = InputError, typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

TEST(RegressionTest, ExactPredictionsAndHandComputedValues) {
  MeanAbsoluteError mae;
  MaximumAbsoluteError maxae;
  R2Score r2;
  PearsonCorrelation pearson;
  for (Metric* m : std::initializer_list<Metric*>{&mae, &maxae, &r2, &pearson}) {
    m->update(batch(doubles({1, 2, 3}), doubles({1, 2, 3})));
  }
  EXPECT_EQ(mae.compute().scalar(), 0.0);
  EXPECT_EQ(maxae.compute().scalar(), 0.0);
  EXPECT_EQ(r2.compute().scalar(), 1.0);
  EXPECT_DOUBLE_EQ(pearson.compute().scalar(), 1.0);

  MeanSquaredError mse;
  RootMeanSquaredError rmse;
  MeanPairwiseDistance mpd(2.0, 0.0);
  for (Metric* m : std::initializer_list<Metric*>{&mse, &rmse, &mpd}) {
    m->update(batch(doubles({0, 0, 3, 4}).view({2, 2}), doubles({0, 0, 0, 0}).view({2, 2})));
  }
  EXPECT_EQ(mse.compute().scalar(), 25.0 / 4);
  EXPECT_EQ(rmse.compute().scalar(), 2.5);
  EXPECT_EQ(mpd.compute().scalar(), 2.5);  // rows at distance 0 and 5
}

TEST(RegressionTest, MaximumAbsoluteErrorKeepsANanSeenInAnEarlierBatch) {
  MaximumAbsoluteError m;
  auto comm = runtime::make_single_process_communicator();
  m.set_communicator(comm.get());
  m.update(batch(doubles({NAN, 1.0}), doubles({0.0, 0.0})));
  m.update(batch(doubles({100.0}), doubles({0.0})));
  EXPECT_TRUE(std::isnan(m.compute().scalar()));
  EXPECT_EQ(m.sync_plan(), std::vector<std::string>({"all_reduce(sum) int64", "all_reduce(max) float64"}));
}

TEST(RegressionTest, BadInputNamesMetricArgumentExpectedAndGot) {
  MeanAbsoluteError mae;
  EXPECT_EQ(error_of([&] { mae.update(batch(longs({1, 2}), doubles({1, 2}))); }),
            "MeanAbsoluteError: input: expected a floating-point tensor (float32 or float64), got int64 [2]");
  MeanSquaredError mse;
  EXPECT_EQ(error_of([&] { mse.update(batch(doubles({1, 2, 3}), doubles({1, 2, 3, 4}))); }),
            "MeanSquaredError: target: expected the shape of input [3], got float64 [4]");
  EXPECT_EQ(error_of([&] { mse.update(batch(doubles({1}), doubles({1}), doubles({1}))); }),
            "MeanSquaredError: weight: expected nothing (MeanSquaredError takes no sample weights), got float64 [1]");
  R2Score r2;
  EXPECT_EQ(error_of([&] { r2.update(batch(at::zeros({3, 2}, at::kDouble), at::zeros({3, 2}, at::kDouble))); }),
            "R2Score: input: expected predictions shaped [N], got float64 [3, 2]");
  MeanPairwiseDistance mpd;
  EXPECT_EQ(error_of([&] { mpd.update(batch(doubles({1}), doubles({1}))); }),
            "MeanPairwiseDistance: input: expected predictions shaped [N, D], got float64 [1]");
  EXPECT_EQ(error_of([&] { PearsonCorrelation p(at::kFloat); p.update(batch(doubles({1}), {})); }),
            "PearsonCorrelation: target: expected true values shaped [N], got nothing");
  EXPECT_EQ(error_of([] { MeanPairwiseDistance m(0.0); }), "MeanPairwiseDistance: p: expected a finite number > 0, got 0");
  EXPECT_EQ(error_of([] { parse_sum_dtype("Average", "float16"); }),
            "Average: sum_dtype: expected float64 or float32, got \"float16\"");
}

TEST(AggregationTest, HandComputedValuesAndWeights) {
  Average avg;
  avg.update(batch(doubles({1, 2}), {}, doubles({1, 3})));  // weighted: (1 + 6) / 4
  avg.update(batch(doubles({5})));                         // unweighted: weight 1
  EXPECT_DOUBLE_EQ(avg.compute().scalar(), 12.0 / 5);

  Loss ce(Loss::Kind::CrossEntropy);
  ce.update(batch(doubles({0, 0, 5, 5}).view({2, 2}), longs({0, 1})));
  EXPECT_DOUBLE_EQ(ce.compute().scalar(), std::log(2.0));

  GeometricAverage g;
  g.update(batch(doubles({1, 4})));
  g.update(batch(doubles({16})));
  EXPECT_DOUBLE_EQ(g.compute().scalar(), 4.0);

  RunningAverage ra(0.5);
  ra.update(batch(doubles({1, 3})));   // step 1: mean 2
  ra.update(batch(doubles({})));       // step 2: no value, skipped
  ra.update(batch(doubles({5})));      // step 3: 0.5 * 2 + 0.5 * 5
  EXPECT_DOUBLE_EQ(ra.compute().scalar(), 3.5);
  ra.update(batch(doubles({0.5})));    // update after compute: 0.5 * 3.5 + 0.5 * 0.5
  EXPECT_DOUBLE_EQ(ra.compute().scalar(), 2.0);
  EXPECT_EQ(ra.sync_plan(), std::vector<std::string>({"all_reduce(max) int64", "all_reduce(sum) int64",
                                                      "all_reduce(sum) float64"}));
}

TEST(AggregationTest, WeightsSummingToZeroAndBadInput) {
  Average avg;
  avg.update(batch(doubles({1, 2}), {}, doubles({0, 0})));
  EXPECT_EQ(error_of<NotComputableError>([&] { avg.compute(); }),
            "Average: cannot compute: the sample weights sum to 0 on all ranks together");
  EXPECT_EQ(error_of([&] { avg.update(batch(doubles({1, 2}), {}, doubles({1, -1}))); }),
            "Average: weight: expected values >= 0, got -1 at [1]");
  EXPECT_EQ(error_of([&] { avg.update(batch(doubles({1, 2}), {}, doubles({1}))); }),
            "Average: weight: expected floating-point weights shaped [2], got float64 [1]");
  EXPECT_EQ(error_of([&] { avg.update(batch(doubles({1}), doubles({1}))); }),
            "Average: target: expected nothing (Average reads input only), got float64 [1]");
  Loss bce(Loss::Kind::BinaryCrossEntropy);
  EXPECT_EQ(error_of([&] { bce.update(batch(doubles({0.5, 1.2}), longs({0, 1}))); }),
            "Loss: input: expected values in [0, 1], got 1.2 at [1]");
  Loss ce(Loss::Kind::CrossEntropy);
  EXPECT_EQ(error_of([&] { ce.update(batch(at::zeros({2, 3}, at::kDouble), longs({0, 3}))); }),
            "Loss: target: expected values in [0, 3), got 3 at [1]");
  GeometricAverage g;
  EXPECT_EQ(error_of([&] { g.update(batch(doubles({1, -2}))); }),
            "GeometricAverage: input: expected values >= 0, got -2 at [1]");
  EXPECT_EQ(error_of([] { RunningAverage r(0.0); }), "RunningAverage: alpha: expected a number in (0, 1], got 0");
  EXPECT_EQ(error_of([] { Loss::parse_kind("Loss", "hinge"); }).rfind("Loss: loss: expected one of per_sample", 0), 0u);
}

TEST(EpochTest, TiesCountOneHalfAndGatherStatesStartEmpty) {
  RocAuc auc;
  AveragePrecision ap;
  for (Metric* m : std::initializer_list<Metric*>{&auc, &ap}) {
    EXPECT_EQ(error_of<NotComputableError>([&] { m->compute(); }),
              m->name() + ": cannot compute: no samples on any rank");
    m->update(batch(doubles({0.5, 0.5}), longs({0, 1})));
  }
  EXPECT_EQ(auc.compute().scalar(), 0.5);
  EXPECT_EQ(ap.compute().scalar(), 0.5);

  RocAuc one_class;
  one_class.update(batch(doubles({0.1, 0.7}), longs({1, 1})));
  EXPECT_EQ(error_of<NotComputableError>([&] { one_class.compute(); }),
            "RocAuc: cannot compute: ROC AUC needs both classes in target; only class 1 occurs on all ranks together");

  // Any function of the whole epoch.
  EpochMetric positives("Positives", [](const at::Tensor& s, const at::Tensor& t) { return Value(t.sum().item<double>()); });
  positives.update(batch(doubles({0.1, 0.2}), longs({1, 1})));
  positives.update(batch(doubles({}), longs({})));
  positives.update(batch(at::tensor({0.3f}), at::ones({1}, at::kBool)));
  EXPECT_EQ(positives.compute().scalar(), 3.0);
}

TEST(EpochTest, BadInput) {
  RocAuc auc;
  EXPECT_EQ(error_of([&] { auc.update(batch(doubles({0.1, NAN}), longs({0, 1}))); }),
            "RocAuc: input: expected no NaN, got NaN at [1]");
  EXPECT_EQ(error_of([&] { auc.update(batch(doubles({0.1, 0.2}), longs({0, 2}))); }),
            "RocAuc: target: expected values in [0, 2), got 2 at [1]");
  EXPECT_EQ(error_of([&] { auc.update(batch(at::zeros({2, 2}, at::kDouble), longs({0, 1}))); }),
            "RocAuc: input: expected scores shaped [N], got float64 [2, 2]");
  // The one-pass check-and-copy of float32 scores, negative labels, and labels that take the
  // general path (int32): the same errors.
  EXPECT_EQ(error_of([&] { auc.update(batch(at::tensor({0.5f, 0.25f, NAN}), longs({0, 1, 1}))); }),
            "RocAuc: input: expected no NaN, got NaN at [2]");
  EXPECT_EQ(error_of([&] { auc.update(batch(doubles({0.1, 0.2}), longs({-1, 1}))); }),
            "RocAuc: target: expected values in [0, 2), got -1 at [0]");
  EXPECT_EQ(error_of([&] { auc.update(batch(doubles({0.1, 0.2}), longs({0, 3}).to(at::kInt))); }),
            "RocAuc: target: expected values in [0, 2), got 3 at [1]");
  // A rejected batch changed nothing; infinities are not NaN.
  EXPECT_EQ(auc.state_digest(), RocAuc().state_digest());
  auc.update(batch(doubles({-INFINITY, INFINITY, 0.5}), longs({0, 1, 1}).to(at::kInt)));
  EXPECT_DOUBLE_EQ(auc.compute().scalar(), 1.0);
}

TEST(EpochTest, ANewEpochReusesTheRowsOfTheLastWithTheSameResults) {
  // Epoch 1 fills the states' storage with big batches; after reset() epoch 2 writes other
  // batch sizes (one bigger than any block so far) into the same storage: the result is a fresh
  // metric's on the same data, and the digest too.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  RocAuc reused;
  for (int i = 0; i < 3; ++i) reused.update(batch(at::rand({700}, gen, at::kDouble), at::randint(2, {700}, gen, at::kLong)));
  reused.compute();
  reused.reset();
  RocAuc fresh;
  for (std::int64_t n : {5, 0, 900, 3000, 1}) {
    const at::Tensor scores = at::rand({n}, gen, at::kFloat);
    const at::Tensor labels = at::randint(2, {n}, gen, at::kLong);
    reused.update(batch(scores, labels));
    fresh.update(batch(scores, labels));
  }
  EXPECT_EQ(reused.compute().scalar(), fresh.compute().scalar());
  EXPECT_EQ(reused.state_digest(), fresh.state_digest());
}

TEST(ImageTest, PsnrIsTheMeanOfPerImagePsnr) {
  PSNR psnr(1.0);
  // Image 0: MSE 0.01 -> 20 dB; image 1: MSE 0.0001 -> 40 dB. The pooled MSE would give 23.0 dB.
  psnr.update(batch(at::full({2, 1, 2, 2}, 0.5, at::kDouble),
                    at::cat({at::full({1, 1, 2, 2}, 0.6, at::kDouble), at::full({1, 1, 2, 2}, 0.51, at::kDouble)})));
  EXPECT_NEAR(psnr.compute().scalar(), 30.0, 1e-9);
  EXPECT_EQ(error_of([] { PSNR p(0.0); }), "PSNR: data_range: expected a finite number > 0, got 0");
  EXPECT_EQ(error_of([&] { psnr.update(batch(doubles({1}), doubles({1}))); }),
            "PSNR: input: expected images shaped [N, *] (at least 2 dimensions), got float64 [1]");
}

TEST(ConfusionMatrixTest, HandComputedMatrixAndDerivedValues) {
  ConfusionMatrix cm(3);
  IoU iou(3, ClassAverage::None, 1.0);
  Dice dice(3, ClassAverage::None);
  CohenKappa kappa(3);
  for (Metric* m : std::initializer_list<Metric*>{&cm, &iou, &dice, &kappa}) {
    m->update(batch(longs({0, 1, 1, 0}), longs({0, 1, 0, 0})));  // class 2 never seen
  }
  EXPECT_TRUE(values_close(cm.compute(), Value(longs({2, 1, 0, 0, 1, 0, 0, 0, 0}).view({3, 3})), 0, 0));
  EXPECT_TRUE(values_close(iou.compute(), Value(doubles({2.0 / 3, 0.5, 1.0})), 0, 1e-15));
  EXPECT_TRUE(values_close(dice.compute(), Value(doubles({0.8, 2.0 / 3, 0.0})), 0, 1e-15));
  // p_o = 3/4, p_e = (3*2 + 1*2) / 16 = 1/2, kappa = (3/4 - 1/2) / (1 - 1/2)
  EXPECT_DOUBLE_EQ(kappa.compute().scalar(), 0.5);

  CohenKappa single_class(2);
  single_class.update(batch(longs({1, 1}), longs({1, 1})));
  EXPECT_TRUE(std::isnan(single_class.compute().scalar()));
  EXPECT_EQ(error_of([] { IoU m(3, ClassAverage::Macro, 0.5); }), "IoU: zero_division: expected 0 or 1, got 0.5");
  EXPECT_EQ(error_of([] { ConfusionMatrix m(1); }), "ConfusionMatrix: num_classes: expected at least 2 for task multiclass, got 1");
}

}  // namespace
}  // namespace distmetrics::metrics
