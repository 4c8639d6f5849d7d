// Engine building blocks: close-name suggestions, data generators, shard policies, the script,
// value comparison.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <memory>
#include <set>
#include <stdexcept>

#include "distmetrics/runtime/backends.h"
#include "distmetrics/harness/metric_catalog.h"
#include "distmetrics/harness/metric_id.h"
#include "distmetrics/metrics/registry.h"
#include "distmetrics/harness/compare.h"
#include "distmetrics/harness/data.h"
#include "distmetrics/harness/number_text.h"
#include "distmetrics/metrics/value.h"
#include "distmetrics/runtime/text.h"
#include "distmetrics/harness/placement.h"
#include "distmetrics/harness/script.h"
#include "distmetrics/harness/shard.h"
#include "engine_data_helpers.h"

namespace dh = distmetrics::harness;
namespace dr = distmetrics::runtime;
using nlohmann::json;
using distmetrics::harness::testing_data::fnv;
using distmetrics::harness::testing_data::spec;

// --- names --------------------------------------------------------------------------------------

TEST(Names, SuggestsTyposAndPrefixes) {
  const std::vector<std::string> known = {"even", "uneven", "empty_rank", "skewed", "round_robin", "scattered", "padded"};
  EXPECT_EQ(dr::closest_names("evne", known), (std::vector<std::string>{"even"}));
  EXPECT_EQ(dr::closest_names("round-robin", known).front(), "round_robin");
  EXPECT_EQ(dr::closest_names("empty", known).front(), "empty_rank");
  EXPECT_TRUE(dr::closest_names("zzzzzz", known).empty());
  EXPECT_EQ(dr::did_you_mean("padd", known), "; did you mean 'padded'?");
  EXPECT_EQ(dr::did_you_mean("qqqqqqq", known), "");
  EXPECT_EQ(dr::closest_names("ACCURACY", {"Accuracy", "TopKCategoricalAccuracy"}).front(), "Accuracy");
}

// A catalog with the reference library and a Python source knows a name twice (their Accuracy)
// and several hundred names in all: it lists each name once, as the first registry wins, and the
// "known" list of an error stops at its limit with the count left.
TEST(Names, TheCatalogListsANameOnceAndTheKnownListIsBounded) {
  static distmetrics::metrics::MetricRegistry again = [] {
    distmetrics::metrics::MetricRegistry r;
    for (const char* name : {"Accuracy", "NamesTestOnlyMetric"}) {
      distmetrics::metrics::MetricSpec spec;
      spec.name = name;
      spec.make = [](const nlohmann::json&) -> std::unique_ptr<distmetrics::metrics::Metric> {
        throw std::logic_error("only named in this test, never built");
      };
      r.add(spec);
    }
    return r;
  }();
  auto& catalog = dh::MetricCatalog::instance();
  catalog.add("names-test", &again);
  const auto names = catalog.metric_names();
  EXPECT_EQ(std::count(names.begin(), names.end(), "Accuracy"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "NamesTestOnlyMetric"), 1);
  EXPECT_EQ(dr::did_you_mean("Acuracy", names), "; did you mean 'Accuracy'?");

  EXPECT_EQ(dr::known_list({"a", "b", "c"}, "see the list"), "'a', 'b', 'c'");
  std::vector<std::string> many;
  for (int i = 0; i < 300; ++i) many.push_back("m" + std::to_string(i));
  EXPECT_EQ(dr::known_list(many, "`distmetrics metrics` lists them", 3),
            "'m0', 'm1', 'm2' and 297 more: `distmetrics metrics` lists them");
  EXPECT_EQ(dr::known_list(many, "x"), dr::known_list(many, "x", 20));
}

// --- data ---------------------------------------------------------------------------------------

namespace {

std::uint64_t dataset_fnv(const dh::Dataset& d) {
  namespace td = distmetrics::harness::testing_data;
  return td::fnv(d.weight, td::fnv(d.target, td::fnv(d.input)));
}

}  // namespace

// The one home of a text's first line and of numbers as messages show them (issue 46).
TEST(Text, FirstLineIsTheTextUpToItsFirstNewline) {
  EXPECT_EQ(dr::first_line("InputError: bad shape\n  at update()\n"), "InputError: bad shape");
  EXPECT_EQ(dr::first_line("one line"), "one line");
  EXPECT_EQ(dr::first_line("\nafter an empty first line"), "");
  EXPECT_EQ(dr::first_line(""), "");
}

TEST(Text, NumbersShowTheirSignificantDigits) {
  EXPECT_EQ(distmetrics::harness::number_text(0.5), "0.5");
  EXPECT_EQ(distmetrics::harness::number_text(1.0 / 3.0), "0.333333");
  EXPECT_EQ(distmetrics::harness::number_text(123456789.0), "1.23457e+08");
  EXPECT_EQ(distmetrics::harness::number_text(1e-7), "1e-07");
  EXPECT_EQ(distmetrics::harness::number_text(1.0 / 3.0, 10), "0.3333333333");
  EXPECT_EQ(distmetrics::harness::number_text(2.5, 3), "2.5");
  EXPECT_EQ(distmetrics::harness::number_text(INFINITY), "inf");
  EXPECT_EQ(distmetrics::harness::number_text(-INFINITY, 10), "-inf");
  EXPECT_EQ(distmetrics::harness::number_text(std::nan("")), "nan");
  EXPECT_EQ(distmetrics::harness::number_text(-std::nan("")), "nan");  // the stream would write "-nan"
}

TEST(Text, FixedNumbersShowExactlyTheirDecimals) {
  EXPECT_EQ(distmetrics::harness::fixed_text(1.5, 2), "1.50");
  EXPECT_EQ(distmetrics::harness::fixed_text(0.1234, 3), "0.123");
  EXPECT_EQ(distmetrics::harness::fixed_text(12.96, 1), "13.0");
  EXPECT_EQ(distmetrics::harness::fixed_text(600, 1), "600.0");
}

