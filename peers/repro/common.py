"""Starting ranks for the reproductions, with torch.distributed alone (no distmetrics): gloo on a
FileStore, torch.multiprocessing spawn, a timeout on every wait. Each script's `body(rank,
world_size)` runs on every rank and returns what that rank saw (picklable); `run` returns them
in rank order, or raises TimeoutError when a rank did not finish in time (a hang).

Each script says which releases it is about (`requires`, first thing in its main): the torch and
library versions its bug shows on. On another release it exits NOT_FOR_THIS_RELEASE (77), which
ci/run_peers.sh counts apart; DISTMETRICS_REPRO_ANY_RELEASE=1 runs it anyway (to show that a
fixed bug is gone). The scripts run on Debian's /usr/bin/python3 (the libraries of the peers
venv, peers/venv.sh, are added to the path) or on a venv's python with its own libraries (the
torch 2.x venv, ci/torch2-venv.sh)."""

import datetime
import os
import queue
import re
import sys
import tempfile
import traceback
import warnings

import torch.distributed as dist
import torch.multiprocessing as mp


NOT_FOR_THIS_RELEASE = 77
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
    try:
        results.put((rank, "ok", body(rank, world_size)))
    except Exception as e:  # noqa: BLE001 - what the rank raised is the observation
        results.put((rank, "raised", f"{type(e).__name__}: {e}".splitlines()[0][:300]))
        traceback.print_exc(limit=2)
    finally:
        dist.destroy_process_group()


def run(body, world_size=2, timeout_s=10, preload=()):
    """{rank: ("ok", value) or ("raised", text) or ("crashed", text)}; ranks still running after
    timeout_s (after an allowance for starting and importing `preload`) are ("hang", ...) and
    are ended; timeout_s is also torch.distributed's own timeout."""
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        procs = [ctx.Process(target=_rank_main, args=(r, world_size, os.path.join(tmp, "store"), body, results, timeout_s,
                                                          tuple(preload)))
                 for r in range(world_size)]
        for p in procs:
            p.start()
        out = {}
        deadline = datetime.datetime.now() + datetime.timedelta(seconds=timeout_s + 60)
        while len(out) < world_size and datetime.datetime.now() < deadline:
            try:
                rank, kind, value = results.get(timeout=0.5)
                out[rank] = (kind, value)
            except queue.Empty:
                if not any(p.is_alive() for p in procs):
                    break  # every rank ended; those without a result died
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
