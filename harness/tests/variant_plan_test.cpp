// A variant's plan as it travels to the ranks and to conform's helper worker (VariantPlan::to_json,
// from_json, rank_from_json): every shard policy and a script with 'compute every' come back
// as they were planned, each rank's part alone too, and a policy that cuts ranges takes a few
// numbers per rank whatever the number of samples.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "distmetrics/harness/engine.h"
#include "distmetrics/harness/script.h"
#include "distmetrics/harness/shard.h"

namespace dh = distmetrics::harness;
using nlohmann::json;

namespace {

std::vector<double> labels(std::int64_t n) {
  std::vector<double> k(n);
  for (std::int64_t i = 0; i < n; ++i) k[i] = static_cast<double>((i * 7) % 3);  // labels 0, 1, 2 mixed
  return k;
}

std::vector<dh::Step> parsed(const std::vector<std::string>& texts) {
  std::vector<dh::Step> steps;
  for (const auto& text : texts) steps.push_back(dh::parse_step(text));
  return steps;
}

// The shard plan of `policy` for 23 samples on 3 ranks, batches of 4, with `script` over it.
dh::VariantPlan plan_of(const std::string& policy, const std::vector<std::string>& script, bool per_step = false) {
  dh::VariantPlan plan;
  plan.shards = dh::make_shard_plan(policy, labels(23), 3, 4, 5);
  if (per_step) dh::pad_to_common_steps(plan.shards);
  std::vector<std::size_t> batches;
  for (int r = 0; r < 3; ++r) batches.push_back(plan.shards.batches_of(r));
  plan.script = dh::simulate_script(parsed(script), batches);
  return plan;
}

void expect_same_script(const dh::ScriptPlan& got, const dh::ScriptPlan& want, const std::string& what) {
  ASSERT_EQ(got.steps.size(), want.steps.size()) << what;
  for (std::size_t s = 0; s < want.steps.size(); ++s) {
    const auto &a = got.steps[s], &b = want.steps[s];
    EXPECT_EQ(a.op, b.op) << what << " step " << s;
    EXPECT_EQ(a.feed, b.feed) << what << " step " << s;
    EXPECT_EQ(a.empty_update, b.empty_update) << what << " step " << s;
    EXPECT_EQ(a.compute, b.compute) << what << " step " << s;
    EXPECT_EQ(a.round_computes, b.round_computes) << what << " step " << s;
  }
  ASSERT_EQ(got.computes.size(), want.computes.size()) << what;
  for (std::size_t k = 0; k < want.computes.size(); ++k) {
    const auto &a = got.computes[k], &b = want.computes[k];
    EXPECT_EQ(a.index, b.index) << what << " compute " << k;
    EXPECT_EQ(a.step, b.step) << what << " compute " << k;
    EXPECT_EQ(a.role, b.role) << what << " compute " << k;
    EXPECT_EQ(a.fed, b.fed) << what << " compute " << k;
    EXPECT_EQ(a.previous, b.previous) << what << " compute " << k;
    EXPECT_EQ(a.replay_of, b.replay_of) << what << " compute " << k;
    EXPECT_EQ(a.all_data, b.all_data) << what << " compute " << k;
  }
}

// Through the wire's text, as a job carries it.
void expect_round_trip(const dh::VariantPlan& plan, const std::string& what) {
  const json wire = json::parse(plan.to_json().dump());
  const dh::VariantPlan back = dh::VariantPlan::from_json(wire);
  EXPECT_EQ(back.shards.policy, plan.shards.policy) << what;
  EXPECT_EQ(back.shards.world_size, plan.shards.world_size) << what;
  EXPECT_EQ(back.shards.duplicates, plan.shards.duplicates) << what;
  EXPECT_EQ(back.shards.ranks, plan.shards.ranks) << what;
  expect_same_script(back.script, plan.script, what);
  for (int r = 0; r < plan.shards.world_size; ++r) {
    const dh::RankPlan mine = dh::VariantPlan::rank_from_json(wire, r);
    EXPECT_EQ(mine.batches, plan.shards.ranks[r]) << what << " rank " << r;
    expect_same_script(mine.script, plan.script, what + " (rank " + std::to_string(r) + ")");
  }
}

const std::vector<std::string> kComputeEvery = {"update", "compute", "compute every", "update 2", "update empty ranks=1",
                                                "update rest", "reset", "replay", "compute"};

}  // namespace

TEST(VariantPlan, EveryPolicyAtWorldSizeThreeComesBackAsPlanned) {
  for (const auto& policy : dh::shard_policy_names()) {
    expect_round_trip(plan_of(policy, dh::default_script_text()), policy);
    expect_round_trip(plan_of(policy, kComputeEvery), policy + " with compute every");
    expect_round_trip(plan_of(policy, dh::default_script_text("per_step"), true), policy + " per_step");
  }
}

