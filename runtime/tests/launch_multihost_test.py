"""Ranks on several hosts: network namespaces of ci/hosts.sh (h1, h2, h3 on 10.77.0.0/24), the
env launcher (MASTER_ADDR on h1's veth address, gloo), mpirun with a host file (gloo and mpi),
the rendezvous store's address and secret, and faults across the hosts (env launcher; a host's
ranks killed under mpirun too).

  launch_multihost_test.py HOSTS_SH PROBE DISTMETRICS SCENARIOS [MPIRUN]

Exits 77 (ctest: skipped) with the reason when this machine cannot make network namespaces.
Prints the fault table (kind, blamed rank and host, verdict latency); every run is bounded, every
host's processes are checked to be gone after each case, and the bed is removed at the end.
Traffic goes only to the namespaces' own addresses.
"""
import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

HOSTS_SH, PROBE, DISTMETRICS, SCENARIOS = sys.argv[1:5]
MPIRUN = sys.argv[5] if len(sys.argv) > 5 else ""
PREFIX = "dmt%d" % (os.getpid() % 100000)
ENV = dict(os.environ, DM_HOSTS="3", DM_HOSTS_PREFIX=PREFIX)
ADDR = {"h1": "10.77.0.1", "h2": "10.77.0.2", "h3": "10.77.0.3"}
SECRET = "multihost-test-%d" % os.getpid()
failures = []
# The test's own patience (not a verdict's latency): on a 2-core machine loaded by builds a rank
# of the probe took 14 s from its start to its first collective (load about 10).
STARTUP_S = 60.0
# The runner's connect deadline in the probe: long, but for the start fault whose latency it is.
CONNECT_MS = 30000


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, flush=True)


def hosts(*args, check_rc=True):
    return subprocess.run(["bash", HOSTS_SH, *args], env=ENV, capture_output=True, text=True, timeout=60,
                          check=check_rc)


def pids_in(host):
    out = subprocess.run(["ip", "netns", "pids", "%s-%s" % (PREFIX, host)], capture_output=True, text=True, timeout=10)
    return [int(p) for p in out.stdout.split()]


def nothing_left(case):
    # Bounded: up to 3 s for the ranks' processes to leave every host.
    for _ in range(30):
        left = {h: pids_in(h) for h in ADDR}
        if not any(left.values()):
            return
        time.sleep(0.1)
    check(False, "%s: processes left running: %s" % (case, left))
    for pids in left.values():
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class Ranks:
    """Ranks started on hosts (one process per rank), collected within a budget."""

    def __init__(self, placement, command, env_of_rank, scratch):
        self.procs, self.outs = [], []
        for rank, host in enumerate(placement):
            path = os.path.join(scratch, "rank%d.out" % rank)
            out = open(path, "w+")
            env = dict(ENV, **env_of_rank(rank))
            self.procs.append(subprocess.Popen(["bash", HOSTS_SH, "exec", host, *command], env=env, stdout=out,
                                               stderr=subprocess.STDOUT))
            self.outs.append(out)
        self.started = time.monotonic()

    def in_collectives(self, budget=STARTUP_S):
        """Waits (bounded) until every rank's task is past its first collective."""
        deadline = time.monotonic() + budget
        while time.monotonic() < deadline:
            if all(open(out.name).read().count("IN COLLECTIVES") for out in self.outs):
                return True
            time.sleep(0.02)
        check(False, "the ranks did not reach their collectives within %.0f s" % budget)
        return False

    def wait(self, budget):
        codes = []
        for p in self.procs:
            try:
                codes.append(p.wait(timeout=max(0.1, self.started + budget - time.monotonic())))
            except subprocess.TimeoutExpired:
                p.kill()
                codes.append(p.wait())
                check(False, "a rank did not finish within %.0f s" % budget)
        texts = []
        for out in self.outs:
            out.seek(0)
            texts.append(out.read())
            out.close()
        return codes, texts


def env_launch(placement, secret=SECRET, overrides=None, port=29400):
    def env_of_rank(rank):
        env = {"RANK": str(rank), "WORLD_SIZE": str(len(placement)), "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
               "MASTER_ADDR": ADDR[placement[0]], "MASTER_PORT": str(port)}
        if secret:
            env["DISTMETRICS_RUN_SECRET"] = secret
        env.update((overrides or {}).get(rank, {}))
        return env
    return env_of_rank


