// The extension-point tables (properties, shard policies, placements, backends, outcomes), the JSON
// of them other programs read (tables.h), and the docs that list them: docs/properties.md,
// docs/scenarios.md, docs/cli-contract.md and docs/report.schema.json must name exactly the table
// entries. So must they the phases of a variant's time (runtime/phases.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include "distmetrics/harness/input_dtype.h"
#include "distmetrics/harness/metric_id.h"
#include "distmetrics/harness/outcome.h"
#include "distmetrics/harness/placement.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/harness/report.h"
#include "distmetrics/harness/scenario_fields.h"
#include "distmetrics/harness/shard.h"
#include "distmetrics/harness/tables.h"
#include "distmetrics/harness/verdict.h"
#include "distmetrics/metrics/registry.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/blame.h"
#include "distmetrics/runtime/launchers.h"
#include "distmetrics/runtime/phases.h"
#include "doc_tables.h"

namespace distmetrics::harness {
namespace {

using doc_tables::read_doc;
using doc_tables::table_rows;

template <typename Table>
std::set<std::string> table_names(const Table& table) {
  std::set<std::string> names;
  for (const auto& entry : table) names.insert(entry.name);
  return names;
}

// The outcome table (outcome.h) and its docs: the contract's table (name, symbol, exit code), and
// the JSON schema's outcome names and summary counts, in the table's order.
TEST(TablesTest, DocsAndTheSchemaListExactlyTheOutcomes) {
  const auto rows = table_rows("cli-contract.md", "outcome");
  ASSERT_EQ(rows.size(), outcome_kinds().size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& kind = outcome_kinds()[i];
    ASSERT_GE(rows[i].size(), 3u);
    EXPECT_EQ(rows[i][0], kind.name);
    EXPECT_EQ(rows[i][1], kind.symbol) << kind.name;
    EXPECT_EQ(rows[i][2], std::to_string(kind.exit_code)) << kind.name;
  }
  const auto schema = nlohmann::json::parse(read_doc("report.schema.json"));
  std::vector<std::string> names, summary;
  for (const auto& kind : outcome_kinds()) names.push_back(kind.name);
  EXPECT_EQ(doc_tables::table_names("properties.md", "outcome"), std::set<std::string>(names.begin(), names.end()));
  EXPECT_EQ(schema.at("$defs").at("outcome").at("enum").get<std::vector<std::string>>(), names);
  summary = names;
  summary.push_back("total");
  const auto& counts = schema.at("properties").at("summary");
  EXPECT_EQ(counts.at("required").get<std::vector<std::string>>(), summary);
  std::vector<std::string> listed;
  for (const auto& [key, value] : counts.at("properties").items()) listed.push_back(key);
  std::sort(listed.begin(), listed.end());
  std::sort(summary.begin(), summary.end());
  EXPECT_EQ(listed, summary);
}

// The phase table (runtime/phases.h) and its docs: the contract's table (name, measured by), the
// schema's per-variant phases (every phase but the run's) and the run's own.
TEST(TablesTest, DocsAndTheSchemaListExactlyThePhases) {
  const auto rows = table_rows("cli-contract.md", "phase");
  const auto& table = runtime::phase_table();
  ASSERT_EQ(rows.size(), table.size());
  std::set<std::string> per_variant, per_run, names;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_GE(rows[i].size(), 3u);
    EXPECT_EQ(rows[i][0], table[i].name);
    EXPECT_EQ(rows[i][1], table[i].measured_by) << table[i].name;
    EXPECT_TRUE(names.insert(table[i].name).second) << table[i].name << " is listed twice";
    (std::string(table[i].measured_by) == "run" ? per_run : per_variant).insert(table[i].name);
  }
  const auto schema = nlohmann::json::parse(read_doc("report.schema.json"));
  auto listed = [](const nlohmann::json& object) {
    std::set<std::string> keys;
    for (const auto& [key, value] : object.at("properties").items()) keys.insert(key);
    return keys;
  };
  EXPECT_EQ(listed(schema.at("$defs").at("phases")), per_variant);
  EXPECT_EQ(listed(schema.at("properties").at("phases")), per_run);
}

// The blame rules (runtime/blame.h) and their docs: runtime.md's table lists every rule, in the
// order they are tried, with what the table says of when it applies and whom it blames.
TEST(TablesTest, DocsListTheBlameRulesInTheirOrder) {
  const auto rows = table_rows("runtime.md", "rule");
  const auto& rules = runtime::blame_rules();
  ASSERT_EQ(rows.size(), rules.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 3u);
    EXPECT_EQ(rows[i][0], rules[i].name);
    EXPECT_EQ(rows[i][1], rules[i].when) << rules[i].name;
    EXPECT_EQ(rows[i][2], rules[i].blamed) << rules[i].name;
  }
}

