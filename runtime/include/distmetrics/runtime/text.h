// Close-name suggestions for error messages: "unknown shard policy 'evne'; did you mean 'even'?".
#pragma once

#include <string>
#include <vector>

namespace distmetrics::runtime {

// The known names closest to `name` (case-insensitive edit distance, prefixes count as close),
// best first, at most `limit` of them; empty when none is reasonably close.
std::vector<std::string> closest_names(const std::string& name, const std::vector<std::string>& known,
                                       std::size_t limit = 3);

// "; did you mean 'even'?" or "; did you mean one of 'even', 'uneven'?"; empty when nothing is close.
std::string did_you_mean(const std::string& name, const std::vector<std::string>& known);

// "'a', 'b', 'c'": for "expected one of ..." messages.
std::string quoted_list(const std::vector<std::string>& names);

}  // namespace distmetrics::runtime
