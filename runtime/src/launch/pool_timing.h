// How long the rank pool's supervisor waits for what (pool_supervisor.h, pool_supervision.cpp).
#pragma once

#include <chrono>
#include <cstddef>

namespace distmetrics::runtime::detail {

using namespace std::chrono_literals;

// After the first sign of a hang or crash, how long to keep listening for the other ranks'
// reports (they make the diagnosis better) before ending the pool: the most a settle waits.
inline constexpr auto kSettle = 300ms;
// After two ranks were seen in one collective with contributions that do not match: a hang,
// unless the backend aborts first (gloo does on some: a crash, which says more), given this long.
// Over the peer run gloo's abort came within 10 ms of the mismatch being seen, under load
// (docs/performance.md, "A hang decided when it is certain"): this is 25 times that.
inline constexpr auto kMismatchSettle = 250ms;
// A hang's settle ends as soon as every rank's fate is known (fates_known) and no rank has been
// heard from for this long: what a rank sent just before arrives within it (its progress waits
// 2 ms to go in a batch, and is written before any store request).
inline constexpr auto kFatesQuiet = 10ms;
inline constexpr auto kWorkerSendBudget = 5s;
// How often the supervisor looks at its children's exit while waiting (a rank can die while a
// process it forked keeps its connection open).
inline constexpr auto kWatchInterval = 50ms;
inline constexpr std::size_t kLogTailBytes = 4096;
// After a hang on a backend whose hangs end in place (Backend::hangs_end_in_place): how long the
// told ranks have to end the job's collectives and answer before the pool's workers are ended as
// after any other hang. A rank answers within tens of milliseconds (docs/performance.md, "A hang
// ended in place").
inline constexpr auto kAbortBudget = 1000ms;

}  // namespace distmetrics::runtime::detail
