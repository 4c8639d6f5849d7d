// Hand-computed edge cases and bad input for the classification metrics.
#include "distmetrics/metrics/classification.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "distmetrics/metrics/errors.h"
#include "test_support.h"

namespace distmetrics::metrics {
namespace {

using testing::values_close;

using testing::batch;
using testing::doubles;
using testing::longs;

const ClassificationOptions kMulticlass3{Task::Multiclass, 3, 0.5};

// The message of the InputError `fn` throws ("" when it throws none).
template <typename Fn>
std::string input_error(Fn&& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ClassificationTest, AllRightAndAllWrong) {
  Accuracy right(kMulticlass3), wrong(kMulticlass3);
  right.update(batch(longs({0, 1, 2, 2}), longs({0, 1, 2, 2})));
  wrong.update(batch(longs({1, 2, 0, 0}), longs({0, 1, 2, 2})));
  EXPECT_EQ(right.compute().scalar(), 1.0);
  EXPECT_EQ(wrong.compute().scalar(), 0.0);

  Precision p(kMulticlass3, Average::Macro);
  Recall r(kMulticlass3, Average::Micro);
  for (Metric* m : std::initializer_list<Metric*>{&p, &r}) m->update(batch(longs({1, 2, 0}), longs({0, 1, 2})));
  EXPECT_EQ(p.compute().scalar(), 0.0);
  EXPECT_EQ(r.compute().scalar(), 0.0);
}

TEST(ClassificationTest, AClassNeverSeenGetsZeroDivision) {
  // Class 2 is neither predicted nor true: its precision and recall are zero_division.
  for (double zd : {0.0, 1.0}) {
    Precision p(kMulticlass3, Average::None, zd);
    Fbeta f(kMulticlass3, 1.0, Average::Macro, zd);
    for (Metric* m : std::initializer_list<Metric*>{&p, &f}) m->update(batch(longs({0, 1, 1}), longs({0, 1, 0})));
    // precision: class 0: 1/1, class 1: 1/2, class 2: zd.  F1: class 0: 2*1*.5/1.5, class 1: 2*.5*1/1.5, class 2: zd
    EXPECT_TRUE(values_close(p.compute(), Value(doubles({1.0, 0.5, zd})), 0, 1e-15));
    EXPECT_NEAR(f.compute().scalar(), (2.0 / 3 + 2.0 / 3 + zd) / 3, 1e-15);
  }
}

TEST(ClassificationTest, OneSample) {
  Accuracy a({Task::Binary});
  a.update(batch(doubles({0.7}), longs({1})));
  EXPECT_EQ(a.compute().scalar(), 1.0);
  Recall r({Task::Binary});
  r.update(batch(doubles({0.2}), longs({1})));
  EXPECT_EQ(r.compute().scalar(), 0.0);
}

TEST(ClassificationTest, NoSamplesIsNotComputable) {
  Accuracy a(kMulticlass3);
  EXPECT_THROW(a.compute(), NotComputableError);
  a.update(batch(at::empty({0, 3}, at::kDouble), at::empty({0}, at::kLong)));  // an empty batch
  try {
    a.compute();
    FAIL() << "expected NotComputableError";
  } catch (const NotComputableError& e) {
    EXPECT_STREQ(e.what(), "Accuracy: cannot compute: no samples on any rank");
  }
  Precision p({Task::Multilabel, 4, 0.5});
  EXPECT_THROW(p.compute(), NotComputableError);
}

TEST(ClassificationTest, ThresholdIsInclusive) {
  Accuracy a({Task::Binary, 0, 0.5});
  a.update(batch(doubles({0.5, 0.49999}), longs({1, 0})));
  EXPECT_EQ(a.compute().scalar(), 1.0);
}

TEST(ClassificationTest, TopKBreaksTiesTowardTheLowerClassLikeArgmax) {
  // Scores tie between classes 0, 1 and 2. Target 1: one tie below it, so its rank is 1.
  const at::Tensor scores = doubles({0.3, 0.3, 0.3, 0.1}).view({1, 4});
  Accuracy top1({Task::Multiclass, 4, 0.5}, 1), top2({Task::Multiclass, 4, 0.5}, 2);
  TopKCategoricalAccuracy k1(1, 4);
  for (Metric* m : std::initializer_list<Metric*>{&top1, &top2, &k1}) m->update(batch(scores, longs({1})));
  EXPECT_EQ(top1.compute().scalar(), 0.0);  // argmax picks class 0
  EXPECT_EQ(k1.compute().scalar(), 0.0);    // the same rule
  EXPECT_EQ(top2.compute().scalar(), 1.0);
}

TEST(ClassificationTest, MultilabelAccuracyNeedsEveryLabelRight) {
  Accuracy a({Task::Multilabel, 3, 0.5});
  a.update(batch(doubles({0.9, 0.1, 0.8, 0.9, 0.9, 0.1}).view({2, 3}), longs({1, 0, 1, 1, 0, 0}).view({2, 3})));
  EXPECT_EQ(a.compute().scalar(), 0.5);
}

TEST(ClassificationTest, NanScoresAreRejectedWithTheirPosition) {
  Accuracy a(kMulticlass3);
  const at::Tensor scores = doubles({0.1, 0.2, 0.3, 0.4, NAN, 0.6}).view({2, 3});
  EXPECT_EQ(input_error([&] { a.update(batch(scores, longs({0, 1}))); }),
            "Accuracy: input: expected no NaN, got NaN at [1, 1]");
  Recall r({Task::Binary});
  EXPECT_EQ(input_error([&] { r.update(batch(doubles({NAN}), longs({1}))); }),
            "Recall: input: expected no NaN, got NaN at [0]");
}

TEST(ClassificationTest, BadInputNamesMetricArgumentExpectedAndGot) {
  Accuracy a(kMulticlass3);
  EXPECT_EQ(input_error([&] { a.update(batch(at::zeros({2, 4}, at::kDouble), longs({0, 1}))); }),
            "Accuracy: input: expected class scores shaped [2, 3] (num_classes = 3) or labels shaped like "
            "target [2], got float64 [2, 4]");
  EXPECT_EQ(input_error([&] { a.update(batch(longs({0, 1}), longs({0, 3}))); }),
            "Accuracy: target: expected values in [0, 3), got 3 at [1]");
  EXPECT_EQ(input_error([&] { a.update(batch(longs({0, -1}), longs({0, 2}))); }),
            "Accuracy: input: expected values in [0, 3), got -1 at [1]");
  EXPECT_EQ(input_error([&] { a.update(batch(longs({0, 1}), doubles({0, 1}))); }),
            "Accuracy: target: expected integer labels (int64, int32, uint8 or bool), got float64 [2]");
  EXPECT_EQ(input_error([&] { a.update(batch(at::Tensor(), longs({0}))); }),
            "Accuracy: input: expected scores or labels, got nothing");
  Batch weighted = batch(longs({0}), longs({0}));
  weighted.weight = doubles({1.0});
  EXPECT_EQ(input_error([&] { a.update(weighted); }),
            "Accuracy: weight: expected nothing (Accuracy takes no sample weights), got float64 [1]");

  Precision binary({Task::Binary});
  EXPECT_EQ(input_error([&] { binary.update(batch(doubles({0.1, 0.2}), longs({0, 1, 1}))); }),
            "Precision: input: expected the shape of target [3], got float64 [2]");
  EXPECT_EQ(input_error([&] { binary.update(batch(longs({0, 2}), longs({0, 1}))); }),
            "Precision: input: expected values in [0, 2), got 2 at [1]");

  Recall multilabel({Task::Multilabel, 3, 0.5});
  EXPECT_EQ(input_error([&] { multilabel.update(batch(at::zeros({2, 2}), at::zeros({2, 2}, at::kLong))); }),
            "Recall: target: expected labels in {0, 1} shaped [N, 3] (one column per label, num_classes = 3), "
            "got int64 [2, 2]");

  Accuracy top2({Task::Multiclass, 3, 0.5}, 2);
  EXPECT_EQ(input_error([&] { top2.update(batch(longs({0}), longs({0}))); }),
            "Accuracy: input: expected class scores shaped [N, 3, *] (top_k = 2 needs scores, not labels), "
            "got int64 [1]");
}

TEST(ClassificationTest, AChangingNumberOfClassesIsRejectedAndLeavesStateAlone) {
  Precision p(kMulticlass3, Average::Macro);
  p.update(batch(at::rand({4, 3}, at::kDouble), longs({0, 1, 2, 0})));
  const std::string digest = p.state_digest();
  EXPECT_NE(input_error([&] { p.update(batch(at::rand({4, 5}, at::kDouble), longs({0, 1, 2, 0}))); }), "");
  EXPECT_EQ(p.state_digest(), digest);
}

TEST(ClassificationTest, BadParametersAreRejectedAtConstruction) {
  EXPECT_EQ(input_error([] { Accuracy a({Task::Multiclass, 0, 0.5}); }),
            "Accuracy: num_classes: expected at least 2 for task multiclass, got 0");
  EXPECT_EQ(input_error([] { Accuracy a({Task::Binary}, 2); }),
            "Accuracy: top_k: expected 1 for task binary (top-k needs class scores), got 2");
  EXPECT_EQ(input_error([] { TopKCategoricalAccuracy a(6, 5); }),
            "TopKCategoricalAccuracy: top_k: expected at most num_classes = 5, got 6");
  EXPECT_EQ(input_error([] { Precision p(kMulticlass3, Average::Macro, 0.5); }),
            "Precision: zero_division: expected 0 or 1, got 0.5");
  EXPECT_EQ(input_error([] { Fbeta f(kMulticlass3, 0.0); }), "Fbeta: beta: expected a number > 0, got 0");
  EXPECT_EQ(input_error([] { parse_task("Accuracy", "multi-class"); }),
            "Accuracy: task: expected one of binary, multiclass, multilabel, got \"multi-class\"");
}

}  // namespace
}  // namespace distmetrics::metrics
