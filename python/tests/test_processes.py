"""run_with_timeout on real process trees: what the hard timeout ends, what a normal exit leaves."""

import signal
import textwrap

from distmetrics.pytest_plugin.processes import describe_returncode, run_with_timeout

from conftest import pid_alive

# Starts three sleeps: one plain, one that ignores TERM, one in a session of its own; prints
# their pids, then waits for them.
TREE = textwrap.dedent("""\
    sleep 100 & echo $!
    sh -c 'trap "" TERM; exec sleep 100' & echo $!
    setsid sleep 100 & echo $!
    wait
""")


def pids_in(log_path):
    return [int(line) for line in open(log_path).read().split()]


def test_the_timeout_ends_the_whole_tree(tmp_path):
    log = tmp_path / "log"
    done = run_with_timeout(["sh", "-c", TREE], timeout=1.0, log_path=str(log), cwd=str(tmp_path))
    assert done.timed_out and done.returncode is None
    children = pids_in(log)
    assert len(children) == 3
    assert set(children) <= set(done.ended_pids)
    assert done.survivors == []
    assert not [pid for pid in children if pid_alive(pid)]


def test_a_normal_exit_keeps_its_status_and_output(tmp_path):
    log = tmp_path / "log"
    done = run_with_timeout(["sh", "-c", "echo hello; exit 3"], timeout=30, log_path=str(log),
                            cwd=str(tmp_path))
    assert (done.timed_out, done.returncode, done.leftover_pids) == (False, 3, [])
    assert done.log_tail() == "hello\n"


def test_processes_left_after_a_normal_exit_are_found_and_ended(tmp_path):
    log = tmp_path / "log"
    done = run_with_timeout(["sh", "-c", "sleep 100 & echo $!; exit 0"], timeout=30,
                            log_path=str(log), cwd=str(tmp_path))
    (left,) = pids_in(log)
    assert done.returncode == 0
    assert done.leftover_pids == [left]
    assert not pid_alive(left)


def test_describe_returncode():
    assert describe_returncode(0) == "exit status 0"
    assert describe_returncode(-signal.SIGKILL) == "killed by signal 9 (SIGKILL)"
    assert describe_returncode(None) == "no exit status (ended by the timeout)"
