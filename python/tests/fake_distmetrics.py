#!/usr/bin/env python3
"""A stand-in for the distmetrics CLI that implements the list/run contract (docs/cli-contract.md) for
the plugin's own tests: the ids, the list JSON, the run report, the exit codes, and ranks as real
child processes. What a variant does comes from its scenario file, in a format of its own:

    [fake]
    mode = "pass"            # pass fail error crash memory skip hang runner-crash leak rendezvous
    modes = { "gloo-ws2-*" = "fail" }   # per variant (glob on the id without the scenario)
    backends = ["gloo"]      world_sizes = [1, 2]   shards = ["even"]   placements = ["cpu"]
    markers = ["regression"] list_skip = "needs 2 GPUs"
    rank_ignores_term = true rank_escapes_session = true   # for mode "hang"
    metric = "Accuracy"  deadline = 30   # what the listing says of them
    launch = "mpirun"    # every variant's launch (default: the real backend table's, mpirun for mpi)

Every process it starts is logged (one JSON line each) to $FAKE_DISTMETRICS_LOG when set, so
tests can check by pid that nothing outlived the run.
"""

import argparse
import fnmatch
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

# What `distmetrics tables --json` prints, as far as the plugin reads it: a stand-in for the C++
# tables must spell them (the one copy allowed, test_tables.py), and test_integration.py checks
# this copy against the real runner's. The fake's own codes and summary come from it.
_OUTCOMES = [  # name, exit code, severity, counted in the last line at 0
    ("pass", 0, 0, True), ("fail", 1, 1, True), ("hang", 3, 3, True), ("crash", 4, 5, True),
    ("memory_exceeded", 6, 4, False), ("error", 1, 2, True), ("skip", 0, -1, True)]
TABLES = {
    "format": 1,
    "exit_codes": {"bad_input": 2, **{name: code for name, code, _, _ in _OUTCOMES}},
    "outcomes": [{"name": name, "exit_code": code, "severity": severity, "passed": code == 0,
                  "counted_when_zero": counted} for name, code, severity, counted in _OUTCOMES],
    "properties": [{"name": "equal_to_single"}, {"name": "idempotent"}, {"name": "no_hang"}],
    "default_properties": ["equal_to_single", "idempotent"],
    "default_script": ["update 50%", "compute", "update rest", "compute"],
    "backends": [
        {"name": "gloo", "description": "c10d ProcessGroupGloo: collectives on the CPU, or on CUDA tensors"},
        {"name": "mpi", "description": "Open MPI directly (a duplicate of MPI_COMM_WORLD): CPU collectives; "
                                       "ranks started by mpirun"},
        {"name": "nccl", "description": "c10d ProcessGroupNCCL: collectives on cuda:local_rank, one GPU per rank"}],
    "launchers": [
        {"name": "local", "peers": False, "through_mpi": False, "pool_launch": "direct", "pool_through_mpirun": False},
        {"name": "mpi", "peers": True, "through_mpi": True, "pool_launch": "mpirun", "pool_through_mpirun": True},
        {"name": "env", "peers": True, "through_mpi": False, "pool_launch": None, "pool_through_mpirun": False}],
    "property_skips": [{"name": "not_applicable"}, {"name": "not_judged"}],
    "shard_policies": [{"name": "even"}, {"name": "uneven"}],
    "placements": [{"name": "cpu"}],
    "generators": [{"name": "binary", "structured": False}, {"name": "text", "structured": True}],
    "expected_errors": ["NotComputableError", "ValueError"],
    "reference_metrics": [{"name": "Accuracy", "params": []}],
    "metric_sources": {"python": "python:"},
    "conform_nothing_to_check": ["has no metric", "no scenario under"],
}
EXIT_OK, EXIT_BAD_INPUT = TABLES["exit_codes"]["pass"], TABLES["exit_codes"]["bad_input"]
OUTCOME_EXIT = {o["name"]: o["exit_code"] for o in TABLES["outcomes"] if o["exit_code"]}
SEVERITY = {o["name"]: o["severity"] for o in TABLES["outcomes"]}


class BadInput(Exception):
    pass


def log_process(role, **fields):
    path = os.environ.get("FAKE_DISTMETRICS_LOG")
    if path:
        fields.update(role=role, pid=os.getpid(), tmpdir=os.environ.get("TMPDIR"),
                      worker=os.environ.get("PYTEST_XDIST_WORKER"))
        with open(path, "a") as log:
            log.write(json.dumps(fields) + "\n")


# --- scenarios and variants ---------------------------------------------------------------------
def scenario_files(paths):
    """(file, scenario root) for every *.toml under PATHS. As the real CLI does, a scenario is
    named relative to its nearest enclosing folder called "scenarios", else to the folder given
    (or the file's own folder)."""
    found = []
    for given in paths or ["scenarios"]:
        path = Path(given)
        if path.is_dir():
            files, fallback = sorted(path.rglob("*.toml")), path
        elif path.is_file():
            files, fallback = [path], path.parent
        else:
            raise BadInput(f"{given}: no such scenario file or folder")
        for file in files:
            root = next((p for p in file.resolve().parents if p.name == "scenarios"),
                        fallback.resolve())
            found.append((file, root))
    return found


