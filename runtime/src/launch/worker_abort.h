// Ending a hung job's collectives inside a pool worker, without ending the worker (the supervisor
// side: RankPool::Impl::end_in_place, pool_recovery.cpp; docs/runtime.md, "A hang ended in
// place"). The supervisor sends kWorkerAbortSignal; its handler only writes to a pipe; the
// worker's watchdog thread, woken by the pipe, shuts the process's TCP connections down.
#pragma once

namespace distmetrics::runtime::detail {

// Makes the abort pipe and installs the signal's handler; returns the pipe's read end, which
// the watchdog polls. Throws ConfigError when the pipe cannot be made. Once per worker.
int arm_abort_signal();
// Installs the handler again (before each job: the last job's code may have put its own there).
void handle_abort_signal();
// Drains the pipe; true when a signal came.
bool take_abort_signals();
// Ignores the signal from now on and closes the pipe (at the worker's end).
void disarm_abort_signal();

// Shuts down every connected TCP socket of this process; listening ones are left alone (gloo's
// transport keeps one for the process's life). In a worker these are the current job's process
// groups' pairs: the control channel and the store are Unix sockets. A collective waiting on a
// pair then fails at once, here and on the peer at its other end ("Connection closed by peer"),
// and the job's task ends with the error instead of waiting for the backend's timeout. The
// sockets stay open (their owners close them when the job's groups go). Returns how many.
int shut_down_tcp_connections();

}  // namespace distmetrics::runtime::detail