TEST(TablesTest, OutcomeNamesAreUniqueAndFindable) {
  std::set<std::string> names, symbols;
  for (const auto& kind : outcome_kinds()) {
    EXPECT_TRUE(names.insert(kind.name).second) << kind.name;
    EXPECT_TRUE(symbols.insert(kind.symbol).second) << kind.symbol;
    ASSERT_EQ(find_outcome(kind.name), &kind);
    EXPECT_EQ(&kind_of(kind.outcome), &kind);
  }
  EXPECT_EQ(find_outcome("no_such_outcome"), nullptr);
}

TEST(TablesTest, DocsListExactlyTheProperties) {
  EXPECT_EQ(doc_tables::table_names("properties.md", "property"), table_names(property_table()));
  EXPECT_EQ(doc_tables::table_names("design.md", "property"), table_names(property_table()));
}

TEST(TablesTest, DocsListExactlyTheInputDtypes) {
  EXPECT_EQ(doc_tables::table_names("scenarios.md", "dtype"), table_names(input_dtypes()));
  for (const auto& d : input_dtypes()) {
    SCOPED_TRACE(d.name);
    EXPECT_GE(d.rtol, 0);
    EXPECT_EQ(d.floating, at::isFloatingType(d.type));
  }
  // Tolerances only widen: float64 keeps the scenario's 1e-6, float16 gets its own 1e-3.
  Scenario s;
  s.tolerance.rtol = 1e-6;
  EXPECT_EQ(judged_for_input_dtype(s, "float64").tolerance.rtol, 1e-6);
  EXPECT_EQ(judged_for_input_dtype(s, "float16").tolerance.rtol, 1e-3);
  s.tolerance.rtol = 0.1;
  EXPECT_EQ(judged_for_input_dtype(s, "float16").tolerance.rtol, 0.1);
}

TEST(TablesTest, DocsListExactlyTheShardPoliciesPlacementsAndBackends) {
  EXPECT_EQ(doc_tables::table_names("scenarios.md", "policy"), table_names(shard_policies()));
  EXPECT_EQ(doc_tables::table_names("scenarios.md", "placement"), table_names(placements()));
  EXPECT_EQ(doc_tables::table_names("scenarios.md", "backend"), table_names(runtime::backends()));
}

// The data generator table: each descriptor complete, and docs/scenarios.md's table row by row
// what the descriptors say (generator_docs_row), in table order.
TEST(TablesTest, DocsShowEveryDataGeneratorAsItsDescriptorSaysIt) {
  EXPECT_EQ(generator_table_problems(data_generators()), std::vector<std::string>{});
  const auto rows = doc_tables::table_lines("scenarios.md", "generator");
  std::vector<std::string> expected;
  for (const auto& g : data_generators()) expected.push_back(generator_docs_row(g));
  EXPECT_EQ(rows, expected) << "docs/scenarios.md's generator table should read:\n" << doc_tables::lines_text(expected);
}

