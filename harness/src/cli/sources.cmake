# The distmetrics command-line tool.
