# The scenario engine (scenario files, data, shards, placements, checks, reports).