def load(file, root):
    try:
        spec = tomllib.loads(file.read_text())["fake"]
    except (tomllib.TOMLDecodeError, KeyError) as error:
        raise BadInput(f"{file}: not a fake scenario ({error})")
    name = str(file.resolve().relative_to(root.resolve()).with_suffix(""))
    variants = []
    for backend in spec.get("backends", ["gloo"]):
        for ws in spec.get("world_sizes", [1, 2]):
            for shard in spec.get("shards", ["even"]):
                for placement in spec.get("placements", ["cpu"]):
                    short = f"{backend}-ws{ws}-{shard}-{placement}"
                    mode = spec.get("mode", "pass")
                    for pattern, special in spec.get("modes", {}).items():
                        if fnmatch.fnmatchcase(short, pattern):
                            mode = special
                    markers = [backend] + list(spec.get("markers", []))
                    if placement.startswith("cuda") or backend == "nccl":
                        markers.append("gpu")
                    launch = spec.get("launch", "mpirun" if backend == "mpi" else "direct")
                    variants.append({
                        "id": f"{name}:{short}", "scenario": name, "file": str(file),
                        "metric": spec.get("metric", "Accuracy"), "backend": backend,
                        "launch": launch, "world_size": ws, "shard": shard,
                        "placement": placement, "deadline": spec.get("deadline", 30.0),
                        "markers": markers, "skip": spec.get("list_skip"),
                        "_mode": mode, "_spec": spec})
    return variants


def select(args):
    variants = []
    for file, root in scenario_files(args.paths):
        variants += load(file, root)
    if args.backend:
        variants = [v for v in variants if v["backend"] in args.backend.split(",")]
    if args.world_sizes:
        sizes = [int(s) for s in args.world_sizes.split(",")]
        variants = [v for v in variants if v["world_size"] in sizes]
    if args.filter:
        variants = [v for v in variants
                    if any(fnmatch.fnmatchcase(v["id"], g) for g in args.filter)]
    return variants


def public(variant):
    return {k: v for k, v in variant.items() if not k.startswith("_")}


# --- ranks ----------------------------------------------------------------------------------------
def start_rank(variant, rank, *args):
    return subprocess.Popen([sys.executable, __file__, "_rank", variant["id"], str(rank), *args])


def rank_main(argv):
    variant_id, rank, action = argv[0], int(argv[1]), argv[2]
    if "--setsid" in argv:
        os.setsid()
    if "--ignore-term" in argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    log_process("rank", id=variant_id, rank=rank)
    if action == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if action == "leak":  # leave a grandchild behind, reparented away from the runner
        if os.fork() == 0:
            log_process("leaked", id=variant_id, rank=rank)
            time.sleep(300)
        os._exit(0)
    time.sleep(float(argv[3]) if len(argv) > 3 else 0.0)


def run_ranks(variant, *args):
    ranks = [start_rank(variant, r, *args) for r in range(variant["world_size"])]
    return [p.wait() for p in ranks]


def run_variant(variant):
    mode, spec, ws = variant["_mode"], variant["_spec"], variant["world_size"]
    result = dict(public(variant), seed=7, outcome="pass", reason=None, properties=[],
                  diagnosis=None, reproduce=f"distmetrics run {variant['file']} --filter "
                                            f"'{variant['id']}'")
    single = {"dtype": "float64", "shape": [3], "values": [0.5, 0.25, 0.75]}
    if mode == "hang":
        args = ["sleep", "3600"]
        hold = [start_rank(variant, 0, *args, *(["--ignore-term"] if spec.get("rank_ignores_term")
                                                else []))]
        hold += [start_rank(variant, r, *args, *(["--setsid"] if spec.get("rank_escapes_session")
                                                 else [])) for r in range(1, ws)]
        for p in hold:  # a runner whose own deadline failed: waits on its ranks forever
            p.wait()
    elif mode == "runner-crash":
        run_ranks(variant, "sleep", "0")
        os.kill(os.getpid(), signal.SIGABRT)
    elif mode == "rendezvous":  # passes only when every rendezvous variant runs at the same time
        folder = Path(spec["rendezvous_dir"])
        (folder / variant["id"].replace("/", "_")).write_text(str(os.getpid()))
        deadline = time.monotonic() + spec.get("rendezvous_seconds", 20)
        while len(list(folder.iterdir())) < spec["rendezvous_count"]:
            if time.monotonic() > deadline:
                result.update(outcome="fail", reason="the other variants never arrived")
                return result
            time.sleep(0.05)
    elif mode == "leak":
        run_ranks(variant, "leak")
    elif mode == "crash":
        statuses = run_ranks(variant, "crash")
        result.update(outcome="crash", reason=f"rank 0 died: killed by signal {-statuses[0]}",
                      diagnosis=f"rank 0 was killed by signal {-statuses[0]} (SIGSEGV) in "
                                f"all_reduce #2; the other ranks were ended")
    elif mode == "memory":
        run_ranks(variant, "sleep", "0")
        result.update(outcome="memory_exceeded",
                      reason="rank 1 to blame: rank 1 went past its memory limit of 6.0 GiB",
                      diagnosis="rank 1 went past its memory limit of 6.0 GiB (an allocation "
                                "failed; raise it with --rank-memory if the metric needs more)")
    else:
        run_ranks(variant, "sleep", "0")
    if mode == "fail":
        ranks = [dict(single, values=[0.5, 0.25 + 0.125 * r, 0.75]) for r in range(ws)]
        result.update(outcome="fail", reason="equal_to_single failed",
                      properties=[{"name": "equal_to_single", "outcome": "fail",
                                   "message": "rank 1 differs from the single-process value\n"
                                              "at index 1",
                                   "single": single, "ranks": ranks, "difference": 0.125},
                                  {"name": "idempotent", "outcome": "pass", "message": "",
                                   "single": None, "ranks": [], "difference": None}])
    elif mode == "error":
        result.update(outcome="error", reason="NotComputableError on rank 0",
                      diagnosis="rank 0 raised NotComputableError: no samples")
    elif mode == "skip":
        result.update(outcome="skip", reason="needs 2 GPUs, found 0")
    elif mode in ("pass", "leak", "rendezvous"):
        result["properties"] = [{"name": "equal_to_single", "outcome": "pass", "message": "",
                                 "single": single, "ranks": [single] * ws, "difference": 0.0}]
    return result


