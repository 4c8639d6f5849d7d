"""``--distmetrics-explore METRIC``: ``distmetrics explore`` as one pytest item per metric, for a
budget (docs/explore.md). The item fails when the search found a failure; its report lists
each one with its shrunk scenario (saved under ``--distmetrics-explore-save`` when given)."""

import json
import subprocess
import tempfile
from pathlib import Path
from typing import List, Optional

import pytest

from ..tables import TablesError, tables
from .runner import RunnerError, find_runner

GRACE = 120.0  # seconds past the budget: shrinking may take as long again, then the pools end


def add_options(group) -> None:
    group.addoption("--distmetrics-explore", action="append", metavar="METRIC[,METRIC..]",
                    help="add one item per metric that runs `distmetrics explore` on it (a reference metric, or "
                         "one of --distmetrics-python's); repeatable")
    group.addoption("--distmetrics-explore-budget", type=float, default=60.0, metavar="SECONDS",
                    help="each explore item's search budget (default 60)")
    group.addoption("--distmetrics-explore-seed", type=int, default=0, metavar="N",
                    help="the explore items' seed (default 0)")
    group.addoption("--distmetrics-explore-save", metavar="DIR",
                    help="write the shrunk failures of the explore items into DIR")


def explore_metrics(config) -> List[str]:
    metrics: List[str] = []
    for value in config.getoption("distmetrics_explore") or []:
        metrics += [m for m in value.split(",") if m and m not in metrics]
    return metrics


class ExploreFailure(Exception):
    pass


class ExploreItem(pytest.Item):
    def __init__(self, *, metric: str, **kwargs):
        super().__init__(**kwargs)
        self.metric = metric
        self.add_marker("distmetrics")

    def runner(self) -> List[str]:
        config = self.config
        try:
            return find_runner(config.getoption("distmetrics_bin"), config.rootpath, config.invocation_params.dir)
        except RunnerError as e:
            raise ExploreFailure(str(e))

    def command(self, summary: Path) -> List[str]:
        config = self.config
        command = self.runner() + ["explore", "--metric", self.metric,
                            "--budget", str(config.getoption("distmetrics_explore_budget")),
                            "--seed", str(config.getoption("distmetrics_explore_seed")),
                            "--json", str(summary), "--quiet"]
        python: Optional[str] = config.getoption("distmetrics_python")
        if python:
            command += ["--python", python]
        world_sizes = config.getoption("world_sizes")
        if world_sizes:
            command += ["--world-sizes", world_sizes]
        save = config.getoption("distmetrics_explore_save")
        if save:
            command += ["--save", save]
        return command

    def runtest(self) -> None:
        budget = self.config.getoption("distmetrics_explore_budget")
        try:  # explore exits as a run does: the pass outcome's code, or the fail outcome's for findings
            table = tables(self.runner())
            ended = (table.exit_code(table.outcome("pass")), table.exit_code(table.outcome("fail")))
        except TablesError as e:
            raise ExploreFailure(str(e))
        with tempfile.TemporaryDirectory(prefix="distmetrics-explore-") as tmp:
            summary = Path(tmp) / "summary.json"
            try:
                done = subprocess.run(self.command(summary), capture_output=True, text=True,
                                      timeout=2 * budget + GRACE)
            except subprocess.TimeoutExpired:
                raise ExploreFailure("explore of %s did not end within %.0f s" % (self.metric, 2 * budget + GRACE))
            if done.returncode not in ended or not summary.exists():
                raise ExploreFailure("explore of %s exited %d:\n%s%s" % (self.metric, done.returncode, done.stdout,
                                                                      done.stderr))
            report = json.loads(summary.read_text())
        self.user_properties.append(("explore_cases", report["cases"]))
        if report["findings"]:
            lines = ["explore found %d distinct failure(s) of %s in %d case(s) (seed %d):" %
                     (len(report["findings"]), self.metric, report["cases"], report["seed"])]
            for f in report["findings"]:
                lines.append("- %s: %s (shrunk to %s)%s" % (f["signature"], f["verdict"].get("reason", ""),
                                                            f["shrunk_size"],
                                                            "\n  saved: " + f["saved"] if f["saved"] else ""))
                lines.append(f["scenario"])
            raise ExploreFailure("\n".join(lines))

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, ExploreFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, "distmetrics explore --metric %s" % self.metric


def add_items(session, config, items) -> None:
    for metric in explore_metrics(config):
        items.append(ExploreItem.from_parent(session, name="explore[%s]" % metric, metric=metric))