def report_of(text):
    for line in text.splitlines():
        if line.startswith("VARIANT "):
            return json.loads(line[8:])
    return None


PLACEMENT = ["h1", "h2", "h3"]
table = []


# The probe's report grace, and rank 0's margins for a rank that sent no outcome
# (runtime/src/launch/peer_gather.h): silent for 2 s is cut off, a rank still heard is waited for
# up to 2 s past the deadline plus the grace.
GRACE_S, LATE_S = 0.5, 2.0


def fault_case(name, expect_status, expect_blamed, deadline_ms, iterations, during=None, after=None,
               overrides=None, port=29401, budget=STARTUP_S + 30, limit_s=1.0, cut_off=()):
    scratch = tempfile.mkdtemp(prefix="dm_mh_")
    ranks = Ranks(PLACEMENT, [PROBE, "env", "gloo", "multihost", str(iterations), str(deadline_ms), str(CONNECT_MS)],
                  env_launch(PLACEMENT, overrides=overrides, port=port), scratch)
    if during:
        during(ranks)
    codes, texts = ranks.wait(budget)
    if after:
        after()
    report = report_of(texts[0])
    if report is None:
        check(False, "%s: rank 0 printed no report (exit codes %s)\n%s" % (name, codes, "\n".join(texts)))
        nothing_left(name)
        return
    status, blamed = report["status"], report.get("blamed_rank", -1)
    host = PLACEMENT[blamed] if 0 <= blamed < len(PLACEMENT) else "-"
    latency = report.get("seconds", 0.0)
    limit = deadline_ms / 1000.0 + limit_s
    table.append((name, status, "%d (%s)" % (blamed, host) if blamed >= 0 else "-", latency, limit))
    check(status == expect_status, "%s: status %s, expected %s\n%s" % (name, status, expect_status, report["diagnosis"]))
    check(blamed == expect_blamed, "%s: blamed rank %s, expected %s\n%s" % (name, blamed, expect_blamed, report["diagnosis"]))
    if blamed >= 0:
        check("host " + host in report["diagnosis"], "%s: the diagnosis does not name host %s:\n%s" % (name, host, report["diagnosis"]))
    check(latency <= limit, "%s: verdict after %.2f s, more than deadline + %.1f s (%.1f s)" % (name, latency, limit_s, limit))
    # Only the ranks behind the cut are said to have sent nothing; a healthy rank is never among them.
    said_silent = re.match(r"ranks? ([\d, ]+) sent nothing", report["diagnosis"])
    said_silent = sorted(int(r) for r in said_silent.group(1).split(", ")) if said_silent else []
    check(said_silent == sorted(cut_off), "%s: said to have sent nothing: ranks %s, expected %s\n%s"
          % (name, said_silent, sorted(cut_off), report["diagnosis"]))
    # Every rank that could hear rank 0 saw the same verdict.
    for r, text in enumerate(texts):
        saw = re.findall(r"^RANK %d SAW (\w+) (-?\d+)" % r, text, re.M)
        if saw and name != "partition (h3's link down)":
            check(saw[0] == (status, str(blamed)), "%s: rank %d saw %s, rank 0 %s" % (name, r, saw[0], (status, blamed)))
    print("  %s: %s, blamed %s, %.2f s; diagnosis: %s" % (name, status, blamed, latency, report["diagnosis"].replace("\n", " | ")),
          flush=True)
    nothing_left(name)


