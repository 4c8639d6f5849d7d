// What the values of a scenario file mean, checked section by section as the loader reads them
// (scenario.cpp): the metric and its parameters (through its registry), the data generator and
// its parameters, a dry run of a few samples through the metric, the variants (backends, shard
// policies and placements from their tables), the expectations. Each problem becomes a
// diagnostic through the reader; checking goes on after a problem.
#pragma once

#include <cstdint>
#include <vector>

#include "distmetrics/harness/scenario.h"
#include "scenario_reader.h"

namespace distmetrics::harness::detail {

// Limits that keep a scenario from exhausting memory or time by mistake. Data held whole (files,
// Python data, and generated data of up to kWholeDataElements numbers) keep the first two; a
// generator's larger data are generated batch by batch (data.h), so their limit is the shard
// plan's index vectors (8 bytes a sample in every rank) and time: at most kMaxGeneratedSamples
// samples and kMaxGeneratedElements numbers, and one batch at most kMaxElements numbers.
constexpr std::int64_t kMaxSamples = 1'000'000;
constexpr std::int64_t kMaxElements = 20'000'000;
constexpr std::int64_t kMaxGeneratedSamples = std::int64_t{1} << 26;  // 67,108,864
constexpr std::int64_t kMaxGeneratedElements = std::int64_t{1} << 31;
constexpr int kMaxWorldSize = 64;
constexpr double kMaxDeadline = 3600;

// [metric]: the name (in the metric catalog) and its parameters; `metric_ok` when both are good.
void validate_metric(ScenarioReader& reader, const toml::table& root, Scenario& s, const toml::table* metric_table,
                     bool& metric_ok);
// [data]: a generator (with its parameters and seed), a file (read here) or a Python generator
// (called here, when allowed), sizes, dtype; `data_ok` when all are good.
void validate_data(ScenarioReader& reader, Scenario& s, const toml::table* data, bool& data_ok);
// Structured samples (data.python returned lists of dicts, strings) only for Python metrics:
// false (with an error on the data's field) when the metric is a C++ one.
bool check_structured_data_for_metric(ScenarioReader& reader, const Scenario& s, const toml::table* data);
// Feeds a few samples to the metric once, so that data it rejects is reported at load time.
void dry_run(ScenarioReader& reader, const Scenario& s, const toml::table* metric_table);
// [reference]: the Python callable and its keyword arguments; called once on the whole data
// (when the data are good) so that a callable that does not take them is reported here.
void validate_reference(ScenarioReader& reader, Scenario& s, const toml::table& root, bool data_ok);
// [variants]: world sizes, backends, shard policies, placements (defaults when absent).
void validate_variants(ScenarioReader& reader, Scenario& s, const toml::table* variants);
// [expect]: the error expected and where, the properties expected to fail and why.
void validate_expectations(ScenarioReader& reader, Scenario& s, const toml::table& root, const toml::table* expect,
                           const toml::table* variants);

int count_computes(const std::vector<Step>& script);

}  // namespace distmetrics::harness::detail
