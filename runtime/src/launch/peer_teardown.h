// The launcher's teardown reaching the rank that reports. When a host is lost, Open MPI 4.1.4's
// mpirun sends the ranks of its own node SIGCONT at once, SIGTERM 1 s later and SIGKILL 1 s after
// that (odls_base_sigkill_timeout), to each rank's process group; the other nodes' daemons do the
// same when mpirun tells them (docs/multi-host.md has the measurements). torchrun and Slurm also
// send SIGTERM before SIGKILL. Rank 0 holds SIGTERM while a verdict may be in the making, so that
// it writes the report before it goes: the signal is recorded, the runner stops waiting and
// reports, and the rank leaves (finish()) with the run's exit code. SIGKILL cannot be held: the
// report must be written within the launcher's grace, which starts when the loss is known.
#pragma once

namespace distmetrics::runtime::detail {

// Installs the handler for SIGTERM when its action is the default one (a caller's own handler,
// or SIG_IGN, is left alone); idempotent. Until hold_teardown(true) the signal still ends the
// process at once, as its default action does.
void install_teardown_handler();
// While held, SIGTERM is only recorded. Released, a recorded SIGTERM ends the process now.
void hold_teardown(bool held);
// The SIGTERM recorded while held, or 0.
int teardown_signal();
// Puts back the action SIGTERM had before install_teardown_handler() (nothing held any more).
void restore_teardown_handler();

}  // namespace distmetrics::runtime::detail