// A descriptor that lacks what validation, explore or the docs need is named.
TEST(TablesTest, AGeneratorDescriptorLackingAFieldIsAProblem) {
  std::vector<DataGenerator> table = {data_generators().front(), data_generators().front()};
  table[1].make = nullptr;
  table[1].class_count = "num_colours";
  table[1].produces.clear();
  const auto problems = generator_table_problems(table);
  const std::vector<std::string> expected = {
      "generator 'binary': its name is used twice", "generator 'binary': produces nothing (no InputDecl)",
      "generator 'binary': makes tensors without a make function",
      "generator 'binary': class_count 'num_colours' is not an int parameter of it"};
  EXPECT_EQ(problems, expected);
}

TEST(TablesTest, EveryPropertyIsCompleteAndHasItsOwnColumn) {
  EXPECT_EQ(property_table_problems(property_table()), std::vector<std::string>{});
  for (const auto& p : property_table()) EXPECT_EQ(find_property(p.name), &p);
  EXPECT_EQ(find_property("equal_to_singel"), nullptr);
  // The names a scenario may list: all but expected_error and recovers_after_error (they come from [expect]).
  EXPECT_EQ(property_names(), (std::vector<std::string>{"equal_to_single", "ranks_agree", "idempotent",
                                                        "update_after_compute", "reset_replay", "batch_invariant",
                                                        "no_hang", "golden", "agrees_with_reference", "state_roundtrip",
                                                        "merge_state", "accepts_empty_batch"}));
  // One column order for run's and conform's reports, labels from the table.
  std::vector<std::string> by_column;
  for (const auto* p : properties_by_column()) by_column.push_back(property_label(p->name));
  EXPECT_EQ(by_column, (std::vector<std::string>{"no_hang", "equal", "agree", "idem", "update", "reset", "batch",
                                                 "golden", "ref", "trip", "merge", "empty", "expect", "recover"}));
  EXPECT_EQ(in_column_order({"my_check", "expected_error", "ranks_agree", "no_hang"}),
            (std::vector<std::string>{"no_hang", "ranks_agree", "expected_error", "my_check"}));
  EXPECT_EQ(property_label("my_check"), "my_check");
  // The property that judges each compute role (the NaN-after-an-empty-batch cause names it).
  EXPECT_EQ(property_judging(ComputeRole::Fresh)->name, "equal_to_single");
  EXPECT_EQ(property_judging(ComputeRole::Repeat)->name, "idempotent");
  EXPECT_EQ(property_judging(ComputeRole::AfterUpdate)->name, "update_after_compute");
  EXPECT_EQ(property_judging(ComputeRole::AfterReset)->name, "reset_replay");
  // The rank-side probes: the two properties that need every rank's state saved.
  std::vector<std::string> probed;
  for (const auto& p : property_table())
    if (p.probe) probed.push_back(p.name);
  EXPECT_EQ(probed, (std::vector<std::string>{"state_roundtrip", "merge_state"}));
}

PropertyResult some_checker(const CheckContext&, const std::string&) { return {}; }
std::optional<RootCause> some_rule(const Evidence&) { return std::nullopt; }

