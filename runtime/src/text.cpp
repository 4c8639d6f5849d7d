#include "distmetrics/runtime/text.h"

#include <c10/util/Exception.h>
#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>

namespace distmetrics::runtime {
namespace {

std::string lower(const std::string& s) {
  std::string out = s;
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Damerau-Levenshtein (optimal string alignment): a swapped pair of letters costs one edit.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

}  // namespace

std::vector<std::string> closest_names(const std::string& name, const std::vector<std::string>& known,
                                       std::size_t limit) {
  const std::string key = lower(name);
  if (key.empty()) return {};
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& candidate : known) {
    const std::string c = lower(candidate);
    std::size_t score = edit_distance(key, c);
    // A name that starts with what was typed ("acc" -> "accuracy") is close whatever its length.
    const bool prefix = c.rfind(key, 0) == 0 || key.rfind(c, 0) == 0;
    if (prefix) score = std::min<std::size_t>(score, 1);
    const std::size_t allowed = std::max<std::size_t>(2, std::max(key.size(), c.size()) / 3);
    if (score <= allowed) scored.emplace_back(score, candidate);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& entry : scored) {
    if (out.size() == limit) break;
    out.push_back(entry.second);
  }
  return out;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
  return out;
}

std::string known_list(const std::vector<std::string>& names, const std::string& where_listed, std::size_t limit) {
  if (names.size() <= limit) return quoted_list(names);
  return quoted_list({names.begin(), names.begin() + static_cast<std::ptrdiff_t>(limit)}) + " and " +
         std::to_string(names.size() - limit) + " more: " + where_listed;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& known) {
  const auto close = closest_names(name, known);
  if (close.empty()) return {};
  if (close.size() == 1) return "; did you mean '" + close.front() + "'?";
  return "; did you mean one of " + quoted_list(close) + "?";
}

std::string shell_quote(const std::string& s, bool always) {
  if (!always && !s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@+-,%") ==
                        std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string error_message(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

std::string type_name_of(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(type.name(), nullptr, nullptr, &status),
                                                   std::free);
  const std::string name = status == 0 && demangled ? demangled.get() : type.name();
  const auto colon = name.rfind("::");
  if (colon == std::string::npos) return name;
  // "std::runtime_error" says where the type comes from; a project's own namespaces say nothing.
  if (name.rfind("std::", 0) == 0) return "std::" + name.substr(colon + 2);
  return name.substr(colon + 2);
}

std::string exception_type_name(const std::exception& e) {
  if (const auto* named = dynamic_cast<const NamesItsType*>(&e)) return named->type_name();
  return type_name_of(typeid(e));
}

std::string current_exception_type_name() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  return type == nullptr ? "unknown" : type_name_of(*type);
}

}  // namespace distmetrics::runtime
