"""Starting ranks for the reproductions, with torch.distributed alone (no distmetrics): gloo on a
FileStore, torch.multiprocessing spawn, a timeout on every wait. Each script's `body(rank,
world_size)` runs on every rank and returns what that rank saw (picklable); `run` returns them
in rank order, or raises TimeoutError when a rank did not finish in time (a hang).

Each script says which releases it is about (`requires`, first thing in its main): the torch and
library versions its bug shows on. On another release it exits NOT_FOR_THIS_RELEASE (77), which
ci/run_peers.sh counts apart; DISTMETRICS_REPRO_ANY_RELEASE=1 runs it anyway (to show that a
fixed bug is gone). The scripts run on Debian's /usr/bin/python3 (the libraries of the peers
venv, peers/venv.sh, are added to the path) or on a venv's python with its own libraries (the
torch 2.x venv, ci/torch2-venv.sh).

Run alone, a script starts its ranks with spawn (each imports torch afresh). peers/run_repros.py,
which imports torch and the libraries once and runs every script in a fork of itself, sets
START_METHOD to "fork": the ranks are forks of the script's process (no import, no thread started
before the fork: it runs torch on one thread and never makes a process group itself).

A hang is decided when it is certain (`run`), not at the timeout: every rank still running has
made its group and has used no CPU (/proc/PID/stat) for HANG_GRACE_S seconds, and nothing has
happened (a rank's result, a rank's end) for as long. A rank blocked in a collective sleeps in
gloo's wait; a rank that computes, however slowly on a loaded machine, uses CPU. No running rank
can then issue what the blocked ones wait for, so they are ended and reported "hang", the message
saying it was decided before the timeout. torch.distributed's own timeout (timeout_s) stays the
backstop (where /proc is missing, or a rank keeps using CPU): the waiting rank raises there."""

import datetime
import os
import queue
import re
import sys
import tempfile
import time
import traceback
import warnings

import torch.distributed as dist
import torch.multiprocessing as mp


NOT_FOR_THIS_RELEASE = 77
# "spawn" alone; peers/run_repros.py sets "fork" (its interpreter has imported torch and the libraries).
START_METHOD = "spawn"
# Seconds every still-running rank must sit in its group without using CPU, with nothing else
# happening, before it is declared a hang (see the module's text). 2.5 s: a rank that a loaded
# 2-core machine (two repros at once, each with its ranks) leaves waiting for a core still gets
# its tens of milliseconds of CPU in that time, and a blocked one gets none.
HANG_GRACE_S = float(os.environ.get("DISTMETRICS_REPRO_HANG_GRACE_S", "2.5"))
# CPU seconds a rank may use in that time and still count as blocked (gloo's wait wakes rarely).
_BLOCKED_CPU_S = 0.05
# The distributions whose versions a script may require, by the name it gives them.
_DISTRIBUTIONS = {"torchmetrics": "torchmetrics", "ignite": "pytorch-ignite", "torcheval": "torcheval"}


def _venv():
    """The peers venv's site-packages (peers/venv.sh), when the library is not on the path: only
    for the base interpreter (a venv's python runs with its own libraries)."""
    if sys.prefix != sys.base_prefix:
        return
    venv = os.environ.get("DISTMETRICS_PEERS_VENV") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "distmetrics", "peers-torch1.13")
    site = os.path.join(venv, "lib", f"python{sys.version_info.major}.{sys.version_info.minor}", "site-packages")
    if os.path.isdir(site) and site not in sys.path:
        sys.path.append(site)


_venv()


def _rank_main(rank, world_size, store_path, body, results, timeout_s, preload):
    warnings.simplefilter("ignore")
    _venv()
    for module in preload:  # imported before the group exists, so that the deadline is the collectives'
        __import__(module)
    store = dist.FileStore(store_path, world_size)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=timeout_s))
    _all_connected(store, world_size, timeout_s)
    results.put((rank, "group", None))  # from here on, a rank using no CPU is waiting on its peers
    try:
        results.put((rank, "ok", body(rank, world_size)))
    except Exception as e:  # noqa: BLE001 - what the rank raised is the observation
        results.put((rank, "raised", f"{type(e).__name__}: {e}".splitlines()[0][:300]))
        traceback.print_exc(limit=2)
    finally:
        dist.destroy_process_group()


def _all_connected(store, world_size, timeout_s):
    """Waits, on the store, until every rank's init_process_group has returned. Gloo's connect
    returns on a rank once its own side of each pair is up: a rank whose body ends at once would
    otherwise destroy its group while a slower peer is still connecting to it, and that peer fails
    with "Gloo connectFullMesh failed ... Connection closed by peer" (seen under load; the same
    mechanism docs/peers.md describes for the harness). A store counter, not a collective: the
    repro's own collectives stay the first ones."""
    store.add("distmetrics_repro/connected", 1)
    deadline = datetime.datetime.now() + datetime.timedelta(seconds=timeout_s)
    while store.add("distmetrics_repro/connected", 0) < world_size:
        if datetime.datetime.now() > deadline:
            raise TimeoutError(f"not every rank made its group within {timeout_s} s")
        time.sleep(0.005)


