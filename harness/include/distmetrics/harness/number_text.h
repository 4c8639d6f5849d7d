// Numbers as the verdicts, messages and reports show them: one home for each form (issue 46).
// What a user sees is compared byte for byte across refactors (tools/equivalence), so a caller
// names the precision it shows rather than each file keeping a copy with its own.
#pragma once

#include <string>

namespace distmetrics::harness {

// `value` with at most `significant` significant digits, as %g writes it ("0.5", "1e-07",
// "12.3457"); the infinities as "inf" and "-inf", NaN as "nan" whatever its sign bit.
std::string number_text(double value, int significant = 6);

// `value` with exactly `decimals` digits after the point ("1.50", "0.125"): durations in tables
// and report files, where the digits line up.
std::string fixed_text(double value, int decimals);

// A duration in a sentence, without its unit: two significant digits under 10 s and three from
// there ("0.25", "1.5", "12.3").
std::string seconds_text(double seconds);

}  // namespace distmetrics::harness
