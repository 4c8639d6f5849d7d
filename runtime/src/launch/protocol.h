// JSON forms of the runtime's records, as they travel between workers, peers and supervisors.
#pragma once

#include <nlohmann/json.hpp>

#include "distmetrics/runtime/comm.h"
#include "distmetrics/runtime/job.h"

namespace distmetrics::runtime::detail {

nlohmann::json to_json(const CollectiveRecord& record);
CollectiveRecord record_from_json(const nlohmann::json& json);

nlohmann::json to_json(const Job& job);
Job job_from_json(const nlohmann::json& json);

nlohmann::json to_json(const RankOutcome& outcome);
RankOutcome outcome_from_json(const nlohmann::json& json);

RankState rank_state_from_string(const std::string& text);
RunStatus run_status_from_string(const std::string& text);

JobResult job_result_from_json(const nlohmann::json& json);

// The collective budget of a job: its op_timeout, or its whole deadline when that is zero.
std::chrono::milliseconds op_timeout_of(const Job& job);

}  // namespace distmetrics::runtime::detail
