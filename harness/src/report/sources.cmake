# The report model, built from the verdicts, and its views (JSON, JUnit, console, Markdown, HTML),
# shared by `run`, `conform` and `explore`; the tables other programs read (tables.cpp: `distmetrics tables`).
list(APPEND DISTMETRICS_HARNESS_SOURCES
  src/report/report.cpp
  src/report/text.cpp
  src/report/number_text.cpp
  src/report/model.cpp
  src/report/outcome.cpp
  src/report/console.cpp
  src/report/markdown.cpp
  src/report/html.cpp
  src/report/json.cpp
  src/report/junit.cpp
  src/report/tables.cpp)
