// Text helpers every layer shares for its messages: close-name suggestions ("unknown shard
// policy 'evne'; did you mean 'even'?"), quoting for the shell (the "reproduce:" commands), the
// first line of a text, an exception's message without LibTorch's backtrace, an exception's
// type name as reports show it, and why something cannot run here (Unavailable).
#pragma once

#include <exception>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

namespace distmetrics::runtime {

// Why something cannot run here (a backend not built, too few GPUs, a plugin without the
// metric): `text`, the whole sentence with what was found, and `gist`, its opening that the
// views group skips by ("nccl: needs 2 GPUs" of "nccl: needs 2 GPUs (one per rank), found 0").
// Made as the gist and what follows it, so that no view has to cut a sentence to group it.
struct Unavailable {
  std::string gist;
  std::string text;
  explicit Unavailable(std::string gist_, const std::string& more = "") : gist(std::move(gist_)), text(gist + more) {}
  bool operator==(const Unavailable& o) const { return gist == o.gist && text == o.text; }
  bool operator!=(const Unavailable& o) const { return !(*this == o); }
};

// The known names closest to `name` (case-insensitive edit distance, prefixes count as close),
// best first, at most `limit` of them; empty when none is reasonably close.
std::vector<std::string> closest_names(const std::string& name, const std::vector<std::string>& known,
                                       std::size_t limit = 3);

// "; did you mean 'even'?" or "; did you mean one of 'even', 'uneven'?"; empty when nothing is close.
std::string did_you_mean(const std::string& name, const std::vector<std::string>& known);

// "'a', 'b', 'c'": for "expected one of ..." messages.
std::string quoted_list(const std::vector<std::string>& names);

// The known names for an error's "(known: ...)": all of them, or past `limit` the first `limit`
// and how many more, with `where_listed` saying where the whole list is (a catalog of several
// hundred Python classes would make one error line of 15 KB, repeated per file).
std::string known_list(const std::vector<std::string>& names, const std::string& where_listed,
                       std::size_t limit = 20);

// `s` as one word for a POSIX shell: as it is when it holds only safe characters (unless
// `always`), else in single quotes (a quote inside as '\''), so that pasting it runs nothing
// ($(...), backticks, ;) and passes `s` unchanged.
std::string shell_quote(const std::string& s, bool always = false);

// `text` up to its first newline (all of it when it has none).
std::string first_line(const std::string& text);

// What `e` says, without the C++ backtrace a c10::Error appends to what().
std::string error_message(const std::exception& e);

// An exception that names its own type: one raised elsewhere (a Python metric's exception)
// keeps the type it had there ("NotComputableError", "ValueError") in every report.
class NamesItsType {
 public:
  virtual ~NamesItsType() = default;
  virtual const std::string& type_name() const = 0;
};

// The unqualified name of an exception's type as reports show it: "InputError", "Error" (c10),
// "std::runtime_error" (standard types keep their "std::"); a NamesItsType's own name.
std::string type_name_of(const std::type_info& type);
std::string exception_type_name(const std::exception& e);
// The type of the exception being handled (inside a catch block); "unknown" outside one.
std::string current_exception_type_name();

}  // namespace distmetrics::runtime
