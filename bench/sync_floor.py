#!/usr/bin/env python3
"""The floor of a Python metric's `sync` on this machine, measured without distmetrics: N plain
processes (torch.distributed and the libraries only) in one gloo group on a TCPStore, each
making the same updates and the same synced compute() a passing peer variant makes, and the raw
collectives those computes are made of. Per world size, per class: the median over rounds of one
compute() (which syncs), of the time inside its torch.distributed collectives (what distmetrics'
`sync` phase counts), and how many collectives it issues; per raw op, its median.

A round is what a variant's rank does between two computes: reset(), the rank's batches
(uneven: rank r has 15 + 5r samples in batches of 5, 60 samples at 3 ranks), then compute(). Nothing aligns the ranks before it but the previous
round's collectives, as in a variant. `--fresh-group` adds, per world size, the first collectives
on a freshly made gloo group (a variant's group is new each variant), against the same
collectives on a group already used.

    PY=/root/.cache/distmetrics/torch2-2.15.0/bin/python
    $PY bench/sync_floor.py --world-sizes 2,3,4 --rounds 60          # both cores
    $PY bench/sync_floor.py --world-sizes 3 --cpus 0                 # every rank on core 0 (taskset -c 0)
    $PY bench/sync_floor.py --json floor.json                        # the medians, for a comparison
    $PY bench/sync_floor.py --world-sizes 2,3 --cpu-sets all,0 --repeat 3   # both cores against one, interleaved

`--distmetrics BIN` compares: per round, the floor, then the same classes in `distmetrics
conform` (the peer sources, the peer scenarios, shards where every rank has data), each compute()
timed inside the rank workers by bench/sync_floor_probe.py; the rounds interleave so that the
load of a shared machine falls on both sides alike. Printed: each side's median per compute and
the ratio distmetrics / floor; distmetrics' first compute of a variant apart from its later ones;
and a raw all_reduce in a loop, in the floor's processes and in the ranks (after each syncing
compute: `--raw-in-variant` of them traced by distmetrics, each followed by one of torch's own,
not traced).

    $PY bench/sync_floor.py --world-sizes 3,2 --distmetrics build/bin/distmetrics --repeat 3

A benchmark: it prints and asserts nothing about time.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

# The classes a passing peer variant syncs, one or two per library and sync style:
# torchmetrics' tensor states (barrier + all_gather per state), its list states (a shape
# exchange, then padded all_gathers), torcheval's sync_and_compute (state dicts as objects),
# Ignite's sync_all_reduce (one all_reduce per attribute).
CASES = ("torchmetrics.MeanSquaredError", "torchmetrics.MulticlassAccuracy", "torchmetrics.BinaryAUROC",
         "torcheval.MulticlassAccuracy", "ignite.Accuracy")
RAW = ("all_reduce float32[1]", "all_reduce float32[64]", "all_gather float32[1]", "barrier",
       "all_gather_object")
CLASSES = 5
BATCH = 5


# --- The worker: one rank -------------------------------------------------------------------------

class Collectives:
    """Times every torch.distributed collective the libraries call (the outermost one only:
    all_gather_object's own all_gathers are inside it), as distmetrics' trace does."""

    NAMES = ("all_reduce", "reduce", "broadcast", "all_gather", "gather", "scatter", "reduce_scatter",
             "all_to_all", "all_gather_into_tensor", "barrier", "all_gather_object", "gather_object",
             "broadcast_object_list")

    def __init__(self, dist):
        self.count = 0
        self.seconds = 0.0
        self.first = 0.0  # the first collective's seconds: where the ranks' arrival skew is waited out
        self._depth = 0
        c10d = dist.distributed_c10d
        for name in self.NAMES:
            original = getattr(c10d, name, None) or getattr(dist, name, None)
            if original is None:
                continue
            wrapped = self._wrap(original)
            for module in (dist, c10d):
                if getattr(module, name, None) is original:
                    setattr(module, name, wrapped)

    def _wrap(self, fn):
        def timed(*args, **kwargs):
            if self._depth:
                return fn(*args, **kwargs)
            self._depth = 1
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                seconds = time.perf_counter() - start
                self.seconds += seconds
                if self.count == 0:
                    self.first = seconds
                self.count += 1
                self._depth = 0
        return timed

    def take(self):
        out = (self.count, self.seconds, self.first)
        self.count, self.seconds, self.first = 0, 0.0, 0.0
        return out


def batches(rank, seed, make):
    """This rank's batches: 15 + 5*rank samples, BATCH a batch."""
    import torch

    generator = torch.Generator().manual_seed(seed * 100 + rank)
    n = 15 + 5 * rank
    return [make(generator, min(BATCH, n - start)) for start in range(0, n, BATCH)]


def make_case(name, rank):
    """(metric, its batches, update(metric, batch), compute(metric)) of one case."""
    import torch

    def regression(g, n):
        return torch.randn(n, generator=g), torch.randn(n, generator=g)

    def multiclass(g, n):
        return torch.randn(n, CLASSES, generator=g), torch.randint(0, CLASSES, (n,), generator=g)

    def binary(g, n):
        return torch.rand(n, generator=g), torch.randint(0, 2, (n,), generator=g)

    plain_update = lambda m, b: m.update(*b)  # noqa: E731
    plain_compute = lambda m: m.compute()  # noqa: E731
    if name == "torchmetrics.MeanSquaredError":
        from torchmetrics import MeanSquaredError
        return MeanSquaredError(), batches(rank, 1, regression), plain_update, plain_compute
    if name == "torchmetrics.MulticlassAccuracy":
        from torchmetrics.classification import MulticlassAccuracy
        return MulticlassAccuracy(num_classes=CLASSES, average="micro"), batches(rank, 2, multiclass), plain_update, \
            plain_compute
    if name == "torchmetrics.BinaryAUROC":
        from torchmetrics.classification import BinaryAUROC
        return BinaryAUROC(), batches(rank, 3, binary), plain_update, plain_compute
    if name == "torcheval.MulticlassAccuracy":
        from torcheval.metrics import MulticlassAccuracy
        from torcheval.metrics.toolkit import sync_and_compute
        return MulticlassAccuracy(num_classes=CLASSES), batches(rank, 4, multiclass), plain_update, sync_and_compute
    if name == "ignite.Accuracy":
        import ignite.distributed as idist
        from ignite.metrics import Accuracy
        idist.sync()  # Ignite's own view of the group, made on every rank (as the adapter's setup does)
        return Accuracy(), batches(rank, 5, multiclass), (lambda m, b: m.update(b)), plain_compute
    raise SystemExit(f"unknown case {name}")


def raw_op(name, dist, rank, world_size):
    import torch

    if name.startswith("all_reduce"):
        size = int(name.split("[")[1].rstrip("]"))
        t = torch.full((size,), float(rank))
        return lambda: dist.all_reduce(t)
    if name.startswith("all_gather float"):
        t = torch.tensor([float(rank)])
        out = [torch.zeros(1) for _ in range(world_size)]
        return lambda: dist.all_gather(out, t)
    if name == "barrier":
        return lambda: dist.barrier()
    if name == "all_gather_object":
        out = [None] * world_size
        return lambda: dist.all_gather_object(out, {"rank": rank, "n": 20})
    raise SystemExit(f"unknown op {name}")


def worker(args):
    if args.cpus:
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    import datetime

    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    import ignite.distributed  # noqa: F401 - the libraries imported before the clock starts, as in a rank
    import torcheval.metrics  # noqa: F401
    import torchmetrics  # noqa: F401

    store = dist.TCPStore("127.0.0.1", args.port, args.world_size, args.rank == 0,
                          timeout=datetime.timedelta(seconds=60))
    dist.init_process_group("gloo", store=store, rank=args.rank, world_size=args.world_size,
                            timeout=datetime.timedelta(seconds=60))
    timer = Collectives(dist)
    out = {"cases": {}, "raw": {}, "fresh": {}}
    for name in args.cases:
        metric, data, update, compute = make_case(name, args.rank)
        rows = []
        for round_ in range(args.warmup + args.rounds):
            metric.reset()
            for batch in data:
                update(metric, batch)
            timer.take()
            start = time.perf_counter()
            compute(metric)
            seconds = time.perf_counter() - start
            count, in_collectives, first = timer.take()
            if round_ >= args.warmup:
                rows.append((seconds, in_collectives, count, first))
        out["cases"][name] = rows
    for name in RAW:
        op = raw_op(name, dist, args.rank, args.world_size)
        rows = []
        for round_ in range(args.warmup + args.rounds):
            start = time.perf_counter()
            op()
            if round_ >= args.warmup:
                rows.append(time.perf_counter() - start)
        out["raw"][name] = rows
    if args.fresh_group:
        # The first collectives on a group made just before (a variant's), then the same ones again.
        t = torch.ones(1)
        first, again = [], []
        for _ in range(args.fresh_rounds):
            group = dist.new_group(backend="gloo")
            times = []
            for _ in range(2):
                start = time.perf_counter()
                dist.barrier(group=group)
                dist.all_reduce(t, group=group)
                times.append(time.perf_counter() - start)
            first.append(times[0])
            again.append(times[1])
            dist.destroy_process_group(group)
        out["fresh"] = {"first barrier+all_reduce": first, "again": again}
    dist.barrier()
    with open(args.out, "w") as f:
        json.dump(out, f)
    dist.destroy_process_group()


# --- The launcher ---------------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_world(world_size, args):
    """Starts world_size ranks, waits for them, returns each rank's measurements."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               TOKENIZERS_PARALLELISM="false")
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        procs = []
        for rank in range(world_size):
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--rank", str(rank), "--world-size",
                   str(world_size), "--port", str(port), "--out", os.path.join(tmp, f"{rank}.json"),
                   "--rounds", str(args.rounds), "--warmup", str(args.warmup), "--cases", ",".join(args.cases),
                   "--fresh-rounds", str(args.fresh_rounds)]
            if args.cpus:
                cmd += ["--cpus", args.cpus]
            if args.fresh_group:
                cmd.append("--fresh-group")
            procs.append(subprocess.Popen(cmd, env=env))
        deadline = time.monotonic() + args.timeout
        for p in procs:
            try:
                p.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                raise SystemExit(f"ws{world_size}: the ranks did not finish within {args.timeout} s")
        if any(p.returncode for p in procs):
            raise SystemExit(f"ws{world_size}: a rank failed (exit codes {[p.returncode for p in procs]})")
        ranks = []
        for rank in range(world_size):
            with open(os.path.join(tmp, f"{rank}.json")) as f:
                ranks.append(json.load(f))
        return ranks


def per_round_mean(ranks, pick):
    """Per round, the mean over ranks (distmetrics' rank phases are means of the ranks)."""
    return [statistics.fmean(values) for values in zip(*(pick(r) for r in ranks))]


def summarize(ranks):
    out = {"cases": {}, "raw": {}, "fresh": {}}
    for name in ranks[0]["cases"]:
        rows = [r["cases"][name] for r in ranks]
        out["cases"][name] = {
            "compute_ms": 1000 * statistics.median(per_round_mean(rows, lambda rr: [x[0] for x in rr])),
            "sync_ms": 1000 * statistics.median(per_round_mean(rows, lambda rr: [x[1] for x in rr])),
            "collectives": statistics.median(x[2] for x in rows[0]),
            "first_op_ms": 1000 * statistics.median(per_round_mean(rows, lambda rr: [x[3] for x in rr])),
        }
    for name in ranks[0]["raw"]:
        out["raw"][name] = 1000 * statistics.median(per_round_mean([r["raw"][name] for r in ranks], lambda rr: rr))
    for name in ranks[0].get("fresh", {}):
        out["fresh"][name] = 1000 * statistics.median(
            per_round_mean([r["fresh"][name] for r in ranks], lambda rr: rr))
    return out


# --- distmetrics: the same classes in a conform run ----------------------------------------------

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Per case: (peer source, --metric names, scenario files relative to the repository or to the
# generated peer scenarios ("gen:"), the class the probe's lines name).
DISTMETRICS_CASES = {
    "torchmetrics.MeanSquaredError": ("torchmetrics", ["MeanSquaredError"],
                                      ["scenarios/core/mean_squared_error.toml",
                                       "scenarios/core/mean_squared_error_dtypes.toml"],
                                      "torchmetrics.regression.mse:MeanSquaredError"),
    "torchmetrics.MulticlassAccuracy": ("torchmetrics", ["Accuracy"],
                                        ["scenarios/core/accuracy_multiclass.toml",
                                         "scenarios/core/accuracy_dtypes.toml"],
                                        "torchmetrics.classification.accuracy:MulticlassAccuracy"),
    "torchmetrics.BinaryAUROC": ("torchmetrics", ["torchmetrics.BinaryAUROC"],
                                 ["gen:torchmetrics/BinaryAUROC.toml", "gen:torchmetrics/BinaryAUROC.ws2.toml",
                                  "gen:torchmetrics/BinaryAUROC.ws4.toml"],
                                 "torchmetrics.classification.auroc:BinaryAUROC"),
    "torcheval.MulticlassAccuracy": ("torcheval", ["Accuracy"],
                                     ["scenarios/core/accuracy_multiclass.toml", "scenarios/core/accuracy_dtypes.toml"],
                                     "torcheval.metrics.classification.accuracy:MulticlassAccuracy"),
    "ignite.Accuracy": ("ignite", ["Accuracy"],
                        ["scenarios/core/accuracy_multiclass.toml", "scenarios/core/accuracy_dtypes.toml"],
                        "ignite.metrics.accuracy:Accuracy"),
}
# The shards where every rank has data (the floor's ranks all have); empty_rank and padded differ.
SHARDS = "even,uneven,skewed,round_robin,scattered"


def generate_peer_scenarios(binary, out):
    """The own rows' scenario files (BinaryAUROC's), as ci/run_peers.sh writes them."""
    env = dict(os.environ, DISTMETRICS_BIN=os.path.abspath(binary))
    done = subprocess.run([sys.executable, os.path.join(ROOT, "peers", "scenarios.py"), "--out", out, "--library",
                           "torchmetrics"], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"peers/scenarios.py failed:\n{done.stdout}{done.stderr}")
    return os.path.join(out, "scenarios")


def run_distmetrics(world_size, args, generated):
    """One conform run per library at this world size; the probe's lines of the syncing computes
    (not the merging instances', which compute alone), per case."""
    lines = {name: [] for name in args.cases}
    lines["raw"], lines["untraced"] = [], []
    libraries = {}
    for name in args.cases:
        library, metrics, files, _ = DISTMETRICS_CASES[name]
        entry = libraries.setdefault(library, ([], []))
        entry[0].extend(m for m in metrics if m not in entry[0])
        for f in files:
            path = os.path.join(generated, f[4:]) if f.startswith("gen:") else os.path.join(ROOT, f)
            if path not in entry[1]:
                entry[1].append(path)
    for library, (metrics, files) in libraries.items():
        with tempfile.TemporaryDirectory() as log:
            env = dict(os.environ, SYNC_FLOOR_SOURCE=os.path.join(ROOT, "peers", library, "metrics.py"),
                       SYNC_FLOOR_LOG=log, SYNC_FLOOR_RAW=str(args.raw_in_variant))
            cmd = [args.distmetrics, "conform", "--python", os.path.join(ROOT, "bench", "sync_floor_probe.py"),
                   *[a for m in metrics for a in ("--metric", m)], *files, "--world-sizes", str(world_size),
                   "--shard", SHARDS, "--backend", "gloo", "--deadline", "60", "--quiet", "--allow-python"]
            if args.cpus:
                cmd = ["taskset", "-c", args.cpus, *cmd]  # the supervisor, its zygote and every rank
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
            if done.returncode not in (0, 1, 3, 4):  # a fail, hang or crash: a class's known bug, still measured
                raise SystemExit(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
            for file in os.listdir(log):
                with open(os.path.join(log, file)) as f:
                    for line in f:
                        row = json.loads(line)
                        if "raw" in row:
                            if row["world_size"] == world_size:
                                lines["raw"].extend(row["raw"])
                                lines["untraced"].extend(row["untraced"])
                            continue
                        if row["alone"] or not row["collectives"] or row["world_size"] != world_size:
                            continue
                        for name in args.cases:
                            if DISTMETRICS_CASES[name][0] == library and DISTMETRICS_CASES[name][3] == row["class"]:
                                lines[name].append(row)
    return lines


def summarize_distmetrics(lines):
    """Medians per compute, over ranks and variants; the first syncing compute of a variant's rank
    apart from the later ones."""
    out = {k: statistics.median(lines[k]) if lines[k] else None for k in ("raw", "untraced")}
    for name, rows in lines.items():
        if name in ("raw", "untraced"):
            continue
        if not rows:
            out[name] = None
            continue
        first, later = [], []
        seen = set()
        for row in sorted(rows, key=lambda r: (r.get("pid", 0), r["variant"], r["rank"])):
            key = (row.get("pid"), row["variant"], row["rank"])
            (later if key in seen else first).append(row)
            seen.add(key)
        med = lambda rs, k: 1000 * statistics.median(r[k] for r in rs) if rs else float("nan")  # noqa: E731
        for row in rows:
            row["first_op"] = row["ops"][0][1] / 1000 if row["ops"] else 0.0
        out[name] = {"compute_ms": med(rows, "seconds"), "sync_ms": med(rows, "in_collectives"),
                     "first_op_ms": med(rows, "first_op"),
                     "collectives": statistics.median(r["collectives"] for r in rows), "computes": len(rows),
                     "first_sync_ms": med(first, "in_collectives"), "later_sync_ms": med(later, "in_collectives")}
    return out


def compare(args):
    with tempfile.TemporaryDirectory() as tmp:
        generated = generate_peer_scenarios(args.distmetrics, tmp) if "torchmetrics.BinaryAUROC" in args.cases else tmp
        where = f"cores {args.cpus}" if args.cpus else f"cores {sorted(os.sched_getaffinity(0))}"
        print(f"sync: floor (no distmetrics) against distmetrics conform, interleaved {args.repeat} round(s); "
              f"{where}; ms per compute and rank, medians")
        results = {}
        for ws in [int(w) for w in args.world_sizes.split(",")]:
            floor_runs, dm_runs = [], []
            for _ in range(args.repeat):
                floor_runs.append(summarize(run_world(ws, args)))
                dm_runs.append(summarize_distmetrics(run_distmetrics(ws, args, generated)))
            print(f"\nws{ws}")
            print(f"  {'class':32} {'floor sync':>10} {'distmetrics':>11} {'ratio':>6} {'first':>7} {'later':>7} "
                  f"{'1st op floor/dm':>16} {'floor compute()':>15} {'distmetrics':>11} {'collectives':>11} {'n':>5}")
            results[f"ws{ws}"] = {}
            for name in args.cases:
                floor = [r["cases"][name] for r in floor_runs]
                dm = [r[name] for r in dm_runs if r.get(name)]
                if not dm:
                    print(f"  {name:32} (no syncing compute in distmetrics at ws{ws})")
                    continue
                f_sync = statistics.median(r["sync_ms"] for r in floor)
                f_comp = statistics.median(r["compute_ms"] for r in floor)
                d = {k: statistics.median(r[k] for r in dm) for k in dm[0]}
                d["computes"] = sum(r["computes"] for r in dm)
                ratios = [b["sync_ms"] / a["sync_ms"] for a, b in zip(floor, dm)]
                print(f"  {name:32} {f_sync:10.2f} {d['sync_ms']:11.2f} {d['sync_ms'] / f_sync:5.2f}x "
                      f"{d['first_sync_ms']:7.2f} {d['later_sync_ms']:7.2f} "
                      f"{statistics.median(r['first_op_ms'] for r in floor):7.2f}/{d['first_op_ms']:<8.2f} {f_comp:15.2f} {d['compute_ms']:11.2f} "
                      f"{statistics.median(r['collectives'] for r in floor):>5.0f}/{d['collectives']:<5.0f} {d['computes']:5d}   (rounds: {', '.join(f'{x:.2f}x' for x in ratios)})")
                results[f"ws{ws}"][name] = {"floor": floor, "distmetrics": dm}
            raw_dm = [r["raw"] for r in dm_runs if r.get("raw") is not None]
            if raw_dm:
                raw_floor = [r["raw"]["all_reduce float32[1]"] for r in floor_runs]
                f_raw, d_raw = statistics.median(raw_floor), statistics.median(raw_dm)
                ratios = [b / a for a, b in zip(raw_floor, raw_dm)]
                print(f"  {'raw all_reduce float32[1], a loop':32} {f_raw:10.3f} {d_raw:11.3f} {d_raw / f_raw:5.2f}x"
                      f"   (rounds: {', '.join(f'{x:.2f}x' for x in ratios)})")
                bare = statistics.median(r["untraced"] for r in dm_runs if r.get("untraced") is not None)
                print(f"  {'  the same, not traced':32} {f_raw:10.3f} {bare:11.3f} {bare / f_raw:5.2f}x"
                      f"   (in the rank, torch's own all_reduce under distmetrics' tracing wrapper)")
                results[f"ws{ws}"]["raw all_reduce float32[1]"] = {"floor": raw_floor, "distmetrics": raw_dm, "untraced": bare}
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"cpus": args.cpus or "all", "results": results}, f, indent=1)


def cpu_sets(args):
    """The floor at each world size on each set of cores, the sets interleaved round by round; per
    class and raw op the median of the rounds' medians, and its ratio to the first set's."""
    sets = args.cpu_sets.split(",")
    ws_list = [int(w) for w in args.world_sizes.split(",")]
    runs = {(ws, cpus): [] for ws in ws_list for cpus in sets}
    for _ in range(args.repeat):
        for ws in ws_list:
            for cpus in sets:
                args.cpus = "" if cpus == "all" else cpus.replace("+", ",")
                runs[(ws, cpus)].append(summarize(run_world(ws, args)))
    print(f"sync floor (no distmetrics) per set of cores ('all': {sorted(os.sched_getaffinity(0))}), "
          f"{args.repeat} interleaved round(s); ms per rank, medians; ratio to the '{sets[0]}' column at the same world size")
    rows = [("cases", name, "sync_ms") for name in args.cases] + [("raw", name, None) for name in RAW]
    head = "".join(f" {f'ws{ws} {c}':>17}" for ws in ws_list for c in sets)
    print(f"  {'in collectives of compute(), or raw op':40}{head}")
    table = {}
    for kind, name, key in rows:
        cells = []
        for ws in ws_list:
            base = None
            for cpus in sets:
                values = [r[kind][name][key] if key else r[kind][name] for r in runs[(ws, cpus)]]
                value = statistics.median(values)
                table[f"ws{ws} {cpus} {name}"] = value
                base = value if base is None else base
                cells.append(f" {value:9.2f}" + (f" {value / base:5.2f}x" if cpus != sets[0] else " " * 7))
        print(f"  {name:40}" + "".join(cells))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world-sizes", default="2,3,4")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated, of: " + ", ".join(CASES))
    parser.add_argument("--cpus", default="", help="the cores every rank may run on (e.g. 0: taskset -c 0)")
    parser.add_argument("--fresh-group", action="store_true", help="also the first collectives on a new group")
    parser.add_argument("--fresh-rounds", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=300, help="seconds a world may take")
    parser.add_argument("--json", help="write the medians to this file")
    parser.add_argument("--distmetrics", metavar="BIN", help="compare with this distmetrics binary's conform run")
    parser.add_argument("--repeat", type=int, default=3, help="with --distmetrics or --cpu-sets: interleaved rounds")
    parser.add_argument("--raw-in-variant", type=int, default=20,
                        help="with --distmetrics: all_reduces timed after each syncing compute in a variant (0: none)")
    parser.add_argument("--cpu-sets", help="sets of cores to compare, interleaved: e.g. all,0 (cores joined by +: 0+1)")
    # The worker's own arguments.
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--world-size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.cases = [c for c in args.cases.split(",") if c]
    if args.worker:
        worker(args)
        return
    if args.cpu_sets:
        cpu_sets(args)
        return
    if args.distmetrics:
        unknown = [c for c in args.cases if c not in DISTMETRICS_CASES]
        if unknown:
            raise SystemExit(f"--distmetrics: no conform run for {unknown}")
        compare(args)
        return
    results = {}
    where = f"cores {args.cpus}" if args.cpus else f"cores {sorted(os.sched_getaffinity(0))}"
    print(f"sync floor: torch.distributed gloo, no distmetrics; {where}; median of {args.rounds} rounds; ms per rank")
    for ws in [int(w) for w in args.world_sizes.split(",")]:
        start = time.monotonic()
        summary = summarize(run_world(ws, args))
        results[f"ws{ws}"] = summary
        print(f"\nws{ws} ({time.monotonic() - start:.1f} s)")
        print(f"  {'class':34} {'compute()':>10} {'in collectives':>15} {'collectives':>12} {'per collective':>15} "
              f"{'first one':>10}")
        for name, row in summary["cases"].items():
            per = row["sync_ms"] / row["collectives"] if row["collectives"] else 0.0
            print(f"  {name:34} {row['compute_ms']:10.3f} {row['sync_ms']:15.3f} {row['collectives']:12.0f} "
                  f"{per:15.3f} {row['first_op_ms']:10.3f}")
        for name, ms in summary["raw"].items():
            print(f"  {'raw ' + name:34} {ms:10.3f}")
        for name, ms in summary["fresh"].items():
            print(f"  {'fresh group: ' + name:34} {ms:10.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpus": args.cpus or "all", "rounds": args.rounds, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
