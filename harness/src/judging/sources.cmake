# Judging a variant (include_internal/distmetrics/harness/internal/judging.h): each rank's result
# decoded once, the rules that decide the verdict, who is to blame; the wire types of a rank's
# observation, comparing results, running the property checks, root causes, the verdict.
list(APPEND DISTMETRICS_HARNESS_SOURCES
  src/judging/observation.cpp
  src/judging/compare.cpp
  src/judging/check.cpp
  src/judging/root_cause.cpp
  src/judging/verdict.cpp
  src/judging/ranks.cpp
  src/judging/rules.cpp
  src/judging/before_death.cpp
  src/judging/blame.cpp)
