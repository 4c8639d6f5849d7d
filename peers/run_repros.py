"""Runs the reproductions of peers/repro/ together: this interpreter imports torch and every module
the scripts import once, then runs each script as `__main__` (runpy) in a fork of itself, a few at
a time (--jobs, default the cores there are), each under a deadline. A script starts its ranks as
forks of its own process (peers/repro/common.py, START_METHOD), each run in its own process group
of torch.distributed and its own processes, as when it runs alone with `python peers/repro/NAME.py`.

Before it forks anything this interpreter has no thread but its own: OpenMP, OpenBLAS and MKL
are set to one thread before numpy and torch load, torch runs on one, and it never makes a
process group.

    python peers/run_repros.py --reports DIR [--jobs N] [--deadline S] [--summary FILE] [--brief] [SCRIPT...]

Each script's output (its prints and its ranks') goes to DIR/<name>.txt. Exit codes of a script:
0 its bug shows, 77 it is about other releases (common.NOT_FOR_THIS_RELEASE), 124 past the
deadline (ended), anything else: not shown. One line per script as it ends (its outcome, time and
last line; --brief: not the line), then a summary; --summary writes `name<TAB>code<TAB>seconds` per
script, in the scripts' order. The runner exits 0 when every script gave 0 or 77, 1 otherwise, 2
on bad input.
"""

import argparse
import ast
import os
import runpy
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPRO_DIR = os.path.join(HERE, "repro")
NOT_FOR_THIS_RELEASE = 77
PAST_DEADLINE = 124


def scripts_in(folder):
    return sorted(os.path.join(folder, name) for name in os.listdir(folder)
                  if name.endswith(".py") and name != "common.py")


def imported_modules(paths):
    """The modules the scripts import (anywhere in them) and name in `preload=[...]`, in first-seen order."""
    seen = {"torch": None, "torch.distributed": None, "torch.multiprocessing": None}
    for path in paths:
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.keyword) and node.arg == "preload" and isinstance(node.value, (ast.List, ast.Tuple)):
                names = [e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            else:
                continue
            for name in names:
                seen.setdefault(name, None)
    return [name for name in seen if name != "common"]


def preload(modules):
    """Imports what it can; a module that fails to import is the script's to report."""
    failed = []
    for name in modules:
        try:
            __import__(name)
        except Exception as e:  # noqa: BLE001 - any import error: the script will meet it and say so
            failed.append(f"{name} ({type(e).__name__})")
    return failed


def _child(path, out_path):
    """In the fork: the script as __main__, its output (and its ranks') into out_path; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)  # the script and its ranks: one group of processes, ended together
        fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        sys.argv = [path]
        sys.path[0] = os.path.dirname(path)
        try:
            runpy.run_path(path, run_name="__main__")
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:  # noqa: BLE001 - the script's own failure: printed, exit 1
            traceback.print_exc()
            code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code & 0xFF)


def last_line(path):
    try:
        with open(path, errors="replace") as f:
            lines = [line.rstrip("\n") for line in f if line.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def describe(code):
    if code == 0:
        return "shown"
    if code == NOT_FOR_THIS_RELEASE:
        return "other release"
    if code == PAST_DEADLINE:
        return "past the deadline"
    return f"not shown (exit {code})"


def run_all(paths, reports, jobs, deadline_s, echo=print, brief=False):
    """{path: (exit code, seconds)}, running up to `jobs` scripts at once, each under deadline_s."""
    pending = list(paths)
    running = {}  # pid -> (path, out_path, start)
    results = {}
    try:
        while pending or running:
            while pending and len(running) < jobs:
                path = pending.pop(0)
                out_path = os.path.join(reports, os.path.splitext(os.path.basename(path))[0] + ".txt")
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _child(path, out_path)
                try:
                    os.setpgid(pid, pid)  # also here: no race with the child's own setpgid
                except OSError:
                    pass
                running[pid] = (path, out_path, time.monotonic())
            # An ended script is looked at before it is reaped (WNOWAIT): its group id cannot be
            # reused while it is a zombie, so ranks it left behind are ended with it, safely.
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            now = time.monotonic()
            if info is None:
                for pid, (path, out_path, start) in list(running.items()):
                    if now - start > deadline_s:
                        _end_group(pid)
                        os.waitpid(pid, 0)
                        del running[pid]
                        with open(out_path, "a") as f:
                            f.write(f"\nrun_repros.py: ended past the deadline of {deadline_s:g} s\n")
                        results[path] = (PAST_DEADLINE, now - start)
                        echo(f"{os.path.basename(path)}: {describe(PAST_DEADLINE)} after {now - start:.1f} s")
                time.sleep(0.05)
                continue
            if info.si_pid in running:
                _end_group(info.si_pid)  # ranks left behind, if any
            pid, status = os.waitpid(info.si_pid, 0)
            if pid not in running:
                continue
            path, out_path, start = running.pop(pid)
            code = os.waitstatus_to_exitcode(status)
            if code < 0:
                code = 128 - code  # killed by a signal, as a shell says it
            results[path] = (code, now - start)
            echo(f"{os.path.basename(path)}: {describe(code)} in {now - start:.1f} s" +
                 ("" if brief else f": {last_line(out_path)}"))
    finally:
        for pid in running:  # interrupted: nothing left running
            _end_group(pid)
    return {path: results[path] for path in paths}


def _end_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scripts", nargs="*", help="repro scripts (default: every one of peers/repro/ but common.py)")
    parser.add_argument("--reports", required=True, help="folder for each script's output, <name>.txt")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="scripts at once (default: the cores)")
    parser.add_argument("--deadline", type=float, default=180, help="seconds a script may take (default 180)")
    parser.add_argument("--summary", help="write name<TAB>exit code<TAB>seconds per script here")
    parser.add_argument("--brief", action="store_true", help="per script its outcome and time, not its last line")
    args = parser.parse_args(argv)
    paths = [os.path.abspath(p) for p in args.scripts] or scripts_in(REPRO_DIR)
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing or args.jobs < 1:
        print(f"run_repros.py: {'no such script: ' + ', '.join(missing) if missing else '--jobs must be at least 1'}",
              file=sys.stderr)
        return 2
    os.makedirs(args.reports, exist_ok=True)

    started = time.monotonic()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"  # before numpy and torch load: no pool threads to fork past
    sys.path.insert(0, REPRO_DIR)
    import common  # first: it puts the peers venv's libraries on the path for Debian's python
    common.START_METHOD = "fork"
    failed = preload(imported_modules(paths))
    import torch
    torch.set_num_threads(1)
    print(f"run_repros.py: {len(paths)} scripts, {args.jobs} at a time, imports in {time.monotonic() - started:.1f} s"
          + (f" (not importable here: {', '.join(failed)})" if failed else ""), flush=True)

    results = run_all(paths, args.reports, args.jobs, args.deadline, echo=lambda line: print(line, flush=True),
                      brief=args.brief)
    if args.summary:
        with open(args.summary, "w") as f:
            for path, (code, seconds) in results.items():
                f.write(f"{os.path.basename(path)}\t{code}\t{seconds:.1f}\n")
    counts = {}
    for code, _ in results.values():
        what = describe(code) if code in (0, NOT_FOR_THIS_RELEASE) else "not shown"
        counts[what] = counts.get(what, 0) + 1
    print(f"run_repros.py: {len(paths)} scripts in {time.monotonic() - started:.1f} s wall time: " +
          ", ".join(f"{n} {what}" for what, n in sorted(counts.items())), flush=True)
    return 0 if all(code in (0, NOT_FOR_THIS_RELEASE) for code, _ in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
