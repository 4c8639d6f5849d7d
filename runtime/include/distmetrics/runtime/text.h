// Text helpers: close-name suggestions for error messages ("unknown shard policy 'evne'; did you
// mean 'even'?") and quoting for the shell (the "reproduce:" commands).
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

// `s` as one word for a POSIX shell: as it is when it holds only safe characters (unless
// `always`), else in single quotes (a quote inside as '\''), so that pasting it runs nothing
// ($(...), backticks, ;) and passes `s` unchanged.
std::string shell_quote(const std::string& s, bool always = false);

}  // namespace distmetrics::runtime
