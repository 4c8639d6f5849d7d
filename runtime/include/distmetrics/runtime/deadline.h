// Deadlines: every blocking call in distmetrics takes one, so that nothing waits forever.
#pragma once

#include <chrono>

namespace distmetrics::runtime {

// A point in (steady) time by which an operation must have finished.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after(std::chrono::milliseconds budget) { return Deadline(Clock::now() + budget, budget); }

  // Time left, never negative.
  std::chrono::milliseconds remaining() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now());
    return left.count() > 0 ? left : std::chrono::milliseconds(0);
  }
  bool expired() const { return Clock::now() >= at_; }
  Clock::time_point at() const { return at_; }
  // The budget the deadline was made with (for messages: "did not finish within 2000 ms").
  std::chrono::milliseconds budget() const { return budget_; }

  // The earlier of two deadlines.
  static const Deadline& earliest(const Deadline& a, const Deadline& b) { return a.at_ <= b.at_ ? a : b; }

 private:
  Deadline(Clock::time_point at, std::chrono::milliseconds budget) : at_(at), budget_(budget) {}
  Clock::time_point at_;
  std::chrono::milliseconds budget_;
};

}  // namespace distmetrics::runtime
