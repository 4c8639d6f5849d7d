"""One long-lived runner per pytest process: `distmetrics serve` reads a request line per
variant on stdin and answers each with one JSON line (the variant's object of the JSON report)
on stdout. Its rank pools stay up between items, which is what makes pytest as fast as the CLI.
A hang past the item's hard timeout, or a runner that dies, ends the runner and every process it
started; the next item starts a fresh one."""

import json
import os
import select
import subprocess
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from .processes import ProcessFamily, end_family


@dataclass
class Answer:
    """What came back for one request."""
    entry: Optional[Dict] = None       # the variant's report object, when the runner answered
    timed_out: bool = False            # no answer within the hard timeout: the runner was ended
    returncode: Optional[int] = None   # set when the runner exited instead of answering
    bad_line: Optional[str] = None     # a line that is no JSON object
    seconds: float = 0.0
    ended_pids: List[int] = field(default_factory=list)
    survivors: List[int] = field(default_factory=list)
    log_path: str = ""
    log_offset: int = 0                # where this item's part of the runner's log starts

    def log_tail(self, lines: int = 40) -> str:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self.log_offset)
                text = log.read().decode(errors="replace")
        except OSError:
            return ""
        return "".join(text.splitlines(keepends=True)[-lines:])


class StreamRunner:
    def __init__(self, command: Sequence[str], cwd: str, env: Optional[Dict[str, str]],
                 log_path: str):
        self.command = list(command)
        self.log_path = log_path
        with open(log_path, "ab") as log:
            # Its own session: its process group holds the runner and, unless they move, its ranks.
            self.proc = subprocess.Popen(self.command, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=log, bufsize=0,
                                         start_new_session=True)
        self.family = ProcessFamily(self.proc.pid)
        self._pending = b""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _log_size(self) -> int:
        try:
            return os.path.getsize(self.log_path)
        except OSError:
            return 0

    def ask(self, request: Dict, timeout: float, poll: float = 0.2) -> Answer:
        """Sends one request and waits up to `timeout` seconds for its answer line."""
        start = time.monotonic()
        answer = Answer(log_path=self.log_path, log_offset=self._log_size())
        try:
            try:
                self.proc.stdin.write((json.dumps(request) + "\n").encode())
            except OSError:  # the runner is gone (broken pipe)
                self._ended(answer)
                return answer
            fd = self.proc.stdout.fileno()
            while b"\n" not in self._pending:
                # Sampled at the poll interval, as run_with_timeout samples a one-shot runner.
                self.family.refresh_if_older(poll)
                remaining = timeout - (time.monotonic() - start)
                if remaining <= 0:
                    answer.timed_out = True
                    answer.ended_pids, answer.survivors = end_family(self.family, self.proc)
                    break
                ready, _, _ = select.select([fd], [], [], min(poll, remaining))
                if not ready:
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:  # end of file: the runner exited without answering
                    self._ended(answer)
                    break
                self._pending += chunk
            if b"\n" in self._pending:
                line, self._pending = self._pending.split(b"\n", 1)
                text = line.decode(errors="replace")
                try:
                    entry = json.loads(text)
                except json.JSONDecodeError:
                    entry = None
                if isinstance(entry, dict):
                    answer.entry = entry
                else:
                    answer.bad_line = text[:500]
        except BaseException:
            # Interrupted (Ctrl-C, pytest-timeout): never leave the runner or its ranks running.
            end_family(self.family, self.proc, term_grace=0.5)
            raise
        answer.seconds = time.monotonic() - start
        return answer

    def _ended(self, answer: Answer) -> None:
        """The runner exited: its status, and every process it left behind ended."""
        try:
            answer.returncode = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if self.family.refresh() or self.proc.poll() is None:
            answer.ended_pids, answer.survivors = end_family(self.family, self.proc)
            answer.returncode = self.proc.poll()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self, wait: float = 30.0) -> List[int]:
        """Ends the runner: closes its stdin (it stops its pools and exits), then ends whatever of
        its family is still there. Returns the pids that had to be ended that way."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass
        left = self.family.refresh()
        if not left and self.proc.poll() is not None:
            return []
        ended, _ = end_family(self.family, self.proc)
        return ended

    def kill(self) -> None:
        end_family(self.family, self.proc, term_grace=0.5)
