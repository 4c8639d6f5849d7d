# The report model and its views (console, Markdown, HTML), shared by `run` and `conform`.
list(APPEND DISTMETRICS_HARNESS_SOURCES
  src/report/text.cpp
  src/report/model.cpp
  src/report/outcome.cpp
  src/report/console.cpp
  src/report/markdown.cpp
  src/report/html.cpp)
