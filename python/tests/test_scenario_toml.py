"""Scenario files written from Python (distmetrics.scenario_toml) follow the runner's field table
(`distmetrics tables --json`'s "scenario_fields", harness/scenario_fields.h): what it writes the
runner validates, a key or a value the table refuses is refused here, and a field added to the
table (a fixture table here) is written with no change to the writer.

Needs the runner: $DISTMETRICS_BIN (ctest sets it), else build/bin/distmetrics."""

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "python"))

from distmetrics.scenario_toml import Multiline, ScenarioTomlError, scenario_toml  # noqa: E402
from distmetrics.tables import TablesError, find_binary, tables  # noqa: E402


@pytest.fixture(scope="module")
def fields():
    try:
        return tables().scenario_fields
    except TablesError as error:
        pytest.skip(f"no distmetrics runner to read the tables from: {error}")


def groups(top=(), data_extra=()):
    return [("", [("description", Multiline("A regression metric on 12 samples.")), *top]),
            ("metric", [("name", "MeanAbsoluteError")]),
            ("data", [("generator", "regression"), ("seed", 3), ("num_samples", 12), ("batch_size", 4),
                      *data_extra, ("params", {"dims": 2})]),
            ("variants", [("world_sizes", [1, 2]), ("backends", ["gloo"])]),
            ("tolerance", [("rtol", 1e-05)])]


def test_the_table_is_the_runners_fields(fields):
    by_name = {f["name"]: f for f in fields}
    assert by_name["data.seed"] == {**by_name["data.seed"], "section": "data", "key": "seed", "type": "integer"}
    assert by_name["single_process"]["choices"] == ["global", "per_step"]
    assert by_name["metric"]["type"] == "table" and by_name["metric"]["required"]
    # Program-only fields (conform's no_data_value) are not a file's.
    assert "expect.no_data_value" not in by_name


def test_what_it_writes_the_runner_validates(fields, tmp_path):
    text = scenario_toml(groups(top=[("properties", ["equal_to_single", "ranks_agree"])], data_extra=[("dtype", "float64")]))
    assert text == (
        'description = """A regression metric on 12 samples."""\nproperties = ["equal_to_single", "ranks_agree"]\n\n'
        '[metric]\nname = "MeanAbsoluteError"\n\n'
        '[data]\ngenerator = "regression"\nseed = 3\nnum_samples = 12\nbatch_size = 4\ndtype = "float64"\nparams = {dims = 2}\n\n'
        '[variants]\nworld_sizes = [1, 2]\nbackends = ["gloo"]\n\n[tolerance]\nrtol = 1e-05\n')
    path = tmp_path / "written.toml"
    path.write_text(text)
    done = subprocess.run([*find_binary(), "validate", str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_key_or_value_the_table_refuses_is_refused(fields):
    with pytest.raises(ScenarioTomlError, match=r"unknown scenario field 'sed' in \[data\]; did you mean 'seed'\?"):
        scenario_toml(groups(data_extra=[("sed", 3)]))
    with pytest.raises(ScenarioTomlError, match=r"'data.num_samples' must be an integer, got '12'"):
        scenario_toml([("data", [("num_samples", "12")])])
    with pytest.raises(ScenarioTomlError, match=r"'single_process' must be one of global, per_step, got 'both'"):
        scenario_toml([("", [("single_process", "both")])])
    with pytest.raises(ScenarioTomlError, match=r"unknown scenario field 'outputs' at the top level"):
        scenario_toml([("outputs", [("x", 1)])])


def test_a_field_added_to_the_table_is_written_with_no_change_here(fields):
    owner = {"name": "owner", "section": "", "key": "owner", "type": "string", "default": "none",
             "required": False, "choices": ["team-a", "team-b"], "docs": "who answers for the scenario"}
    ticket = {**owner, "name": "expect.ticket", "section": "expect", "key": "ticket", "choices": []}
    fixture = [*fields, owner, ticket]
    text = scenario_toml(groups(top=[("owner", "team-a")]) + [("expect", [("ticket", "DM-12")])], fields=fixture)
    assert '\nowner = "team-a"\n' in text and text.endswith('\n[expect]\nticket = "DM-12"\n')
    with pytest.raises(ScenarioTomlError, match="'owner' must be one of team-a, team-b, got 'team-c'"):
        scenario_toml([("", [("owner", "team-c")])], fields=fixture)
    with pytest.raises(ScenarioTomlError, match="unknown scenario field 'owner' at the top level"):
        scenario_toml(groups(top=[("owner", "team-a")]))