_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01


def _cpu_seconds(pid):
    """User and system CPU time of a process (all its threads), or None where /proc cannot say."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * _TICK_S  # utime, stime: fields 14 and 15
    except (OSError, IndexError, ValueError):
        return None


class _Quiet:
    """Since when each rank has used no more than _BLOCKED_CPU_S of CPU (None: /proc cannot say)."""

    def __init__(self):
        self.mark = {}

    def since(self, rank, pid, now):
        cpu = _cpu_seconds(pid)
        if cpu is None:
            return None
        if rank not in self.mark or cpu - self.mark[rank][0] > _BLOCKED_CPU_S:
            self.mark[rank] = (cpu, now)
        return self.mark[rank][1]


def run(body, world_size=2, timeout_s=10, preload=()):
    """{rank: ("ok", value) or ("raised", text) or ("crashed", text) or ("hang", text)}. A hang:
    the ranks still running once they have sat in their group HANG_GRACE_S seconds without using
    CPU while nothing else happened (decided there and then: the module's text), or at the latest
    timeout_s + 60 s after the start; they are ended. timeout_s is also torch.distributed's own
    timeout: a collective still waiting then raises in its rank (the backstop)."""
    ctx = mp.get_context(START_METHOD)
    results = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        procs = [ctx.Process(target=_rank_main, args=(r, world_size, os.path.join(tmp, "store"), body, results, timeout_s,
                                                          tuple(preload)))
                 for r in range(world_size)]
        for p in procs:
            p.start()
        out = {}
        grouped, dead = set(), set()
        quiet = _Quiet()
        last_event = time.monotonic()
        deadline = last_event + timeout_s + 60
        while len(out) < world_size and time.monotonic() < deadline:
            try:
                rank, kind, value = results.get(timeout=0.25)
                if kind == "group":
                    grouped.add(rank)
                else:
                    out[rank] = (kind, value)
                last_event = time.monotonic()
                continue
            except queue.Empty:
                pass
            alive = [r for r, p in enumerate(procs) if r not in out and p.is_alive()]
            if not alive:
                break  # every rank ended; those without a result died
            now = time.monotonic()
            ended = {r for r in range(world_size) if r not in out and r not in alive}
            if ended - dead:  # a rank died without a result since the last look
                dead |= ended
                last_event = now
            since = {r: quiet.since(r, procs[r].pid, now) for r in alive}
            if (now - last_event >= HANG_GRACE_S and all(r in grouped for r in alive)
                    and all(s is not None and now - s >= HANG_GRACE_S for s in since.values())):
                for r in alive:
                    procs[r].kill()
                    out[r] = ("hang", f"rank {r} blocked in its group, no CPU used for {now - since[r]:.1f} s and no rank "
                                      f"left to unblock it (decided before torch.distributed's {timeout_s} s timeout)")
                break
        for r, p in enumerate(procs):
            p.join(timeout=2)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
                out.setdefault(r, ("hang", f"rank {r} did not finish within {timeout_s} s"))
            out.setdefault(r, ("crashed", f"rank {r} died with exit code {p.exitcode}"))
        return dict(sorted(out.items()))


def _version_tuple(text):
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3])


def _holds(version, spec):
    """`version` ("2.15.0+cu132") against a spec of comma-separated clauses (">=2.1", "<2.1", "==1.5.2")."""
    ops = {">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b,
           ">": lambda a, b: a > b, "<": lambda a, b: a < b}
    for clause in spec.split(","):
        m = re.fullmatch(r"\s*(>=|<=|==|>|<)\s*([0-9.]+)\s*", clause)
        if not m:
            raise ValueError(f"bad version spec {spec!r} (clauses like '>=2.1', '<2.1', '==1.5.2')")
        want = _version_tuple(m.group(2))
        if not ops[m.group(1)](_version_tuple(version)[:len(want)], want):
            return False
    return True


def installed(name):
    """The installed version of torch or of a library (torchmetrics, ignite, torcheval)."""
    if name == "torch":
        import torch
        return torch.__version__
    from importlib import metadata
    return metadata.version(_DISTRIBUTIONS[name])


def requires(**specs):
    """The releases this script's bug shows on, e.g. requires(torch="<2.1", torchmetrics=">=1.3.2"):
    on another release it says so and exits NOT_FOR_THIS_RELEASE (unless DISTMETRICS_REPRO_ANY_RELEASE=1)."""
    versions = {name: installed(name) for name in specs}
    off = [f"{name} {spec} (this is {versions[name]})" for name, spec in specs.items() if not _holds(versions[name], spec)]
    if off and os.environ.get("DISTMETRICS_REPRO_ANY_RELEASE") != "1":
        print(f"NOT FOR THIS RELEASE: needs {'; '.join(off)}")
        sys.exit(NOT_FOR_THIS_RELEASE)
    return versions


def verdict(shown, what):
    """Prints the outcome; exit 0 when the bug shows (CI checks that it still does), 1 when not."""
    print(("BUG SHOWN: " if shown else "BUG NOT SHOWN (fixed upstream?): ") + what)
    sys.exit(0 if shown else 1)
