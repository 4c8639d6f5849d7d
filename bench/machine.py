#!/usr/bin/env python3
"""How fast this machine is at what a peer run does most: waking another process, and plain CPU.

Two machines of the same kind (2 cores) gave the same commit's whole peer run in 371 s in one
session and 1043 s in the next (docs/performance.md, "Two machines of one kind"): a variant's
milliseconds say little without the machine they ran on. This prints, in about a second, the numbers that explain such a
gap, so that runs on different machines are compared through them (ci/run_peers.sh prints the
line before conform and again with its summary):

  wake     a round trip between two processes through a pair of pipes (one byte each way), the
           median over rounds: each hop is a wake-up of a sleeping process, what every message
           of a collective costs a rank; "across" with the two on different cores when there
           are two, "same" with both on the first core
  cpu      a Python loop of 10^6 additions (the median of 5): plain interpreter speed

Standard library only. A benchmark, not a test: it asserts nothing.

    python3 bench/machine.py [--json]
"""

import argparse
import json
import os
import statistics
import sys
import time


def round_trips(cpus, rounds=2000):
    """Median microseconds of a pipe round trip between this process and a child, the parent
    pinned to cpus[0] and the child to cpus[-1] (where the kernel lets us pin)."""
    to_child_r, to_child_w = os.pipe()
    to_parent_r, to_parent_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the echo: every byte straight back, until its pipe closes
        try:
            os.sched_setaffinity(0, {cpus[-1]})
        except OSError:
            pass
        os.close(to_child_w)
        os.close(to_parent_r)
        while os.read(to_child_r, 1):
            os.write(to_parent_w, b"x")
        os._exit(0)
    os.close(to_child_r)
    os.close(to_parent_w)
    kept = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {cpus[0]})
    except OSError:
        pass
    try:
        samples = []
        for i in range(rounds):
            t0 = time.perf_counter()
            os.write(to_child_w, b"x")
            os.read(to_parent_r, 1)
            if i >= 100:  # the first rounds place and warm both processes
                samples.append(time.perf_counter() - t0)
        return statistics.median(samples) * 1e6
    finally:
        os.close(to_child_w)
        os.waitpid(pid, 0)
        os.close(to_parent_r)
        os.sched_setaffinity(0, kept)


def python_loop(repeat=5):
    """Median milliseconds of a loop of 10^6 additions."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        total = 0
        for i in range(1_000_000):
            total += i
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def measure():
    cpus = sorted(os.sched_getaffinity(0))
    out = {"cpus": len(cpus), "load_1min": os.getloadavg()[0]}
    if len(cpus) >= 2:
        out["wake_across_us"] = round(round_trips([cpus[0], cpus[1]]), 1)
    out["wake_same_us"] = round(round_trips([cpus[0], cpus[0]]), 1)
    out["cpu_loop_ms"] = round(python_loop(), 1)
    return out


def line(m):
    across = f"across cores {m['wake_across_us']} us, " if "wake_across_us" in m else ""
    return (f"machine: {m['cpus']} cores, load {m['load_1min']:.2f}; a wake-up round trip between two processes "
            f"{across}on one core {m['wake_same_us']} us; a Python loop of 10^6 additions {m['cpu_loop_ms']} ms "
            f"(bench/machine.py)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the numbers as one JSON object")
    args = parser.parse_args(argv)
    m = measure()
    print(json.dumps(m) if args.json else line(m))
    return 0


if __name__ == "__main__":
    sys.exit(main())
