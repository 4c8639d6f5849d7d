"""Starting ranks for the reproductions, with torch.distributed alone (no distmetrics): gloo on a
FileStore, torch.multiprocessing spawn, a timeout on every wait. Each script's `body(rank,
world_size)` runs on every rank and returns what that rank saw (picklable); `run` returns them
in rank order, or raises TimeoutError when a rank did not finish in time (a hang)."""

import datetime
import os
import queue
import sys
import tempfile
import traceback
import warnings

import torch.distributed as dist
import torch.multiprocessing as mp


def _venv():
    """The peers venv's site-packages (peers/venv.sh), when the library is not on the path."""
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


def verdict(shown, what):
    """Prints the outcome; exit 0 when the bug shows (CI checks that it still does), 1 when not."""
    print(("BUG SHOWN: " if shown else "BUG NOT SHOWN (fixed upstream?): ") + what)
    sys.exit(0 if shown else 1)
