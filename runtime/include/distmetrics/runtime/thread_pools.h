// Library thread pools that start threads as their library loads, and the one rule for them:
// while this process may still fork the worker zygote (rank_pool.h), they are held at one thread.
//
// OpenBLAS (numpy's and scipy's, which `import torch` loads) starts its pool in the library's
// constructor, one thread per core less one, or as many as OPENBLAS_NUM_THREADS (else
// GOTO_NUM_THREADS, else OMP_NUM_THREADS) asks; fork is only safe while one thread runs, so a
// single such thread made every rank worker import the sources itself (seconds per rank, 13
// times slower with OPENBLAS_NUM_THREADS=4). One descriptor per variable, in one table.
#pragma once

#include <string>
#include <vector>

namespace distmetrics::runtime {

struct ThreadPoolVariable {
  const char* name;     // the environment variable
  const char* readers;  // which libraries read it for their pool's size
  const char* held = "1";  // the value it is held at: one thread, or "false" for an on/off switch
};

// The variables held, in the order the docs list them.
const std::vector<ThreadPoolVariable>& thread_pool_variables();

// Sets every variable of the table to its held value (whatever the user set), before a library that reads
// one loads (the embedded interpreter's first import: start_embedded_python). What a rank then
// runs with is one thread per library pool: the rank policy (worker.cpp sets torch's intra-op
// pool to one thread too), since a node's ranks share its cores, and the single-process
// reference runs at one thread as well, so a variant compares like with like. Idempotent.
void hold_thread_pools_at_one();

// "OPENBLAS_NUM_THREADS=4, OMP_NUM_THREADS=4" for the variables the user had set to other than
// 1 before hold_thread_pools_at_one (empty when none), for the docs of a run and its messages.
std::string held_thread_pool_settings();

// The threads of this process besides the calling one, by name and count, e.g.
// "2 more threads: python (2)": what keeps the zygote from being forked, for a message.
std::string other_threads_description();

}  // namespace distmetrics::runtime