// A sound descriptor, then each field the views need left out or doubled: the check names it.
TEST(TablesTest, ADescriptorLackingAFieldTheViewsNeedIsAProblem) {
  Property sound;
  sound.name = "sound";
  sound.holds_when = "it holds";
  sound.label = "snd";
  sound.column_order = 0;
  sound.check = some_checker;
  sound.hint = "what a failure means";
  sound.root_causes = {{5, some_rule}};
  EXPECT_EQ(property_table_problems({sound}), std::vector<std::string>{});
  auto problems_of = [&](const std::function<void(Property&)>& spoil) {
    Property p = sound;
    p.name = "spoilt";
    spoil(p);
    return property_table_problems({p});
  };
  auto one = [](const std::vector<std::string>& problems, const std::string& text) {
    EXPECT_EQ(problems.size(), 1u) << ::testing::PrintToString(problems);
    return !problems.empty() && problems.front().find(text) != std::string::npos;
  };
  EXPECT_TRUE(one(problems_of([](Property& p) { p.label.clear(); }), "property 'spoilt': no label"));
  EXPECT_TRUE(one(problems_of([](Property& p) { p.holds_when.clear(); }), "no holds_when"));
  EXPECT_TRUE(one(problems_of([](Property& p) { p.column_order = -1; }), "no column_order"));
  EXPECT_TRUE(one(problems_of([](Property& p) { p.check = nullptr; }), "no checker"));
  EXPECT_TRUE(one(problems_of([](Property& p) { p.hint.clear(); }), "no hint"));
  EXPECT_TRUE(one(problems_of([](Property& p) { p.root_causes = {{0, some_rule}}; }), "a root-cause rule without a priority"));
  EXPECT_TRUE(one(problems_of([](Property& p) { p.root_causes = {{5, nullptr}}; }), "without its finder"));
  EXPECT_TRUE(one(problems_of([](Property& p) { p.root_causes = {{5, some_rule}, {5, some_rule}}; }),
                  "root-cause priority 5 is also spoilt's"));
  EXPECT_TRUE(one(problems_of([](Property& p) { p.needs_compute = ComputeRole::Fresh; }), "needs_compute"));
  EXPECT_TRUE(one(problems_of([](Property& p) { p.listable = false; }), "nothing else checks it"));
  EXPECT_TRUE(one(problems_of([](Property& p) { p.judged_by_the_engine = true; }), "yet it has a checker"));
  Property engine_judged = sound;  // no checker, no hint: the engine judges it (no_hang)
  engine_judged.check = nullptr;
  engine_judged.hint.clear();
  engine_judged.judged_by_the_engine = true;
  EXPECT_EQ(property_table_problems({engine_judged}), std::vector<std::string>{});
  // Two descriptors that share what must be their own.
  Property other = sound;
  other.name = "other";
  other.root_causes = {{6, some_rule}};
  EXPECT_EQ(property_table_problems({sound, other}),
            (std::vector<std::string>{"property 'other': label 'snd' is used twice",
                                      "property 'other': column_order 0 is also sound's"}));
  other.label = "oth";
  other.column_order = 1;
  other.root_causes = {{5, some_rule}};
  EXPECT_EQ(property_table_problems({sound, other}),
            (std::vector<std::string>{"property 'other': root-cause priority 5 is also sound's"}));
  other.name = "sound";
  other.root_causes.clear();
  EXPECT_EQ(property_table_problems({sound, other}), (std::vector<std::string>{"property 'sound': its name is used twice"}));
}

TEST(TablesTest, DefaultPropertiesFollowTheScriptAndTheScenario) {
  Scenario s;
  s.single_process = "global";
  EXPECT_EQ(default_properties(s, {ComputeRole::Fresh, ComputeRole::Repeat}),
            (std::vector<std::string>{"equal_to_single", "ranks_agree", "idempotent", "batch_invariant"}));
  s.single_process = "per_step";
  s.golden = Golden{1.0};
  EXPECT_EQ(default_properties(s, {ComputeRole::AfterReset, ComputeRole::AfterUpdate}),
            (std::vector<std::string>{"ranks_agree", "update_after_compute", "reset_replay", "golden"}));
  EXPECT_TRUE(s.checks("no_hang"));
  EXPECT_FALSE(s.checks("expected_error"));
  s.expect.error = "NotComputableError";
  EXPECT_TRUE(s.checks("expected_error"));
}

TEST(TablesTest, ShardPoliciesSplitEverySampleOnceExceptPadding) {
  const std::vector<double> sort_key = {5, 4, 3, 2, 1, 0, 9};
  for (const auto& policy : shard_policies()) {
    SCOPED_TRACE(policy.name);
    const ShardPlan plan = make_shard_plan(policy.name, sort_key, 3, 2, 7);
    ASSERT_EQ(plan.ranks.size(), 3u);
    std::int64_t total = 0;
    for (int r = 0; r < 3; ++r) total += plan.samples_of(r);
    EXPECT_EQ(total, 7 + plan.duplicates);
    EXPECT_EQ(plan.duplicates, policy.name == "padded" ? 2 : 0);
  }
  EXPECT_THROW(make_shard_plan("evne", sort_key, 2, 1, 0), std::invalid_argument);
}