TEST(VariantPlan, RangesAreWrittenAsRunsAndOtherBatchesAsTheirRows) {
  // uneven: contiguous blocks of seeded sizes, 4 samples a batch.
  const auto uneven = plan_of("uneven", {"update rest", "compute"});
  const json uneven_wire = uneven.to_json();
  EXPECT_EQ(uneven.shards.ranks[0].front().front(), 0);
  std::int64_t first = 0;
  for (int r = 0; r < 3; ++r) {
    const auto n = uneven.shards.samples_of(r);
    json runs = json::array();
    if (n / 4 > 0) runs.push_back({{"batches", n / 4}, {"size", 4}, {"first", first}});
    if (n % 4 > 0) runs.push_back({{"batches", 1}, {"size", n % 4}, {"first", first + n / 4 * 4}});
    EXPECT_EQ(uneven_wire["shards"]["ranks"][r], runs) << "rank " << r;
    first += n;
  }
  // empty_rank: 23 samples on ranks 0 and 1 (12 and 11), none on rank 2.
  const json empty_rank = plan_of("empty_rank", {"update rest", "compute"}).to_json()["shards"]["ranks"];
  EXPECT_EQ(empty_rank[0], json::parse(R"([{"batches": 3, "size": 4, "first": 0}])"));
  EXPECT_EQ(empty_rank[1], json::parse(R"([{"batches": 2, "size": 4, "first": 12}, {"batches": 1, "size": 3, "first": 20}])"));
  EXPECT_EQ(empty_rank[2], json::array());
  // round_robin: global batch b to rank b % 3; rank 1 holds batches 1 and 4, 12 samples apart.
  const json round_robin = plan_of("round_robin", {"update rest", "compute"}).to_json()["shards"]["ranks"];
  EXPECT_EQ(round_robin[1], json::parse(R"([{"batches": 2, "size": 4, "first": 4, "next": 12}])"));
  EXPECT_EQ(round_robin[2], json::parse(R"([{"batches": 1, "size": 4, "first": 8}, {"batches": 1, "size": 3, "first": 20}])"));
  // padded: 24 entries, the last one sample 0 again, on rank 2 (entries 2, 5, ..., 23).
  const auto padded = plan_of("padded", {"update rest", "compute"});
  EXPECT_EQ(padded.shards.duplicates, 1);
  EXPECT_EQ(padded.shards.ranks[2][1], (dh::SampleIndices{14, 17, 20, 0}));
  EXPECT_EQ(padded.to_json()["shards"]["ranks"][2],
            json::parse(R"([{"batches": 1, "size": 4, "first": 2, "step": 3}, {"rows": [[14, 3, 3], 0]}])"));
  // per_step: the ranks with fewer batches get empty ones.
  const json per_step = plan_of("empty_rank", dh::default_script_text("per_step"), true).to_json()["shards"]["ranks"];
  EXPECT_EQ(per_step[2], json::parse(R"([{"batches": 3, "size": 0}])"));
}

TEST(VariantPlan, TheScriptTravelsStepByStep) {
  const auto plan = plan_of("even", kComputeEvery);
  const json script = plan.to_json()["script"];
  // even: 8, 8 and 7 samples, 2 batches each. 'update 2' after 'compute every': two rounds.
  EXPECT_EQ(script["steps"][0], json::parse(R"({"op": "update", "feed": [[0, 1], [0, 1], [0, 1]]})"));
  EXPECT_EQ(script["steps"][1], json::parse(R"({"op": "compute", "compute": 0})"));
  EXPECT_EQ(script["steps"][2], json::parse(R"({"op": "compute_every"})"));
  EXPECT_EQ(script["steps"][3], json::parse(R"({"op": "update", "feed": [[1, 2], [1, 2], [1, 2]], "round_computes": [1]})"));
  EXPECT_EQ(script["steps"][4]["empty_update"], json::parse("[false, true, false]"));
  EXPECT_EQ(script["computes"][0], json::parse(R"({"index": 0, "step": 1, "role": "fresh", "fed": [1, 1, 1]})"));
  EXPECT_EQ(script["computes"][1]["fed"], json::parse("[2, 2, 2]"));
  EXPECT_EQ(script["computes"][1]["all_data"], true);
}

TEST(VariantPlan, BatchesOfAnyShapeComeBack) {
  dh::VariantPlan plan;
  plan.shards.policy = "hand-made";
  plan.shards.world_size = 2;
  plan.shards.duplicates = 3;
  plan.shards.ranks = {{{5, 3, 1}, {7, 7, 7}, {}, {9}, {1, 2, 4, 8}, {0, 1, 2, 3, 10, 20, 30}, {}},
                       {{100, 101}, {102, 103}, {0}, {1}, {2}}};
  plan.script = dh::simulate_script(parsed({"update rest", "compute", "reset", "replay", "compute"}), {7, 5});
  expect_round_trip(plan, "hand-made");
  EXPECT_EQ(plan.to_json()["shards"]["ranks"][1],
            json::parse(R"([{"batches": 2, "size": 2, "first": 100}, {"batches": 3, "size": 1, "first": 0}])"));
}

TEST(VariantPlan, AContiguousPlanTakesAFewNumbersPerRankWhateverTheSamples) {
  for (const auto& policy : {"even", "uneven", "round_robin", "scattered"}) {
    dh::VariantPlan plan;
    plan.shards = dh::make_shard_plan(policy, dh::ShardSamples{1'000'003, nullptr}, 3, 64, 5);
    plan.script = dh::simulate_script(parsed({"update rest", "compute"}), {plan.shards.batches_of(0), plan.shards.batches_of(1),
                                                                            plan.shards.batches_of(2)});
    const std::string wire = plan.to_json().dump();
    EXPECT_LT(wire.size(), 700u) << policy << ": " << wire;
    EXPECT_EQ(dh::VariantPlan::rank_from_json(json::parse(wire), 2).batches, plan.shards.ranks[2]) << policy;
  }
}

TEST(VariantPlan, AMalformedPlanSaysWhatIsWrong) {
  auto wire = plan_of("even", {"update rest", "compute"}).to_json();
  EXPECT_THROW(dh::VariantPlan::rank_from_json(wire, 3), std::invalid_argument);
  wire["shards"]["ranks"].erase(2);
  EXPECT_THROW(dh::VariantPlan::from_json(wire), std::invalid_argument);
  auto bad_op = plan_of("even", {"update rest", "compute"}).to_json();
  bad_op["script"]["steps"][0]["op"] = "jump";
  EXPECT_THROW(dh::VariantPlan::from_json(bad_op), std::invalid_argument);
}
