// The rank pool's request/answer protocol with one worker (rank_pool.cpp).
#pragma once

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "distmetrics/runtime/job.h"
#include "pool_timing.h"
#include "process.h"
#include "protocol.h"
#include "wire.h"

namespace distmetrics::runtime::detail {


// One rank's worker and what the supervisor knows of it during the current job.
struct WorkerLink {
  int rank = 0;
  pid_t pid = 0;  // the connected process, as the kernel said (never as the worker said)
  std::unique_ptr<detail::LineChannel> channel;

  // The current job.
  std::optional<RankOutcome> outcome;
  std::vector<CollectiveRecord> entered;
  std::optional<CollectiveRecord> open;  // entered and not yet left
  std::string phase;
  std::string dying;  // how it said it died
  int dying_signal = 0;  // the signal it said it died of (0: none, or an exit)
  std::vector<nlohmann::json> records;  // what its task sent ahead of its end (post_task_record)
  bool lost = false;  // its channel closed (or its process ended) without an outcome
  std::optional<int> exit_status;
  bool store_blocked = false;  // its latest store request is a get or wait not yet answered
  bool aborted = false;  // it ended the job's collectives when told to (kWorkerAbortSignal)
  // When it last moved on (entered or left a collective, changed phase, finished): after the
  // last move of every rank, a job that does not end is waiting on a hang (the "hang_wait" phase).
  std::chrono::steady_clock::time_point moved;

  void reset_variant() {
    outcome.reset();
    entered.clear();
    open.reset();
    phase.clear();
    dying.clear();
    dying_signal = 0;
    records.clear();
    lost = false;
    exit_status.reset();
    store_blocked = false;
    aborted = false;
    moved = std::chrono::steady_clock::now();
  }

  bool answered() const { return outcome.has_value() || lost; }

  bool send(const nlohmann::json& message, std::chrono::milliseconds budget = kWorkerSendBudget) {
    try {
      channel->send(message, Deadline::after(budget));
      return true;
    } catch (const detail::ChannelError&) {
      lost = true;
      return false;
    }
  }

  // Reads every message the worker has sent so far.
  void drain() {
    if (lost) return;
    const bool still_open = channel->read_available();
    try {
      while (auto message = channel->next()) handle(*message);
    } catch (const std::exception&) {
      lost = true;  // a worker that talks nonsense is as good as dead
    }
    // A rank that said it is dying (a fatal signal, exit()) is lost even while a process it
    // forked keeps its connection open.
    if ((!still_open || !dying.empty()) && !outcome) lost = true;
  }

  void handle(const nlohmann::json& message) {
    const std::string type = message.value("type", "");
    if (type == "enter" || type == "exit" || type == "phase") moved = std::chrono::steady_clock::now();
    if (type == "enter") {
      open = detail::record_from_json(message.at("record"));
      entered.push_back(*open);
    } else if (type == "exit") {
      open.reset();
    } else if (type == "phase") {
      phase = message.value("phase", "");
    } else if (type == "outcome") {
      outcome = detail::outcome_from_json(message.at("outcome"));
      outcome->rank = rank;
      outcome->pid = static_cast<long>(pid);
      open.reset();
      if (outcome->state != RankState::TimedOut) moved = std::chrono::steady_clock::now();  // a timeout is no move
    } else if (type == "dying") {
      dying = message.value("how", "");
      dying_signal = message.value("signal", 0);
    } else if (type == "aborted") {
      aborted = true;
    } else if (type == "record") {
      records.push_back(message.at("record"));
    }
  }

  static nlohmann::json job_message(const Job& job, const std::string& store_prefix) {
    return {{"type", "job"}, {"job", detail::to_json(job)}, {"store", {{"prefix", store_prefix}}}};
  }
};


}  // namespace distmetrics::runtime::detail