TEST(TablesTest, PlacementsAndBackendsDecideDevicesAndGpus) {
  const c10::Device gpu1(c10::kCUDA, 1);
  EXPECT_EQ(place("mixed", 0, gpu1).state, c10::Device(c10::kCPU));
  EXPECT_EQ(place("mixed", 1, gpu1).state, gpu1);
  EXPECT_EQ(place("cpu_state_cuda_input", 1, gpu1).input, gpu1);
  EXPECT_TRUE(place("cpu_state_cuda_input", 1, gpu1).state.is_cpu());
  EXPECT_EQ(place("cuda0", 1, gpu1).state, c10::Device(c10::kCUDA, 0));  // every rank on cuda:0, whatever its GPU
  // The rank's GPU: its own on nccl (one per rank); shared on gloo, spread over the visible GPUs.
  EXPECT_EQ(rank_gpu("nccl", 1, 1), gpu1);
  EXPECT_EQ(rank_gpu("gloo", 1, 1), c10::Device(c10::kCUDA, 0));  // one GPU: both ranks on it
  EXPECT_EQ(rank_gpu("gloo", 3, 2), gpu1);
  EXPECT_EQ(rank_gpu("gloo", 1, 4), gpu1);
  EXPECT_EQ(gpus_needed("cpu", "gloo", 4), 0);
  EXPECT_EQ(gpus_needed("cuda0", "gloo", 4), 1);
  EXPECT_EQ(gpus_needed("cuda", "gloo", 4), 1);  // gloo ranks may share a GPU
  EXPECT_EQ(gpus_needed("mixed", "gloo", 2), 1);
  EXPECT_EQ(gpus_needed("cpu", "nccl", 2), 2);
  EXPECT_EQ(gpus_needed("cuda0", "nccl", 4), 4);
  EXPECT_EQ(comm_device_for("cpu", "nccl"), "cuda");
  EXPECT_EQ(comm_device_for("cuda", "gloo"), "cuda");
  EXPECT_EQ(comm_device_for("cuda", "mpi"), "cpu");
  EXPECT_EQ(comm_device_for("mixed", "gloo"), "cpu");
  EXPECT_EQ(runtime::pool_launch_for("mpi"), "mpirun");
  EXPECT_EQ(runtime::pool_launch_for("gloo"), "direct");
  EXPECT_EQ(runtime::default_backend_names(), (std::vector<std::string>{"gloo", "mpi"}));
  EXPECT_EQ(*runtime::backend_unavailable("glo", "cpu", 1),
            runtime::Unavailable("unknown backend 'glo'", " (known: gloo, mpi, nccl)"));
  for (const auto& b : runtime::backends()) {
    SCOPED_TRACE(b.name);
    EXPECT_NE(b.make, nullptr);
    EXPECT_NE(b.unavailable, nullptr);
    EXPECT_FALSE(b.comm_devices.empty());
    EXPECT_FALSE(b.peer_launchers.empty());
  }
}

