"""A stranger on the machine that tries to get into a rank pool (run by launch_rank_pool_test).

It watches /proc for a worker's command line, takes what it can read there (the socket path),
then connects as rank 1 claiming the pid of a decoy process, connects as a store client, and
holds a half-sent request open, as a process that wanted to stall the rendezvous would. It prints
one JSON object saying what each attempt got back.

usage: launch_impostor.py SUPERVISOR_PID DECOY_PID SECONDS
(the supervisor's pid only picks the pool under test among others that may run on the machine)
"""
import json
import os
import socket
import sys
import time


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def find_worker(me, supervisor):
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            if parent_of(entry) != supervisor:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        for arg in args:
            if arg.startswith(b"--distmetrics-worker="):
                return int(entry), arg.split(b"=", 1)[1].decode(), [a.decode(errors="replace") for a in args if a]
    return None


def attempt(path, hello, extra=b""):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect(path)
    except OSError as e:
        return "refused: " + e.strerror
    try:
        s.sendall((json.dumps(hello) + "\n").encode() + extra)
        data = s.recv(4096)
        return "closed" if not data else "answered: " + data[:200].decode(errors="replace")
    except socket.timeout:
        return "held open"
    except OSError as e:
        return "closed: " + (e.strerror or str(e))
    finally:
        s.close()


def main():
    supervisor, decoy, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    me = os.getpid()
    deadline = time.time() + seconds
    found = None
    while found is None and time.time() < deadline:
        found = find_worker(me, supervisor)
        if found is None:
            time.sleep(0.002)
    if found is None:
        print(json.dumps({"found": False}))
        return
    _, path, cmdline = found
    # A connection that says half of something and holds: it must stall nothing.
    staller = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        staller.connect(path)
        staller.sendall(b'{"type":"he')
    except OSError:
        pass
    report = {
        "found": True,
        "cmdline": cmdline,
        "control": attempt(path, {"type": "hello", "role": "control", "rank": 1, "pid": decoy}),
        "store": attempt(path, {"type": "hello", "role": "store", "rank": 1},
                         b'{"op":"set","id":1,"key":"x","value":"00"}\n'),
    }
    print(json.dumps(report), flush=True)
    time.sleep(max(0.0, deadline - time.time()))
    staller.close()


main()
