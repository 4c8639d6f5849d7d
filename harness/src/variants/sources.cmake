# Variants and the session that runs them: a variant's id and expansion, the engine that plans and
# runs one, the plan's wire form, the variant as a rank receives it and the task every rank runs,
# the session and its local pools, where metrics are found.
list(APPEND DISTMETRICS_HARNESS_SOURCES
  src/variants/variant.cpp
  src/variants/engine.cpp
  src/variants/variant_plan.cpp
  src/variants/rank_variant.cpp
  src/variants/scenario_task.cpp
  src/variants/session.cpp
  src/variants/metric_catalog.cpp
  src/variants/metric_id.cpp)