def mpirun_fault_case(name, expect_status, expect_blamed, deadline_ms, iterations, kill_host, budget=STARTUP_S + 30,
                      write_delay_ms=0):
    """mpirun on h1 with a host file (h1, h2, h3: one rank each), --launcher mpi, gloo: every process
    of `kill_host` (its orted, its rank, the rank's agent and task child) killed mid-collective.
    Rank 0's report must be written before mpirun's teardown ends it (SIGTERM at once or 1 s after
    the loss, SIGKILL 1 s after SIGTERM). With `write_delay_ms`, rank 0 writes it only after the
    SIGTERM has come (held by the runner), that long after it."""
    if not MPIRUN:
        print("  %s: not built with Open MPI, not run" % name)
        return
    scratch = tempfile.mkdtemp(prefix="dm_mh_")
    hostfile = os.path.join(scratch, "hosts")
    with open(hostfile, "w") as f:
        f.write("h1 slots=1\nh2 slots=1\nh3 slots=1\n")
    env = dict(ENV, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none")
    # Each rank's output in a file of its own (mpirun's forwarded chunks of several ranks interleave).
    outputs = os.path.join(scratch, "ranks")
    launcher_out = open(os.path.join(scratch, "mpirun.out"), "w+")
    proc = subprocess.Popen(["bash", HOSTS_SH, "exec", "h1", MPIRUN, "--hostfile", hostfile, "-np", "3", "--bind-to", "none",
                             "--mca", "plm_rsh_agent", "%s rsh" % os.path.abspath(HOSTS_SH),
                             "--mca", "oob_tcp_if_include", "eth0", "--mca", "btl_tcp_if_include", "eth0",
                             "--mca", "btl", "self,tcp,vader", "--output-filename", outputs,
                             PROBE, "mpi", "gloo", "multihost", str(iterations), str(deadline_ms), str(CONNECT_MS)]
                            + ([str(write_delay_ms)] if write_delay_ms else []),
                            env=env, stdout=launcher_out, stderr=subprocess.STDOUT)
    rank_out = lambda r: (lambda found: open(found[0]).read() if found else "")(
        sorted(glob.glob(os.path.join(outputs, "*", "rank.%d" % r, "stdout"))))
    # The files are written as the ranks end; while they run, mpirun's forwarded output says it.
    in_collectives = lambda: set(re.findall(r"RANK (\d) IN COLLECTIVES", open(launcher_out.name).read())) == {"0", "1", "2"}
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline and not in_collectives():
        time.sleep(0.02)
    check(in_collectives(), "%s: the ranks did not reach their collectives within %.0f s" % (name, STARTUP_S))
    time.sleep(0.3)
    killed_at = time.time()
    for pid in pids_in(kill_host):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        code = proc.wait(timeout=budget)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
        check(False, "%s: mpirun did not end within %d s" % (name, budget))
    launcher_out.seek(0)
    report = report_of(rank_out(0))
    if report is None:
        check(False, "%s: rank 0 printed no report (mpirun exit %s)\n%s\n%s" % (name, code, rank_out(0), launcher_out.read()[-3000:]))
        nothing_left(name)
        return
    status, blamed = report["status"], report.get("blamed_rank", -1)
    host = PLACEMENT[blamed] if 0 <= blamed < len(PLACEMENT) else "-"
    latency = report.get("seconds", 0.0)
    limit = deadline_ms / 1000.0 + 1.0
    table.append((name, status, "%d (%s)" % (blamed, host) if blamed >= 0 else "-", latency, limit))
    check(status == expect_status, "%s: status %s, expected %s\n%s" % (name, status, expect_status, report["diagnosis"]))
    check(blamed == expect_blamed, "%s: blamed rank %s, expected %s\n%s" % (name, blamed, expect_blamed, report["diagnosis"]))
    check("host " + host in report["diagnosis"], "%s: the diagnosis does not name host %s:\n%s" % (name, host, report["diagnosis"]))
    check(latency <= limit, "%s: verdict after %.2f s, more than deadline + 1 s (%.1f s)" % (name, latency, limit))
    # When rank 0 had written its report, counted from the kill: Open MPI's mpirun sends rank 0's process
    # group SIGCONT at once, SIGTERM 1 s later, SIGKILL 1 s after that (docs/multi-host.md).
    returned = re.findall(r"^RANK 0 REPORTED_AT (\d+\.\d+)", rank_out(0), re.M)
    after_kill = float(returned[0]) - killed_at if returned else float("nan")
    held = re.findall(r"^RANK 0 HELD (\d+) (\d+\.\d+)", rank_out(0), re.M)
    if write_delay_ms:
        check(held and held[0][0] == str(int(signal.SIGTERM)), "%s: rank 0 wrote its report without having held mpirun's "
              "SIGTERM (%s)" % (name, held))
    sigterm = " (mpirun's SIGTERM held %.3f s after the kill)" % (float(held[0][1]) - killed_at) if held else ""
    print("  %s: %s, blamed %s, %.2f s (rank 0 wrote it %.3f s after the kill%s); mpirun exit %s; diagnosis: %s"
          % (name, status, blamed, latency, after_kill, sigterm, code, report["diagnosis"].replace("\n", " | ")), flush=True)
    nothing_left(name)


def kill_host_after(host, seconds):
    def during(ranks):
        ranks.in_collectives()
        time.sleep(seconds)
        for pid in pids_in(host):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return during


def link_down_after(host, seconds):
    def during(ranks):
        ranks.in_collectives()
        time.sleep(seconds)
        hosts("link", host, "down")
    return during


def start_failure_case(name, overrides, expect_text, connect_budget_s=5.0, port=29402):
    scratch = tempfile.mkdtemp(prefix="dm_mh_")
    ranks = Ranks(PLACEMENT, [PROBE, "env", "gloo", "multihost", "5", "5000", str(int(connect_budget_s * 1000))],
                  env_launch(PLACEMENT, overrides=overrides, port=port), scratch)
    codes, texts = ranks.wait(STARTUP_S + 30)
    # From the last rank's runner start (process start-up aside) to the last refusal.
    stamps = lambda word: [float(x) for t in texts for x in re.findall(r"^%s (\d+\.\d+)" % word, t, re.M)]
    started, refused = stamps("STARTED"), stamps("REFUSED")
    took = max(refused) - max(started) if started and len(refused) == len(texts) else float("inf")
    limit = connect_budget_s + 1.0
    said = [bool(re.search(expect_text, t)) for t in texts]
    table.append((name, "start refused", "rank 2 (h3)" if said[0] else "-", took, limit))
    check(all(c != 0 for c in codes), "%s: exit codes %s, expected every rank to fail" % (name, codes))
    check(said[0], "%s: rank 0 does not say /%s/:\n%s" % (name, expect_text, texts[0]))
    check(took <= limit, "%s: every rank ended after %.2f s, more than the connect deadline + 1 s" % (name, took))
    print("  %s: exit codes %s, %.2f s; rank 0: %s" % (name, codes, took, texts[0].strip().splitlines()[-1:]), flush=True)
    nothing_left(name)


def same_verdicts_as_one_host():
    """The CLI on a few scenarios: ranks on h1, h2, h3 (env launcher) and the local pool agree."""
    scratch = tempfile.mkdtemp(prefix="dm_mh_")
    files = [os.path.join(SCENARIOS, "core", f) for f in ("psnr.toml", "accuracy_multiclass.toml", "pearson_correlation.toml")]
    started = time.monotonic()
    ranks = Ranks(PLACEMENT, [DISTMETRICS, "run", *files, "--backend", "gloo", "--launcher", "env", "--json",
                              os.path.join(scratch, "multi.json")], env_launch(PLACEMENT, port=29403), scratch)
    codes, texts = ranks.wait(STARTUP_S + 120)
    multi_s = time.monotonic() - started
    started = time.monotonic()
    local = subprocess.run([DISTMETRICS, "run", *files, "--backend", "gloo", "--world-sizes", "3", "--json",
                            os.path.join(scratch, "local.json")], capture_output=True, text=True, timeout=STARTUP_S + 120)
    local_s = time.monotonic() - started
    check(codes == [0, 0, 0], "CLI across hosts: exit codes %s\n%s" % (codes, texts[0]))
    check(local.returncode == 0, "CLI on one host: exit %d\n%s" % (local.returncode, local.stdout + local.stderr))
    try:
        multi = json.load(open(os.path.join(scratch, "multi.json")))
        one = json.load(open(os.path.join(scratch, "local.json")))
    except (OSError, ValueError) as e:
        check(False, "CLI: a report is missing: %s" % e)
        return
    outcome = lambda report: {v["id"]: v["outcome"] for v in report["variants"]}
    check(outcome(multi) == outcome(one), "CLI: across hosts %s, on one host %s" % (outcome(multi), outcome(one)))
    check(len(outcome(multi)) >= 6, "CLI: only %d variants" % len(outcome(multi)))
    check(not os.path.exists(os.path.join(scratch, "rank1.json")), "CLI: rank 1 wrote a report")
    print("  CLI, env launcher on h1, h2, h3: %d variants, same outcomes as the local pool (%.1f s across hosts, %.1f s local)"
          % (len(outcome(multi)), multi_s, local_s), flush=True)
    nothing_left("CLI")
    slurm(files, outcome(one))


def slurm(files, local_outcomes):
    """Slurm on the bed (slurmctld on h1, a slurmd per host): srun starts the CLI's 3 ranks on h1,
    h2, h3 (env launcher), the same outcomes as the local pool; the sbatch example passes
    `sbatch --test-only`. Not run (said) where Slurm is not installed."""
    up = subprocess.run(["bash", HOSTS_SH, "slurm"], env=ENV, capture_output=True, text=True, timeout=60)
    if up.returncode != 0:
        print("  Slurm: not run: " + (up.stdout + up.stderr).strip(), flush=True)
        return
    env = dict(ENV, SLURM_CONF=up.stdout.strip(), DISTMETRICS_RUN_SECRET=SECRET)
    scratch = tempfile.mkdtemp(prefix="dm_mh_")
    report = os.path.join(scratch, "srun.json")
    started = time.monotonic()
    run = subprocess.run(["bash", HOSTS_SH, "exec", "h1", "srun", "-N", "3", "-n", "3", "--ntasks-per-node=1", "bash", "-c",
                          "RANK=$SLURM_PROCID WORLD_SIZE=$SLURM_NTASKS LOCAL_RANK=$SLURM_LOCALID LOCAL_WORLD_SIZE=1 "
                          "MASTER_ADDR=10.77.0.1 MASTER_PORT=29408 exec \"$@\"", "rank", DISTMETRICS, "run", *files,
                          "--launcher", "env", "--backend", "gloo", "--json", report], env=env, capture_output=True, text=True,
                         timeout=120)
    took = time.monotonic() - started
    check(run.returncode == 0, "srun: exit %d\n%s" % (run.returncode, run.stdout[-3000:] + run.stderr[-3000:]))
    try:
        across = {v["id"]: v["outcome"] for v in json.load(open(report))["variants"]}
    except (OSError, ValueError) as e:
        check(False, "srun: no report: %s" % e)
        return
    check(across == local_outcomes, "srun: across hosts %s, on one host %s" % (across, local_outcomes))
    example = os.path.join(os.path.dirname(os.path.abspath(HOSTS_SH)), "..", "examples", "slurm", "distmetrics.sbatch")
    dry = subprocess.run(["bash", HOSTS_SH, "exec", "h1", "sbatch", "--test-only", example], env=env, capture_output=True,
                         text=True, timeout=30)
    check(dry.returncode == 0 and "to start at" in dry.stderr, "sbatch --test-only: %d %s" % (dry.returncode, dry.stderr))
    for host in ADDR:  # Slurm's daemons, ended by pid: the later cases check that every host is empty
        for pid in pids_in(host):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    nothing_left("Slurm")
    print("  Slurm: srun on h1, h2, h3: %d variants, same outcomes as the local pool (%.1f s); sbatch --test-only of "
          "examples/slurm/distmetrics.sbatch: %s" % (len(across), took, dry.stderr.strip()), flush=True)


def mpirun_across_hosts():
    """mpirun on h1 with a host file (h1: 2 slots, h2 and h3: 1), ci/hosts.sh rsh as Open MPI's rsh
    agent, --launcher mpi on gloo and mpi: the same outcomes as the local pool of 4 ranks."""
    if not MPIRUN:
        print("  mpirun: not built with Open MPI, not run")
        return
    scratch = tempfile.mkdtemp(prefix="dm_mh_")
    hostfile = os.path.join(scratch, "hosts")
    with open(hostfile, "w") as f:
        f.write("h1 slots=2\nh2 slots=1\nh3 slots=1\n")
    files = [os.path.join(SCENARIOS, "core", f) for f in ("psnr.toml", "accuracy_multiclass.toml")]
    env = dict(ENV, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none")
    started = time.monotonic()
    # Open MPI's own traffic only on the bed's link (eth0 of each host).
    multi = subprocess.run(["bash", HOSTS_SH, "exec", "h1", MPIRUN, "--hostfile", hostfile, "-np", "4", "--bind-to", "none",
                            "--mca", "plm_rsh_agent", "%s rsh" % os.path.abspath(HOSTS_SH),
                            "--mca", "oob_tcp_if_include", "eth0", "--mca", "btl_tcp_if_include", "eth0",
                            "--mca", "btl", "self,tcp,vader", DISTMETRICS, "run", *files, "--launcher", "mpi",
                            "--backend", "gloo,mpi", "--json", os.path.join(scratch, "multi.json")],
                           env=env, capture_output=True, text=True, timeout=180)
    multi_s = time.monotonic() - started
    started = time.monotonic()
    local = subprocess.run([DISTMETRICS, "run", *files, "--backend", "gloo,mpi", "--world-sizes", "4", "--json",
                            os.path.join(scratch, "local.json")], env=env, capture_output=True, text=True, timeout=180)
    local_s = time.monotonic() - started
    check(multi.returncode == 0, "mpirun across hosts: exit %d\n%s" % (multi.returncode, multi.stdout[-3000:] + multi.stderr[-3000:]))
    check(local.returncode == 0, "local pool: exit %d\n%s" % (local.returncode, local.stdout + local.stderr))
    try:
        outcome = lambda path: {v["id"]: v["outcome"] for v in json.load(open(path))["variants"]}
        across, one = outcome(os.path.join(scratch, "multi.json")), outcome(os.path.join(scratch, "local.json"))
    except (OSError, ValueError) as e:
        check(False, "mpirun: a report is missing: %s" % e)
        return
    check(across == one, "mpirun: across hosts %s, on one host %s" % (across, one))
    check(sorted({i.split(":")[1].split("-")[0] for i in across}) == ["gloo", "mpi"], "mpirun: backends %s" % across)
    print("  mpirun --launcher mpi on h1 (2 ranks), h2, h3: %d variants on gloo and mpi, same outcomes as the local pool "
          "(%.1f s across hosts, %.1f s local)" % (len(across), multi_s, local_s), flush=True)
    nothing_left("mpirun")


def listening_sockets(host):
    out = subprocess.run(["ip", "netns", "exec", "%s-%s" % (PREFIX, host), "ss", "-ltnH"], capture_output=True,
                         text=True, timeout=10)
    return [line.split()[3] for line in out.stdout.splitlines() if len(line.split()) > 3]


def security():
    """The store listens on MASTER_ADDR alone, and refuses and logs connections without the secret."""
    scratch = tempfile.mkdtemp(prefix="dm_mh_")
    port = 29404
    ranks = Ranks(["h1", "h2"], [PROBE, "env", "gloo", "multihost", "150", "8000", str(CONNECT_MS)],
                  env_launch(["h1", "h2"], port=port), scratch)
    listening = []
    for _ in range(int(STARTUP_S * 10)):  # until rank 0 listens (bounded)
        listening = [a for a in listening_sockets("h1") if a.endswith(":%d" % port)]
        if listening:
            break
        time.sleep(0.1)
    check(listening == ["10.77.0.1:%d" % port], "security: rank 0 listens on %s, expected 10.77.0.1:%d alone" % (listening, port))
    # From h3: no hello at all, and a wrong secret; from h1 itself: loopback reaches nothing.
    strangers = subprocess.run(
        ["bash", HOSTS_SH, "exec", "h3", sys.executable, "-c",
         "import socket,time\n"
         "a = socket.create_connection(('10.77.0.1', %d), timeout=3); a.sendall(b'{\"op\":\"get\",\"key\":\"report\",\"id\":1}\\n')\n"
         "b = socket.create_connection(('10.77.0.1', %d), timeout=3); b.sendall(b'{\"op\":\"hello\",\"secret\":\"guess\"}\\n')\n"
         "for s in (a, b):\n"
         "    s.settimeout(4)\n"
         "    print('answered' if s.recv(100) else 'closed')\n" % (port, port)],
        env=ENV, capture_output=True, text=True, timeout=20)
    check(strangers.stdout.split() == ["closed", "closed"], "security: strangers got %r %r" % (strangers.stdout, strangers.stderr))
    loopback = subprocess.run(["bash", HOSTS_SH, "exec", "h1", sys.executable, "-c",
                               "import socket\ntry:\n socket.create_connection(('127.0.0.1', %d), timeout=2); print('open')\n"
                               "except OSError as e:\n print('refused')" % port], env=ENV, capture_output=True, text=True, timeout=20)
    check(loopback.stdout.strip() == "refused", "security: the store answers on h1's loopback: %r" % loopback.stdout)
    cmdlines = [open("/proc/%d/cmdline" % p.pid, "rb").read() for p in ranks.procs if p.poll() is None]
    check(all(SECRET.encode() not in c for c in cmdlines), "security: the secret is on a command line")
    codes, texts = ranks.wait(STARTUP_S + 30)
    report = report_of(texts[0])
    check(report is not None and report["status"] == "completed", "security: the run did not complete\n%s" % texts[0])
    refusals = re.findall(r"refused a connection from (10\.77\.0\.3):\d+: ([^(]*)", texts[0])
    check([r[0] for r in refusals] == ["10.77.0.3", "10.77.0.3"], "security: refusals logged: %s\n%s" % (refusals, texts[0]))
    print("  security: listens on %s only; h3 without the secret: %s; logged: %s" % (listening, strangers.stdout.split(), refusals),
          flush=True)
    # Without a secret the env launcher refuses to start across hosts.
    ranks = Ranks(["h1", "h2"], [PROBE, "env", "gloo", "multihost", "1", "2000", str(CONNECT_MS)],
                  env_launch(["h1", "h2"], secret="", port=port + 1), scratch)
    codes, texts = ranks.wait(STARTUP_S + 20)
    check(codes[0] != 0 and "DISTMETRICS_RUN_SECRET" in texts[0], "security: no secret: %s\n%s" % (codes, texts[0]))
    nothing_left("security")


def main():
    why = subprocess.run(["bash", HOSTS_SH, "check"], env=ENV, capture_output=True, text=True, timeout=60)
    if why.returncode != 0:
        print("SKIP: the multi-host tests need network namespaces: " + (why.stdout + why.stderr).strip())
        return 77
    started = time.monotonic()
    hosts("up")
    only = os.environ.get("DM_MH_ONLY", "")  # a word of the cases to run (while working on one)
    try:
        if not only or only == "cli":
            same_verdicts_as_one_host()
        if not only or only == "mpirun":
            mpirun_across_hosts()
        if not only or only == "security":
            security()
        if not only or only == "faults":
            faults()
    finally:
        hosts("down", check_rc=False)
    print("\nfault across hosts                         | verdict       | blamed (host) | latency | limit")
    for name, status, blamed, latency, limit in table:
        print("%-42s | %-13s | %-13s | %5.2f s | %4.1f s" % (name, status, blamed, latency, limit))
    print("\nmulti-host tests: %.1f s, %d failure(s)" % (time.monotonic() - started, len(failures)))
    return 1 if failures else 0


def faults():
    fault_case("host h3's ranks killed", "crash", 2, 6000, 400, during=kill_host_after("h3", 0.3))
    mpirun_fault_case("host h3's ranks killed (mpirun)", "crash", 2, 6000, 400, "h3")
    # Rank 0 writes its report only after mpirun's SIGTERM has come (at once or 1 s after the
    # loss), 100 ms after it: the runner holds the signal until then; SIGKILL comes 1 s after it.
    mpirun_fault_case("host h3 killed (mpirun), written after SIGTERM", "crash", 2, 6000, 400, "h3", write_delay_ms=100)
    fault_case("partition (h3's link down)", "hang", 2, 3000, 400, during=link_down_after("h3", 0.3),
               after=lambda: hosts("link", "h3", "up"), port=29405, limit_s=GRACE_S + LATE_S + 1.0, cut_off=[2])
    # A slow link: 40 ms more each way with netem; where the kernel has none, h2's link
    # throttled to 64 kbit/s (tbf), which makes each all_reduce take ~0.3 s instead of ~1 ms.
    if hosts("delay", "h2", "40", check_rc=False).returncode == 0:
        slow = "slow link (h2 +40 ms each way)"
    else:
        hosts("throttle", "h2", "64")
        slow = "slow link (h2 at 64 kbit/s, tbf)"
    # 5 all_reduces: about 1.1 s each on that link with the ranks' store traffic (progress,
    # heartbeats), so the run ends well inside its 10 s deadline however loaded the machine.
    fault_case(slow, "completed", -1, 10000, 5, after=lambda: (hosts("delay", "h2", "0", check_rc=False),
                                                               hosts("throttle", "h2", "0")), port=29406)
    start_failure_case("rank 2 with WORLD_SIZE=4", {2: {"WORLD_SIZE": "4"}}, r"rank 2 was started with a world of 4")
    start_failure_case("rank 2 with MASTER_ADDR of h2", {2: {"MASTER_ADDR": ADDR["h2"]}}, r"missing: rank 2",
                       port=29407)


if __name__ == "__main__":
    sys.exit(main())