# --- commands -------------------------------------------------------------------------------------
def serve(args):
    """`serve`: a request line per variant on stdin (an id, or {"path": ..., "id": ...}), one JSON
    answer line each on stdout."""
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        request = json.loads(line) if line.startswith("{") else {"id": line}
        log_process("request", path=request.get("path"), id=request["id"])
        paths = [request["path"]] if request.get("path") else args.paths
        try:
            found = [v for f, root in scenario_files(paths) for v in load(f, root)
                     if v["id"] == request["id"]]
        except BadInput as error:
            found, reason = [], str(error)
        else:
            reason = f"no variant {request['id']!r}"
        if not found:
            result = {"id": request["id"], "outcome": "error", "reason": reason, "properties": []}
        else:
            began = time.monotonic()
            result = run_variant(found[0])
            result["seconds"] = round(time.monotonic() - began, 3)
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
    return EXIT_OK



def parser():
    p = argparse.ArgumentParser(prog="distmetrics")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("tables").add_argument("--json", action="store_true")
    for name in ("list", "run", "validate", "serve"):
        c = sub.add_parser(name)
        c.add_argument("paths", nargs="*")
        c.add_argument("--backend")
        c.add_argument("--world-sizes")
        c.add_argument("--shard")
        c.add_argument("--placement")
        c.add_argument("--filter", action="append")
        c.add_argument("--json", nargs="?", const=True)
        c.add_argument("--junit")
        c.add_argument("--deadline", type=float)
        c.add_argument("--launcher", choices=["local", "mpi", "env"], default="local")
        c.add_argument("--quiet", action="store_true")
    return p


def main(argv):
    if argv and argv[0] == "_rank":
        return rank_main(argv[1:])
    try:
        args = parser().parse_args(argv)
    except SystemExit:
        return EXIT_BAD_INPUT
    if args.command == "tables":  # a query that starts nothing: not logged with the processes
        print(json.dumps(TABLES, indent=2) if args.json else "\n".join(TABLES))
        return EXIT_OK
    log_process("runner", argv=argv)
    if args.command == "serve":
        return serve(args)
    try:
        variants = select(args)
    except BadInput as error:
        print(f"distmetrics: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.command == "list":
        if args.json:
            print(json.dumps([public(v) for v in variants]))
        else:
            print("\n".join(v["id"] for v in variants))
        return EXIT_OK
    start, results = time.monotonic(), []
    for n, variant in enumerate(variants, 1):
        began = time.monotonic()
        result = run_variant(variant) if not variant["skip"] else dict(
            public(variant), outcome="skip", reason=variant["skip"], properties=[])
        result["seconds"] = round(time.monotonic() - began, 3)
        results.append(result)
        print(f"[{n:3d}/{len(variants)}] {result['outcome'].upper():5s} {variant['id']}  "
              f"({result['seconds']:.2f} s)", flush=True)
    summary = {o["name"]: sum(r["outcome"] == o["name"] for r in results) for o in TABLES["outcomes"]}
    summary["total"] = len(results)
    if isinstance(args.json, str):
        Path(args.json).write_text(json.dumps({
            "distmetrics_version": "fake", "torch_version": "none", "started": "now",
            "seconds": time.monotonic() - start, "summary": summary, "variants": results}))
    print(f"distmetrics: {summary['pass']} passed, {summary['fail']} failed, {summary['hang']} "
          f"hang, {summary['crash']} crash, {summary['error']} error, {summary['skip']} skipped "
          f"in {time.monotonic() - start:.1f} s")
    # The most severe outcome's code (harness/report.h: exit_code()).
    worst = max((r["outcome"] for r in results if r["outcome"] in OUTCOME_EXIT), key=SEVERITY.get, default=None)
    return OUTCOME_EXIT[worst] if worst else EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