TEST(Text, SecondsShowTwoDigitsUnderTenAndThreeFromThere) {
  EXPECT_EQ(distmetrics::harness::seconds_text(0.25), "0.25");
  EXPECT_EQ(distmetrics::harness::seconds_text(1.5), "1.5");
  EXPECT_EQ(distmetrics::harness::seconds_text(1.2345), "1.2");
  EXPECT_EQ(distmetrics::harness::seconds_text(9.94), "9.9");
  EXPECT_EQ(distmetrics::harness::seconds_text(12.34), "12.3");
  EXPECT_EQ(distmetrics::harness::seconds_text(300), "300");
  EXPECT_EQ(distmetrics::harness::seconds_text(1234.5), "1.23e+03");
}

TEST(Data, ShapesAndDtypesFollowTheBatchConventions) {
  auto mc = dh::generate_data(spec("multiclass", {{"num_classes", 4}}, 10));
  EXPECT_EQ(mc.input.sizes(), (std::vector<std::int64_t>{10, 4}));
  EXPECT_EQ(mc.input.scalar_type(), at::kFloat);
  EXPECT_EQ(mc.target.sizes(), (std::vector<std::int64_t>{10}));
  EXPECT_EQ(mc.target.scalar_type(), at::kLong);
  EXPECT_FALSE(mc.weight.defined());

  auto labels = dh::generate_data(spec("multiclass", {{"num_classes", 4}, {"output", "labels"}}, 10, "float64"));
  EXPECT_EQ(labels.input.sizes(), (std::vector<std::int64_t>{10}));
  EXPECT_EQ(labels.input.scalar_type(), at::kLong);
  EXPECT_TRUE(labels.input.ge(0).all().item<bool>() && labels.input.lt(4).all().item<bool>());

  auto probs = dh::generate_data(spec("multiclass", {{"num_classes", 3}, {"output", "probabilities"}}, 6, "float64"));
  EXPECT_TRUE(at::allclose(probs.input.sum(1), at::ones({6}, at::kDouble)));

  auto bin = dh::generate_data(spec("binary", {{"output", "probabilities"}}, 8));
  EXPECT_EQ(bin.input.sizes(), bin.target.sizes());
  EXPECT_TRUE(bin.input.ge(0).all().item<bool>() && bin.input.le(1).all().item<bool>());

  auto ml = dh::generate_data(spec("multilabel", {{"num_labels", 5}, {"output", "labels"}}, 8));
  EXPECT_EQ(ml.input.sizes(), (std::vector<std::int64_t>{8, 5}));
  EXPECT_EQ(ml.target.sizes(), (std::vector<std::int64_t>{8, 5}));

  auto seg = dh::generate_data(spec("segmentation", {{"num_classes", 3}, {"height", 4}, {"width", 5}}, 2));
  EXPECT_EQ(seg.input.sizes(), (std::vector<std::int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(seg.target.sizes(), (std::vector<std::int64_t>{2, 4, 5}));
  // The labels are the argmax of the logits along the class dimension.
  auto seg_labels = dh::generate_data(spec("segmentation", {{"num_classes", 3}, {"height", 4}, {"width", 5}, {"output", "labels"}}, 2));
  EXPECT_TRUE(seg_labels.input.equal(seg.input.argmax(1)));

  auto reg = dh::generate_data(spec("regression", {{"dims", 3}}, 5, "float64"));
  EXPECT_EQ(reg.input.sizes(), (std::vector<std::int64_t>{5, 3}));
  EXPECT_EQ(reg.target.scalar_type(), at::kDouble);

  auto values = dh::generate_data(spec("values", {{"distribution", "integers"}, {"low", 3}, {"high", 5}, {"weights", "integers"},
                                                  {"weight_low", 1000}, {"weight_high", 1002}}, 50, "float64"));
  EXPECT_FALSE(values.target.defined());
  EXPECT_TRUE(values.input.ge(3).all().item<bool>() && values.input.le(5).all().item<bool>());
  EXPECT_TRUE(values.input.eq(values.input.round()).all().item<bool>());
  EXPECT_TRUE(values.weight.ge(1000).all().item<bool>() && values.weight.le(1002).all().item<bool>());

  auto images = dh::generate_data(spec("images", {{"channels", 1}, {"data_range", 255.0}}, 3));
  EXPECT_EQ(images.input.sizes(), (std::vector<std::int64_t>{3, 1, 8, 8}));
  EXPECT_TRUE(images.input.ge(0).all().item<bool>() && images.input.le(255).all().item<bool>());

  auto scores = dh::generate_data(spec("scores", {{"ties", true}}, 40));
  EXPECT_LT(std::get<0>(at::_unique(scores.input)).numel(), 40);  // ties on a coarse grid
}

TEST(Data, FairnessGroupsAndTheirRates) {
  auto d = dh::generate_data(spec("fairness", {{"groups", 2}, {"positive_rate", 0.1}, {"group_shift", 0.8},
                                               {"group_weights", {3, 1}}}, 400, "float64"));
  EXPECT_EQ(d.input.sizes(), (std::vector<std::int64_t>{400}));
  EXPECT_TRUE(d.input.gt(0).all().item<bool>() && d.input.lt(1).all().item<bool>());
  ASSERT_EQ(d.target.sizes(), (std::vector<std::int64_t>{400, 2}));
  auto label = d.target.select(1, 0), group = d.target.select(1, 1);
  EXPECT_TRUE(group.ge(0).all().item<bool>() && group.lt(2).all().item<bool>());
  const double share1 = group.eq(1).to(at::kDouble).mean().item<double>();  // weights 3:1
  EXPECT_GT(share1, 0.15);
  EXPECT_LT(share1, 0.35);
  // Group 0's positive rate 0.1, group 1's 0.9.
  EXPECT_LT(label.masked_select(group.eq(0)).to(at::kDouble).mean().item<double>(), 0.25);
  EXPECT_GT(label.masked_select(group.eq(1)).to(at::kDouble).mean().item<double>(), 0.75);
  auto labels = dh::generate_data(spec("fairness", {{"output", "labels"}}, 20));
  EXPECT_EQ(labels.input.scalar_type(), at::kLong);
  EXPECT_THROW(dh::resolve_generator_params("fairness", {{"groups", 2}, {"group_weights", {1, 2, 3}}}), std::exception);
}

TEST(Data, TokenLogitsPadPositionsAndWholeSequences) {
  auto d = dh::generate_data(spec("token_logits", {{"vocab", 6}, {"seq_len", 5}, {"ignore_index", -100},
                                                   {"ignore_rate", 0.25}, {"padded_rate", 0.2}}, 400, "float64"));
  ASSERT_EQ(d.input.sizes(), (std::vector<std::int64_t>{400, 5, 6}));
  ASSERT_EQ(d.target.sizes(), (std::vector<std::int64_t>{400, 5}));
  EXPECT_EQ(d.target.scalar_type(), at::kLong);
  auto ignored = d.target.eq(-100);
  EXPECT_TRUE(d.target.masked_select(ignored.logical_not()).ge(0).all().item<bool>());
  EXPECT_TRUE(d.target.masked_select(ignored.logical_not()).lt(6).all().item<bool>());
  // Whole padded sequences: about 0.2 of them (and 0.25^5 by chance); positions: 0.2 + 0.8 * 0.25.
  const double padded = ignored.all(1).to(at::kDouble).mean().item<double>();
  EXPECT_GT(padded, 0.12);
  EXPECT_LT(padded, 0.28);
  const double positions = ignored.to(at::kDouble).mean().item<double>();
  EXPECT_GT(positions, 0.33);
  EXPECT_LT(positions, 0.47);
  // separation 1.5: the next token's logit is the largest more often than 1 in 6.
  auto kept = ignored.logical_not();
  auto hits = d.input.argmax(2).eq(d.target).logical_and(kept).sum().item<double>() / kept.sum().item<double>();
  EXPECT_GT(hits, 0.4);
  auto probs = dh::generate_data(spec("token_logits", {{"output", "probabilities"}}, 3, "float64"));
  EXPECT_TRUE(at::allclose(probs.input.sum(2), at::ones({3, 4}, at::kDouble)));
  auto none = dh::generate_data(spec("token_logits", {{"ignore_rate", 0.0}, {"padded_rate", 0.0}}, 10));
  EXPECT_FALSE(none.target.eq(-100).any().item<bool>());
  // A padding index inside the vocabulary is refused, naming the field.
  try {
    dh::resolve_generator_params("token_logits", {{"vocab", 5}, {"ignore_index", 3}});
    ADD_FAILURE() << "ignore_index inside the vocabulary was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("ignore_index 3 is a token of the vocabulary [0, 5)"), std::string::npos) << e.what();
  }
}

TEST(Data, WaveformsAreSourcesAnEstimateAndItsPermutation) {
  auto d = dh::generate_data(spec("waveforms", {{"sources", 3}, {"length", 50}, {"noise", 0.0}, {"gain", 2.0}}, 6, "float64"));
  ASSERT_EQ(d.input.sizes(), (std::vector<std::int64_t>{6, 3, 50}));
  ASSERT_EQ(d.target.sizes(), (std::vector<std::int64_t>{6, 3, 50}));
  // No noise: the estimate is the gain times the sources, in their order.
  EXPECT_TRUE(at::allclose(d.input, d.target * 2.0));
  // Every source is a signal (not silence), and sources differ from each other.
  EXPECT_TRUE(d.target.abs().amax(2).gt(0.1).all().item<bool>());
  EXPECT_FALSE(at::allclose(d.target.select(1, 0), d.target.select(1, 1)));
  // permuted: each sample's estimate is a non-identity rotation of its sources.
  auto perm = dh::generate_data(spec("waveforms", {{"sources", 3}, {"length", 50}, {"noise", 0.0}, {"permuted", true}}, 6,
                                     "float64"));
  for (std::int64_t i = 0; i < 6; ++i) {
    auto est = perm.input[i], src = perm.target[i];
    const bool by1 = at::allclose(est, at::roll(src, {-1}, {0})), by2 = at::allclose(est, at::roll(src, {-2}, {0}));
    EXPECT_TRUE(by1 || by2) << "sample " << i << " is not a rotation of its sources";
    EXPECT_FALSE(at::allclose(est, src)) << "sample " << i << " kept its sources' order";
  }
  // The noise's standard deviation is the parameter.
  auto noisy = dh::generate_data(spec("waveforms", {{"length", 400}, {"noise", 0.5}}, 20, "float64"));
  EXPECT_NEAR((noisy.input - noisy.target).std().item<double>(), 0.5, 0.03);
  EXPECT_THROW(dh::resolve_generator_params("waveforms", {{"sources", 1}, {"permuted", true}}), std::exception);
}

TEST(Data, DistributionsAreRowsThatSumToOneWithExactZeros) {
  auto d = dh::generate_data(spec("distributions", {{"dims", 5}, {"zeros", 0.3}}, 200, "float64"));
  ASSERT_EQ(d.input.sizes(), (std::vector<std::int64_t>{200, 5}));
  EXPECT_TRUE(at::allclose(d.input.sum(1), at::ones({200}, at::kDouble)));
  EXPECT_TRUE(at::allclose(d.target.sum(1), at::ones({200}, at::kDouble)));
  EXPECT_TRUE(d.input.gt(0).all().item<bool>());  // p has no zero: KL(p || q) finite where q has mass
  // About 0.3 of q's entries past the first are exactly 0; the first never.
  const double share = d.target.slice(1, 1).eq(0).to(at::kDouble).mean().item<double>();
  EXPECT_GT(share, 0.22);
  EXPECT_LT(share, 0.38);
  EXPECT_TRUE(d.target.select(1, 0).gt(0).all().item<bool>());
  // The same distributions as log-probabilities and logits (their softmax is the probabilities).
  auto logs = dh::generate_data(spec("distributions", {{"dims", 5}, {"output", "log_probabilities"}}, 20, "float64"));
  auto probs = dh::generate_data(spec("distributions", {{"dims", 5}}, 20, "float64"));
  EXPECT_TRUE(at::allclose(logs.input.exp(), probs.input));
  auto logits = dh::generate_data(spec("distributions", {{"dims", 5}, {"output", "logits"}}, 20, "float64"));
  EXPECT_TRUE(at::allclose(logits.input.softmax(1), probs.input));
  // divergence 0: p equals q.
  auto same = dh::generate_data(spec("distributions", {{"divergence", 0.0}}, 10, "float64"));
  EXPECT_TRUE(at::allclose(same.input, same.target));
  EXPECT_THROW(dh::resolve_generator_params("distributions", {{"zeros", 0.5}, {"target_output", "logits"}}), std::exception);
}

TEST(Data, RetrievalQueriesFollowTheirLayout) {
  // interleaved: document i belongs to query i mod Q, so every query spans every contiguous shard.
  auto inter = dh::generate_data(spec("retrieval", {{"queries", 3}, {"empty_queries", 1}}, 30, "float64"));
  EXPECT_EQ(inter.input.sizes(), (std::vector<std::int64_t>{30}));
  EXPECT_EQ(inter.input.scalar_type(), at::kDouble);
  ASSERT_EQ(inter.target.sizes(), (std::vector<std::int64_t>{30, 2}));
  EXPECT_EQ(inter.target.scalar_type(), at::kLong);
  auto rel = inter.target.select(1, 0), query = inter.target.select(1, 1);
  for (std::int64_t i = 0; i < 30; ++i) EXPECT_EQ(query[i].item<std::int64_t>(), i % 3);
  EXPECT_TRUE(rel.ge(0).all().item<bool>() && rel.le(1).all().item<bool>());
  EXPECT_EQ(rel.masked_select(query.eq(0)).sum().item<std::int64_t>(), 0);  // empty_queries = 1: query 0 has none
  EXPECT_GT(rel.masked_select(query.ne(0)).sum().item<std::int64_t>(), 0);
  // blocks: `block` consecutive documents a query.
  auto blocks = dh::generate_data(spec("retrieval", {{"layout", "blocks"}, {"block", 4}}, 10));
  auto bq = blocks.target.select(1, 1);
  for (std::int64_t i = 0; i < 10; ++i) EXPECT_EQ(bq[i].item<std::int64_t>(), i / 4);
  // random: ids in [0, Q); graded relevance in [0, max_relevance] and some above 1.
  auto graded = dh::generate_data(
      spec("retrieval", {{"layout", "random"}, {"queries", 5}, {"relevance", "graded"}, {"max_relevance", 4},
                         {"positive_rate", 0.8}}, 200));
  auto gq = graded.target.select(1, 1), gr = graded.target.select(1, 0);
  EXPECT_TRUE(gq.ge(0).all().item<bool>() && gq.lt(5).all().item<bool>());
  EXPECT_EQ(std::get<0>(at::_unique(gq)).numel(), 5);
  EXPECT_TRUE(gr.ge(0).all().item<bool>() && gr.le(4).all().item<bool>());
  EXPECT_TRUE(gr.gt(1).any().item<bool>());
  // Relevant documents score higher on average (separation 1 a grade).
  auto s = inter.input;
  EXPECT_GT(s.masked_select(rel.eq(1)).mean().item<double>(), s.masked_select(rel.eq(0)).mean().item<double>());
  auto probs = dh::generate_data(spec("retrieval", {{"output", "probabilities"}}, 30, "float64"));
  EXPECT_TRUE(probs.input.gt(0).all().item<bool>() && probs.input.lt(1).all().item<bool>());
  EXPECT_TRUE(at::equal(probs.target, dh::generate_data(spec("retrieval", json::object(), 30, "float64")).target));
  // A row made alone is the same row as in the whole data.
  const auto lazy = dh::generate_lazy_data(spec("retrieval", {{"queries", 3}, {"empty_queries", 1}}, 30, "float64"));
  const auto some = lazy.rows({7, 2, 29});
  EXPECT_TRUE(at::equal(some.target, inter.target.index_select(0, at::tensor(std::vector<std::int64_t>{7, 2, 29}))));
  EXPECT_TRUE(at::equal(some.input, inter.input.index_select(0, at::tensor(std::vector<std::int64_t>{7, 2, 29}))));
}

TEST(Data, SameBytesEveryTimeWhateverTheTorchSeed) {
  const auto s = spec("multiclass", {{"num_classes", 5}, {"class_weights", {5, 1, 1, 1, 1}}, {"weights", "uniform"}}, 64);
  const auto first = dh::generate_data(s);
  at::manual_seed(12345);
  (void)at::rand({100});
  const auto second = dh::generate_data(s);
  EXPECT_TRUE(first.input.equal(second.input));
  EXPECT_TRUE(first.target.equal(second.target));
  EXPECT_TRUE(first.weight.equal(second.weight));
  // Pinned: a change to the generators (which would change every scenario's data) shows here.
  EXPECT_EQ(dataset_fnv(first), dataset_fnv(second));
  EXPECT_EQ(dataset_fnv(dh::generate_data(spec("binary", json::object(), 16, "float64", 1))), 0x7912b7334a4d5e65ULL)
      << "binary data of seed 1 changed";
}

TEST(Data, PrefixStableAndSeedDependent) {
  const auto small = dh::generate_data(spec("regression", json::object(), 10));
  const auto large = dh::generate_data(spec("regression", json::object(), 30));
  EXPECT_TRUE(small.input.equal(large.input.slice(0, 0, 10)));
  const auto other = dh::generate_data(spec("regression", json::object(), 10, "float32", 8));
  EXPECT_FALSE(small.input.equal(other.input));
}

TEST(Data, ImbalanceAndRatesAreHonoured) {
  const auto imbalanced = dh::generate_data(spec("multiclass", {{"num_classes", 3}, {"class_weights", {8, 1, 1}}}, 2000));
  const double share0 = imbalanced.target.eq(0).to(at::kDouble).mean().item<double>();
  EXPECT_NEAR(share0, 0.8, 0.05);
  const auto rare = dh::generate_data(spec("binary", {{"positive_rate", 0.1}}, 2000));
  EXPECT_NEAR(rare.target.to(at::kDouble).mean().item<double>(), 0.1, 0.03);
  // Informative scores: logits favour the true class well above chance.
  const auto mc = dh::generate_data(spec("multiclass", {{"num_classes", 4}}, 2000));
  const double acc = mc.input.argmax(1).eq(mc.target).to(at::kDouble).mean().item<double>();
  EXPECT_GT(acc, 0.4);
  EXPECT_LT(acc, 0.95);
}

TEST(Data, BadParametersNameTheField) {
  auto field_of = [](const std::string& gen, json params) {
    try {
      dh::resolve_generator_params(gen, params);
    } catch (const dr::FieldError& e) {
      return e.field() + " | " + e.what();
    }
    return std::string("no error");
  };
  EXPECT_NE(field_of("multiclass", json::object()).find("num_classes | "), std::string::npos);  // required
  EXPECT_NE(field_of("multiclass", {{"num_classes", 3}, {"num_clases", 3}}).find("did you mean 'num_classes'"), std::string::npos);
  EXPECT_EQ(field_of("multiclass", {{"num_classes", "three"}}).rfind("num_classes | ", 0), 0u);
  EXPECT_NE(field_of("multiclass", {{"num_classes", 3}, {"class_weights", {1, 2}}}).find("class_weights | "), std::string::npos);
  EXPECT_NE(field_of("binary", {{"output", "logit"}}).find("did you mean 'logits'"), std::string::npos);
  EXPECT_NE(field_of("binary", {{"positive_rate", 1.5}}).find("positive_rate | "), std::string::npos);
  EXPECT_NE(field_of("values", {{"low", 2}, {"high", 1}}).find("high | "), std::string::npos);
  EXPECT_NE(field_of("multiclas", json::object()).find("did you mean 'multiclass'"), std::string::npos);
}

TEST(Data, RowsSelectsInTheGivenOrder) {
  const auto d = dh::generate_data(spec("regression", json::object(), 10, "float64"));
  const auto batch = d.rows({7, 2});
  EXPECT_EQ(batch.size(), 2);
  EXPECT_EQ(batch.input[0].item<double>(), d.input[7].item<double>());
  EXPECT_EQ(batch.target[1].item<double>(), d.target[2].item<double>());
  EXPECT_EQ(d.rows({}).size(), 0);
}

// --- shards -------------------------------------------------------------------------------------

namespace {

std::vector<double> keys(std::int64_t n) {
  std::vector<double> k(n);
  for (std::int64_t i = 0; i < n; ++i) k[i] = static_cast<double>((i * 7) % 3);  // labels 0, 1, 2 mixed
  return k;
}

std::multiset<std::int64_t> handed_out(const dh::ShardPlan& plan) {
  std::multiset<std::int64_t> all;
  for (const auto& rank : plan.ranks)
    for (const auto& batch : rank) all.insert(batch.begin(), batch.end());
  return all;
}

}  // namespace

TEST(Shards, EveryPolicyHandsOutEverySampleOnceExceptPadding) {
  for (const auto& policy : dh::shard_policy_names()) {
    for (int ws : {1, 2, 3, 4}) {
      for (std::int64_t n : {0, 1, 5, 23, 64}) {
        if (ws < dh::find_shard_policy(policy)->min_world_size) continue;
        const auto plan = dh::make_shard_plan(policy, keys(n), ws, 4, 11);
        ASSERT_EQ(plan.ranks.size(), static_cast<std::size_t>(ws)) << policy;
        const auto all = handed_out(plan);
        std::set<std::int64_t> unique(all.begin(), all.end());
        EXPECT_EQ(static_cast<std::int64_t>(unique.size()), n) << policy << " ws" << ws << " n" << n;
        EXPECT_EQ(static_cast<std::int64_t>(all.size()), n + plan.duplicates) << policy;
        if (policy != "padded") {
          EXPECT_EQ(plan.duplicates, 0);
        }
        for (const auto& rank : plan.ranks)
          for (const auto& batch : rank) {
            EXPECT_LE(batch.size(), 4u);
            EXPECT_FALSE(batch.empty());
            EXPECT_TRUE(std::is_sorted(batch.begin(), batch.end()) || policy == "padded");
          }
      }
    }
  }
}

TEST(Shards, PoliciesSplitAsDocumented) {
  const auto even = dh::make_shard_plan("even", keys(10), 3, 2, 0);
  EXPECT_EQ(even.samples_of(0), 4);
  EXPECT_EQ(even.samples_of(1), 3);
  EXPECT_EQ(even.ranks[1][0], (dh::SampleIndices{4, 5}));

  const auto empty = dh::make_shard_plan("empty_rank", keys(10), 3, 4, 0);
  EXPECT_EQ(empty.samples_of(2), 0);
  EXPECT_EQ(empty.samples_of(0) + empty.samples_of(1), 10);

  const auto rr = dh::make_shard_plan("round_robin", keys(10), 2, 3, 0);
  EXPECT_EQ(rr.ranks[0][0], (dh::SampleIndices{0, 1, 2}));
  EXPECT_EQ(rr.ranks[1][0], (dh::SampleIndices{3, 4, 5}));
  EXPECT_EQ(rr.ranks[0][1], (dh::SampleIndices{6, 7, 8}));
  EXPECT_EQ(rr.ranks[1][1], (dh::SampleIndices{9}));

  const auto sc = dh::make_shard_plan("scattered", keys(7), 3, 8, 0);
  EXPECT_EQ(sc.ranks[1][0], (dh::SampleIndices{1, 4}));

  // DistributedSampler(shuffle=False): 7 samples on 3 ranks pad to 9 with samples 0 and 1.
  const auto pad = dh::make_shard_plan("padded", keys(7), 3, 8, 0);
  EXPECT_EQ(pad.duplicates, 2);
  EXPECT_EQ(pad.ranks[0][0], (dh::SampleIndices{0, 3, 6}));
  EXPECT_EQ(pad.ranks[1][0], (dh::SampleIndices{1, 4, 0}));
  EXPECT_EQ(pad.ranks[2][0], (dh::SampleIndices{2, 5, 1}));

  // Label skew: rank 0 holds the smallest labels.
  const auto skew = dh::make_shard_plan("skewed", keys(30), 3, 100, 0);
  for (auto i : skew.ranks[0][0]) EXPECT_EQ(keys(30)[i], 0.0);
  for (auto i : skew.ranks[2][0]) EXPECT_EQ(keys(30)[i], 2.0);

  // Uneven: seeded, so the same sizes every time, and not all equal.
  const auto a = dh::make_shard_plan("uneven", keys(100), 4, 8, 3);
  const auto b = dh::make_shard_plan("uneven", keys(100), 4, 8, 3);
  std::vector<std::int64_t> sizes;
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(a.samples_of(r), b.samples_of(r));
    sizes.push_back(a.samples_of(r));
  }
  EXPECT_NE(*std::min_element(sizes.begin(), sizes.end()), *std::max_element(sizes.begin(), sizes.end()));
}

// --- placements ---------------------------------------------------------------------------------

TEST(Placements, DevicesAndSkips) {
  const c10::Device gpu1(c10::kCUDA, 1);
  EXPECT_TRUE(dh::place("cpu", 1, gpu1).state.is_cpu());
  EXPECT_EQ(dh::place("cuda", 1, gpu1).state, gpu1);
  EXPECT_EQ(dh::place("cuda0", 3, gpu1).input, c10::Device(c10::kCUDA, 0));
  EXPECT_TRUE(dh::place("cpu_state_cuda_input", 1, gpu1).state.is_cpu());
  EXPECT_EQ(dh::place("cpu_state_cuda_input", 1, gpu1).input, gpu1);
  EXPECT_TRUE(dh::place("mixed", 0, gpu1).state.is_cpu());
  EXPECT_TRUE(dh::place("mixed", 1, gpu1).state.is_cuda());
  // Skip reasons depend on the build (a CUDA LibTorch from pip has no Gloo) and on the GPU count
  // given, never on the GPUs of the machine the test runs on.
  const auto built = dr::compiled_backends();
  const bool gloo_built = std::find(built.begin(), built.end(), "gloo") != built.end();
  const auto cuda = dh::skip_reason("cuda", "gloo", 2, 0);
  ASSERT_TRUE(cuda);
  if (gloo_built) {
    EXPECT_FALSE(dh::skip_reason("cpu", "gloo", 4, 0));
    // gloo's ranks may share a GPU: one is all a GPU placement needs, at any world size.
    EXPECT_EQ(cuda->text, "needs a GPU (placement cuda on gloo: its ranks may share one), 0 visible");
    EXPECT_EQ(cuda->gist, "needs a GPU");  // what the views group it by: no view cuts the sentence
  } else {
    EXPECT_EQ(cuda->text.rfind("gloo: this build has no Gloo", 0), 0u) << cuda->text;
    EXPECT_EQ(cuda->text.rfind(cuda->gist, 0), 0u) << cuda->gist;
  }
  const auto nccl = dh::skip_reason("cpu", "nccl", 2, 1);
  ASSERT_TRUE(nccl);  // 1 GPU given, or no NCCL in this build
  EXPECT_EQ(nccl->text.rfind("nccl: ", 0), 0u) << nccl->text;
  if (std::find(built.begin(), built.end(), "nccl") != built.end()) {
    EXPECT_EQ(nccl->text, "nccl: needs 2 GPUs (one per rank), 1 visible");
    EXPECT_EQ(nccl->gist, "nccl: needs 2 GPUs");
  } else {
    EXPECT_EQ(*nccl, dr::Unavailable("nccl: this build has no NCCL", " (it needs a CUDA LibTorch)"));
  }
  EXPECT_EQ(dh::comm_device_for("cpu", "nccl"), "cuda");
  EXPECT_EQ(dh::comm_device_for("cpu", "mpi"), "cpu");
}

// --- script -------------------------------------------------------------------------------------

TEST(Script, ParsesStepsAndRejectsBadOnes) {
  EXPECT_EQ(dh::parse_step("update").count, 1);
  EXPECT_EQ(dh::parse_step("update 3").count, 3);
  EXPECT_EQ(dh::parse_step("update 50%").amount, dh::Step::Amount::Percent);
  EXPECT_EQ(dh::parse_step("update rest").amount, dh::Step::Amount::Rest);
  EXPECT_EQ(dh::parse_step("update 1 ranks=0,2").ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(dh::parse_step("replay").op, dh::Step::Op::Replay);
  for (const char* bad : {"", "updat", "update 0", "update 1.5", "update 150%", "compute 2", "reset ranks=1",
                          "update ranks=", "update x ranks=1", "update 1 ranks=a"})
    EXPECT_THROW(dh::parse_step(bad), std::invalid_argument) << bad;
  EXPECT_EQ(dh::check_script({dh::parse_step("replay"), dh::parse_step("compute")}).size(), 1u);
  EXPECT_EQ(dh::check_script({dh::parse_step("update")}).size(), 1u);
}

TEST(Script, DefaultScriptGivesEveryRole) {
  std::vector<dh::Step> script;
  for (const auto& text : dh::default_script_text()) script.push_back(dh::parse_step(text));
  const auto plan = dh::simulate_script(script, {5, 2, 0});
  ASSERT_EQ(plan.computes.size(), 4u);
  EXPECT_EQ(plan.computes[0].role, dh::ComputeRole::Fresh);
  EXPECT_EQ(plan.computes[0].fed, (std::vector<std::size_t>{3, 1, 0}));  // ceil(50%)
  EXPECT_FALSE(plan.computes[0].all_data);
  EXPECT_EQ(plan.computes[1].role, dh::ComputeRole::Repeat);
  EXPECT_EQ(plan.computes[1].previous, 0);
  EXPECT_EQ(plan.computes[2].role, dh::ComputeRole::AfterUpdate);
  EXPECT_TRUE(plan.computes[2].all_data);
  EXPECT_EQ(plan.computes[3].role, dh::ComputeRole::AfterReset);
  // The replay feeds the batches of compute 3 again, but compute 3 came after another compute
  // in its epoch (it shows an in-place sync too): judged against the single process instead.
  EXPECT_EQ(plan.computes[3].replay_of, -1);
  const auto replay_twice = dh::simulate_script({dh::parse_step("update"), dh::parse_step("compute"), dh::parse_step("reset"),
                                                 dh::parse_step("replay"), dh::parse_step("compute")},
                                                {2, 2});
  EXPECT_EQ(replay_twice.computes[1].replay_of, 0);  // the first compute of its epoch on the same batches
  EXPECT_EQ(plan.steps[8].feed[0], (std::pair<std::size_t, std::size_t>{0, 5}));  // the replay
  // An empty batch on rank 0 alone, then on every rank, before the compute after more updates.
  EXPECT_EQ(plan.steps[3].empty_update, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(plan.steps[5].empty_update, (std::vector<bool>{true, true, true}));
  EXPECT_EQ(plan.computes[2].step, 6);
  // per_step: no empty updates (the reference would take one step fewer).
  EXPECT_EQ(dh::default_script_text("per_step"),
            (std::vector<std::string>{"update 50%", "compute", "compute", "update rest", "compute", "reset", "replay", "compute"}));
}

TEST(Script, ComputeEveryComputesAfterEachRoundOfBatches) {
  EXPECT_EQ(dh::parse_step("compute every").op, dh::Step::Op::ComputeEvery);
  EXPECT_THROW(dh::parse_step("compute everything"), std::invalid_argument);
  // Rank 0 feeds 3 batches, rank 1 only 1: three rounds, each followed by a compute on every rank.
  const auto plan = dh::simulate_script({dh::parse_step("update 1"), dh::parse_step("compute every"),
                                         dh::parse_step("update rest"), dh::parse_step("compute")},
                                        {4, 2});
  ASSERT_EQ(plan.computes.size(), 4u);
  EXPECT_EQ(plan.steps[2].feed[0], (std::pair<std::size_t, std::size_t>{1, 4}));
  EXPECT_EQ(plan.steps[2].round_computes, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(plan.computes[0].fed, (std::vector<std::size_t>{2, 2}));
  EXPECT_EQ(plan.computes[1].fed, (std::vector<std::size_t>{3, 2}));  // rank 1 out of batches
  EXPECT_EQ(plan.computes[2].fed, (std::vector<std::size_t>{4, 2}));
  EXPECT_EQ(plan.computes[0].role, dh::ComputeRole::Fresh);
  EXPECT_EQ(plan.computes[1].role, dh::ComputeRole::AfterUpdate);
  EXPECT_EQ(plan.computes[2].role, dh::ComputeRole::AfterUpdate);
  EXPECT_EQ(plan.computes[3].role, dh::ComputeRole::Repeat);  // the plain compute right after
  EXPECT_TRUE(plan.computes[2].all_data);
  for (const auto& point : plan.computes) EXPECT_EQ(point.step, point.index < 3 ? 2 : 3);
  // What it lets a scenario list: update_after_compute, from the rounds after the first.
  EXPECT_EQ(dh::roles_in({dh::parse_step("update 1"), dh::parse_step("compute every"), dh::parse_step("update rest")}),
            (std::vector<dh::ComputeRole>{dh::ComputeRole::Fresh, dh::ComputeRole::AfterUpdate, dh::ComputeRole::AfterUpdate}));
}

TEST(Script, UpdateEmptyCallsUpdateWithNoRowsOnTheSelectedRanks) {
  const auto plan = dh::simulate_script({dh::parse_step("update empty"), dh::parse_step("update 1"),
                                         dh::parse_step("update empty ranks=1"), dh::parse_step("compute")},
                                        {2, 2});
  EXPECT_EQ(plan.steps[0].empty_update, (std::vector<bool>{true, true}));
  EXPECT_EQ(plan.steps[0].feed[0], (std::pair<std::size_t, std::size_t>{0, 0}));  // feeds no batch of the shard
  EXPECT_TRUE(plan.steps[1].empty_update.empty());
  EXPECT_EQ(plan.steps[2].empty_update, (std::vector<bool>{false, true}));
  EXPECT_EQ(plan.computes[0].fed, (std::vector<std::size_t>{1, 1}));  // the reference never sees the empty ones
}

TEST(Script, RankSelectorFeedsOnlyThoseRanks) {
  const auto plan = dh::simulate_script({dh::parse_step("update 1 ranks=0"), dh::parse_step("compute"),
                                         dh::parse_step("update rest"), dh::parse_step("compute")},
                                        {3, 3});
  EXPECT_EQ(plan.computes[0].fed, (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(plan.computes[1].fed, (std::vector<std::size_t>{3, 3}));
}

// --- comparison ---------------------------------------------------------------------------------

TEST(Compare, NumbersTensorsAndNamedValues) {
  const dh::Tolerance tol{1e-6, 1e-9, {"count"}};
  EXPECT_TRUE(dh::compare_values(0.5, 0.5 + 1e-8, tol).equal);
  const auto off = dh::compare_values(0.5, 0.51, tol);
  EXPECT_FALSE(off.equal);
  EXPECT_NEAR(off.difference, 0.01, 1e-12);
  EXPECT_TRUE(dh::compare_values("nan", "nan", tol).equal);
  EXPECT_FALSE(dh::compare_values("nan", 1.0, tol).equal);
  EXPECT_TRUE(dh::compare_values("inf", "inf", tol).equal);

  const json ints = {{"dtype", "int64"}, {"shape", {2}}, {"values", {16777217, 3}}};
  const json ints_off = {{"dtype", "int64"}, {"shape", {2}}, {"values", {16777216, 3}}};
  EXPECT_FALSE(dh::compare_values(ints, ints_off, dh::Tolerance{1, 1, {}}).equal);  // integers: exact
  const json floats = {{"dtype", "float64"}, {"shape", {2}}, {"values", {1.0, 2.0}}};
  const json other_shape = {{"dtype", "float64"}, {"shape", {1, 2}}, {"values", {1.0, 2.0}}};
  EXPECT_FALSE(dh::compare_values(floats, other_shape, tol).equal);

  const json named = {{"count", 1e8}, {"mean", 0.25}};
  const json named_off = {{"count", 1e8 + 1}, {"mean", 0.25}};
  const auto c = dh::compare_values(named, named_off, dh::Tolerance{1e-3, 0, {"count"}});
  EXPECT_FALSE(c.equal);  // 'count' is exact even though 1 is within rtol 1e-3
  EXPECT_NE(c.detail.find("count"), std::string::npos);
  EXPECT_FALSE(dh::compare_values(named, json{{"mean", 0.25}}, tol).equal);
  EXPECT_FALSE(dh::compare_values(0.5, floats, tol).equal);
}

// A Python metric's nested result: compared leaf by leaf, the first difference named by its path
// (keys joined by '.', list indices in brackets); a leaf no comparison understands is a clean
// "cannot compare" difference at its path.
TEST(EngineCompare, NestedDictsAndListsAreComparedLeafByLeafNamingThePath) {
  const dh::Tolerance tol{1e-6, 1e-9, {}};
  const json per_class = {{"map", 0.5}, {"map_per_class", json::array({0.25, 0.5, 0.75, 1.0})},
                          {"per_class", json::array({json{{"tp", 3}, {"fp", 1}}, json{{"tp", 2}, {"fp", 0}}})}};
  EXPECT_TRUE(dh::compare_values(per_class, per_class, tol).equal);
  json near = per_class;
  near["map_per_class"][2] = 0.75 + 1e-8;  // within rtol
  EXPECT_TRUE(dh::compare_values(per_class, near, tol).equal);

  json off = per_class;
  off["map_per_class"][3] = 0.9;
  auto c = dh::compare_values(per_class, off, tol);
  EXPECT_FALSE(c.equal);
  EXPECT_EQ(c.detail, "map_per_class[3]: 0.9 vs expected 1");
  EXPECT_NEAR(c.difference, 0.1, 1e-12);

  off = per_class;
  off["per_class"][1]["fp"] = 2;
  c = dh::compare_values(per_class, off, tol);
  EXPECT_EQ(c.detail, "per_class[1].fp: 2 vs expected 0");

  off = per_class;
  off["per_class"].erase(1);
  EXPECT_EQ(dh::compare_values(per_class, off, tol).detail, "per_class: a list of 1 items vs expected 2");
  off = per_class;
  off["per_class"][0].erase("tp");
  EXPECT_EQ(dh::compare_values(per_class, off, tol).detail, "entry 'per_class[0].tp' is missing");

  json text = {{"wer", 0.25}, {"counts", {{"summary", {{"uncomparable", "str"}, {"text", "'3 errors'"}}}}}};
  c = dh::compare_values(text, text, tol);
  EXPECT_FALSE(c.equal);
  EXPECT_EQ(c.detail, "cannot compare a str at counts.summary ('3 errors'): a result is compared as numbers, tensors, "
                      "and dicts, lists and tuples of them");
  EXPECT_TRUE(dh::compare_values(json(nullptr), json(nullptr), tol).equal);

  // Value keeps lists and uncomparable leaves through its JSON form (what ranks send back).
  const auto value = distmetrics::metrics::Value::from_json(per_class);
  EXPECT_EQ(value.at("per_class").items().size(), 2u);
  EXPECT_EQ(value.to_json(), per_class);
  const auto leaf = distmetrics::metrics::Value::from_json(text.at("counts").at("summary"));
  EXPECT_EQ(leaf.uncomparable_type(), "str");
  EXPECT_EQ(leaf.to_json(), text.at("counts").at("summary"));
}

// A metric's identity, spelt and read by one type: the name ends at the first '@' (a plugin's
// path may hold one), "python:" marks a Python source.
TEST(MetricIds, QualifiedNamesSplitAtTheFirstAtAndNameTheirSource) {
  const auto plugin = dh::MetricId::parse("MeanAbsoluteError@/a/b@c/libx.so");
  EXPECT_EQ(plugin.name, "MeanAbsoluteError");
  EXPECT_EQ(plugin.source.kind, dh::MetricSource::Kind::Plugin);
  EXPECT_EQ(plugin.source.location, "/a/b@c/libx.so");
  EXPECT_EQ(plugin.qualified(), "MeanAbsoluteError@/a/b@c/libx.so");
  EXPECT_EQ(plugin.source.option(), "--plugin /a/b@c/libx.so");
  const auto python = dh::MetricId::parse("Precision@python:/abs/my metrics.py");
  EXPECT_EQ(python.name, "Precision");
  EXPECT_TRUE(python.source.is_python());
  EXPECT_EQ(python.source.location, "/abs/my metrics.py");
  EXPECT_EQ(python.source.text(), "python:/abs/my metrics.py");
  EXPECT_EQ(python.source.option(), "--python '/abs/my metrics.py'");
  EXPECT_EQ(python.qualified(), "Precision@python:/abs/my metrics.py");
  for (const char* registered : {"MeanAbsoluteError", "@/libx.so", "Average@"}) {
    const auto id = dh::MetricId::parse(registered);
    EXPECT_EQ(id.name, registered);
    EXPECT_EQ(id.source.kind, dh::MetricSource::Kind::Registered);
    EXPECT_EQ(id.qualified(), registered);
  }
}
