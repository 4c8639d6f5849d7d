"""Runs one command in a session of its own under a hard timeout, and makes sure that every
process it started (the runner and all its ranks) is gone afterwards, checked by process id."""

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

PidKey = Tuple[int, int]  # (pid, start time in clock ticks): a pid alone can be reused


def _read_stat(pid: int) -> Optional[Tuple[int, int, int, str, int]]:
    """(ppid, process group, session, state, start time) of a process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the fields after it follow the last ')'.
    fields = data[data.rindex(b")") + 2:].split()
    return int(fields[1]), int(fields[2]), int(fields[3]), fields[0].decode(), int(fields[19])


def _process_table() -> Dict[int, Tuple[int, int, int, str, int]]:
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _read_stat(int(name))
            if stat is not None:
                table[int(name)] = stat
    return table


def is_alive(key: PidKey) -> bool:
    """True while the process exists and is not a zombie (a zombie is dead, waiting to be reaped)."""
    stat = _read_stat(key[0])
    return stat is not None and stat[4] == key[1] and stat[3] not in ("Z", "X")


class ProcessFamily:
    """Every process a command started: its descendants and the members of its session and
    process group. Ranks can leave the tree (their parent died) or the session (setsid), so the
    family is sampled while the command runs and every member ever seen is remembered."""

    def __init__(self, root_pid: int):
        self.root_pid = root_pid
        self.seen: Set[PidKey] = set()
        self.sampled_at = float("-inf")  # time.monotonic() of the last refresh()

    def refresh_if_older(self, seconds: float) -> None:
        """refresh() unless the last sample is younger than `seconds`: a sample reads every
        process's /proc stat (about a millisecond on a quiet machine), too much to take for each of
        hundreds of quick answers from a long-lived runner whose family rarely changes."""
        if time.monotonic() - self.sampled_at >= seconds:
            self.refresh()

    def refresh(self) -> Set[PidKey]:
        """Samples the family now; returns the members alive now (remembered ones included)."""
        self.sampled_at = time.monotonic()
        table = _process_table()
        members = {pid for pid, (_, pgrp, sid, _, _) in table.items()
                   if sid == self.root_pid or pgrp == self.root_pid}
        children: Dict[int, List[int]] = {}
        for pid, (ppid, _, _, _, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        stack = [self.root_pid, *members]
        while stack:
            for child in children.get(stack.pop(), ()):
                if child not in members:
                    members.add(child)
                    stack.append(child)
        if self.root_pid in table:
            members.add(self.root_pid)
        own = os.getpid()
        for pid in members:
            if pid != own and table[pid][3] not in ("Z", "X"):
                self.seen.add((pid, table[pid][4]))
        return self.alive()

    def alive(self) -> Set[PidKey]:
        return {key for key in self.seen if is_alive(key)}


def _signal_all(keys: Sequence[PidKey], signum: int) -> None:
    for pid, _ in keys:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def end_family(family: ProcessFamily, proc: subprocess.Popen, term_grace: float = 2.0,
               kill_wait: float = 5.0) -> Tuple[List[int], List[int]]:
    """Ends the command and every process of its family: TERM (the runner may end its ranks
    itself), then KILL whatever is left, sampling again for processes started in between.
    Returns (pids that were ended, pids still alive after all that)."""
    targets = family.refresh()
    ended = {pid for pid, _ in targets}
    try:
        os.killpg(family.root_pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    _signal_all(sorted(targets), signal.SIGTERM)
    _wait_gone(family, proc, term_grace)
    deadline = time.monotonic() + kill_wait
    while True:
        left = family.refresh()
        ended |= {pid for pid, _ in left}
        if not left or time.monotonic() >= deadline:
            break
        try:
            os.killpg(family.root_pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        _signal_all(sorted(left), signal.SIGKILL)
        _wait_gone(family, proc, 0.5)
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    return sorted(ended), sorted(pid for pid, _ in family.alive())


def _wait_gone(family: ProcessFamily, proc: subprocess.Popen, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        proc.poll()  # reap the runner so that it stops counting as alive
        if not family.alive():
            return
        time.sleep(0.05)


@dataclass
class Completed:
    command: List[str]
    returncode: Optional[int]     # None when the hard timeout ended it
    timed_out: bool
    seconds: float
    log_path: str
    ended_pids: List[int] = field(default_factory=list)      # ended by us after the timeout
    leftover_pids: List[int] = field(default_factory=list)   # outlived a normal exit; ended by us
    survivors: List[int] = field(default_factory=list)       # could not be ended at all

    def log_tail(self, lines: int = 40) -> str:
        try:
            with open(self.log_path, "r", errors="replace") as log:
                return "".join(log.readlines()[-lines:])
        except OSError:
            return ""


def describe_returncode(code: Optional[int]) -> str:
    if code is None:
        return "no exit status (ended by the timeout)"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "?"
        return f"killed by signal {-code} ({name})"
    return f"exit status {code}"


def run_with_timeout(command: Sequence[str], timeout: float, log_path: str, cwd: str,
                     env: Optional[Dict[str, str]] = None, poll: float = 0.2) -> Completed:
    """Runs command in a new session (so its process group holds the runner and, unless they
    move, its ranks) with output to log_path. After timeout seconds the whole family is ended.
    A normal exit that leaves processes behind has them ended too and listed in leftover_pids."""
    start = time.monotonic()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(list(command), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    family = ProcessFamily(proc.pid)
    result = Completed(list(command), None, False, 0.0, log_path)
    try:
        while True:
            family.refresh()
            remaining = timeout - (time.monotonic() - start)
            if remaining <= 0:
                result.timed_out = True
                result.ended_pids, result.survivors = end_family(family, proc)
                break
            try:
                result.returncode = proc.wait(timeout=min(poll, remaining))
                break
            except subprocess.TimeoutExpired:
                continue
        if not result.timed_out:
            left = family.refresh()
            if left:
                result.leftover_pids = sorted(pid for pid, _ in left)
                _, result.survivors = end_family(family, proc)
    except BaseException:
        # Interrupted (Ctrl-C, pytest-timeout): never leave the ranks running.
        end_family(family, proc, term_grace=0.5)
        raise
    result.seconds = time.monotonic() - start
    return result