// `distmetrics tables --json` (tables_json): what the Python package reads instead of copies. Each
// field holds exactly its table's entries, in table order.
TEST(TablesTest, TheTablesJsonHoldsExactlyTheTables) {
  const nlohmann::json t = tables_json();
  EXPECT_EQ(t.at("format").get<int>(), kTablesFormat);
  auto names = [](const nlohmann::json& list) {
    std::vector<std::string> out;
    for (const auto& entry : list) out.push_back(entry.at("name").get<std::string>());
    return out;
  };
  ASSERT_EQ(t.at("outcomes").size(), outcome_kinds().size());
  for (std::size_t i = 0; i < outcome_kinds().size(); ++i) {
    const auto& kind = outcome_kinds()[i];
    const auto& o = t.at("outcomes")[i];
    EXPECT_EQ(o.at("name").get<std::string>(), kind.name);
    EXPECT_EQ(o.at("exit_code").get<int>(), kind.exit_code) << kind.name;
    EXPECT_EQ(o.at("severity").get<int>(), kind.severity) << kind.name;
    EXPECT_EQ(o.at("passed").get<bool>(), outcome_passed(kind.name)) << kind.name;
    EXPECT_EQ(o.at("counted_when_zero").get<bool>(), kind.counted_when_zero) << kind.name;
    EXPECT_EQ(t.at("exit_codes").at(kind.name).get<int>(), kind.exit_code) << kind.name;
  }
  EXPECT_EQ(t.at("exit_codes").at("bad_input").get<int>(), kBadInputExitCode);
  EXPECT_EQ(t.at("exit_codes").size(), outcome_kinds().size() + 1);
  std::vector<std::string> properties;
  for (const auto& p : property_table()) properties.push_back(p.name);
  EXPECT_EQ(names(t.at("properties")), properties);
  Scenario plain;
  for (const auto& text : default_script_text()) plain.script.push_back(parse_step(text));
  EXPECT_EQ(t.at("default_properties").get<std::vector<std::string>>(), default_properties(plain, roles_in(plain.script)));
  EXPECT_EQ(t.at("default_script").get<std::vector<std::string>>(), default_script_text());
  EXPECT_EQ(names(t.at("backends")), runtime::backend_names());
  for (const auto& b : t.at("backends"))
    EXPECT_EQ(b.at("default").get<bool>(), runtime::find_backend(b.at("name").get<std::string>())->default_variant);
  EXPECT_EQ(names(t.at("launchers")), runtime::launcher_names());
  for (const auto& l : t.at("launchers")) {
    const auto* launcher = runtime::find_launcher(l.at("name").get<std::string>());
    EXPECT_EQ(l.at("peers").get<bool>(), launcher->peers) << launcher->name;
    EXPECT_EQ(l.at("pool_launch"), launcher->pool ? nlohmann::json(launcher->pool->name) : nlohmann::json(nullptr));
  }
  EXPECT_EQ(names(t.at("property_skips")), (std::vector<std::string>{to_string(SkipWhy::NotApplicable), to_string(SkipWhy::NotJudged)}));
  EXPECT_EQ(names(t.at("shard_policies")), shard_policy_names());
  EXPECT_EQ(names(t.at("placements")), placement_names());
  EXPECT_EQ(names(t.at("generators")), generator_names());
  for (const auto& g : t.at("generators"))  // text and detection carry strings and dicts, the rest tensors
    EXPECT_EQ(g.at("structured").get<bool>(), find_generator(g.at("name").get<std::string>())->carrier ==
                                                   DataCarrier::Structured);
  EXPECT_EQ(t.at("expected_errors").get<std::vector<std::string>>(), expected_error_names());
  EXPECT_EQ(t.at("scenario_fields"), scenario_fields_json(scenario_fields()));  // the file fields, in table order
  EXPECT_EQ(names(t.at("reference_metrics")), metrics::MetricRegistry::reference().names());
  for (const auto& m : t.at("reference_metrics")) {
    const auto* spec = metrics::MetricRegistry::reference().find(m.at("name").get<std::string>());
    ASSERT_EQ(m.at("params").size(), spec->params.size());
    for (std::size_t i = 0; i < spec->params.size(); ++i)
      EXPECT_EQ(m.at("params")[i].at("default"), spec->params[i].default_value) << spec->name << " " << spec->params[i].name;
  }
  EXPECT_EQ(MetricSource::parse(t.at("metric_sources").at("python").get<std::string>() + "x.py").location, "x.py");
  EXPECT_TRUE(MetricSource::parse(t.at("metric_sources").at("python").get<std::string>() + "x.py").is_python());
}

}  // namespace
}  // namespace distmetrics::harness
