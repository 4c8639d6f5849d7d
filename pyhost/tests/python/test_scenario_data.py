"""A team's own data and reference, through the real CLI and its rank workers: data.file (.pt written
by torch.save, .npz written by np.savez and np.savez_compressed), data.python (called once), and
[reference] python with keyword arguments judged by agrees_with_reference in `run` and `conform`;
every bad file, key, shape and callable is a `validate` error with file, line and field (exit 2).
The files are written here by torch and NumPy; the expected values come from scikit-learn.
DISTMETRICS_BIN is the CLI under test (ctest sets it)."""

import json
import os
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, mean_absolute_error, mean_squared_error

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "python"
OWN_DATA = EXAMPLES / "own_data" / "mean_absolute_error_on_file.toml"
BROKEN_MAE = Path(__file__).resolve().parent / "sources" / "mae_divides_by_rows.py"


def distmetrics(tmp_path, *args, timeout=150):
    report = tmp_path / "report.json"
    wants_report = args and args[0] in ("run", "conform")
    cmd = [os.environ["DISTMETRICS_BIN"], *map(str, args), *(["--json", str(report)] if wants_report else [])]
    run = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=timeout)
    data = json.loads(report.read_text()) if wants_report and report.exists() else None
    return run, data


def prop(variant, name):
    return next(p for p in variant["properties"] if p["name"] == name)


def scenario(path, body):
    path.write_text(textwrap.dedent(body))
    return path


def regression(n=37, dims=0, seed=3):
    g = torch.Generator().manual_seed(seed)
    shape = (n, dims) if dims else (n,)
    target = torch.randn(*shape, generator=g, dtype=torch.float64)
    return target + 0.3 * torch.randn(*shape, generator=g, dtype=torch.float64), target


MAE_ON = """\
    description = "MAE on a file"
    [metric]
    name = "MeanAbsoluteError"
    [data]
    file = "{file}"
    batch_size = 4
    dtype = "float64"
    [reference]
    python = "sklearn.metrics:mean_absolute_error"
    [variants]
    world_sizes = [1, 2, 3]
    backends = ["gloo"]
    shards = ["even", "uneven", "skewed", "round_robin", "scattered"]
    """


@pytest.mark.parametrize("kind", ["pt", "npz", "npz_compressed"])
def test_file_data_runs_every_shard_policy_and_agrees_with_scikit_learn(tmp_path, kind):
    x, t = regression()
    if kind == "pt":
        torch.save({"input": x, "target": t}, tmp_path / "data.pt")
        name = "data.pt"
    else:
        save = np.savez if kind == "npz" else np.savez_compressed
        save(tmp_path / "data.npz", input=x.numpy(), target=t.numpy())
        name = "data.npz"
    scenario(tmp_path / "mae.toml", MAE_ON.format(file=name))
    run, data = distmetrics(tmp_path, "run", "--allow-python", "mae.toml")
    assert run.returncode == 0, run.stdout + run.stderr
    assert data["summary"]["pass"] == data["summary"]["total"] == 15  # 5 shard policies x world sizes 1, 2, 3
    expected = mean_absolute_error(t.numpy(), x.numpy())
    for v in data["variants"]:
        ref = prop(v, "agrees_with_reference")
        assert ref["outcome"] == "pass", ref["message"]
        assert ref["single"] == pytest.approx(expected, rel=1e-12)
        assert all(r == pytest.approx(expected, rel=1e-12) for r in ref["ranks"])
    # The shards follow the file's 37 samples.
    uneven = next(v for v in data["variants"] if v["id"].endswith("ws3-uneven-cpu"))
    assert sum(s["samples"] for s in uneven["shards"]) == 37


LABELS_ON = """\
    description = "{metric} on labels against scikit-learn"
    [metric]
    name = "{metric}"
    params = {params}
    [data]
    file = "{file}"
    batch_size = 6
    [reference]
    python = "{reference}"
    [reference.kwargs]
    {kwargs}
    [variants]
    world_sizes = [2]
    backends = ["gloo"]
    shards = ["uneven"]
    [tolerance]
    rtol = 1e-5
    """


def test_reference_kwargs_and_weights_reach_the_callable_and_tensors_are_compared(tmp_path):
    g = torch.Generator().manual_seed(11)
    target = torch.randint(0, 4, (50,), generator=g)
    pred = torch.where(torch.rand(50, generator=g) < 0.7, target, torch.randint(0, 4, (50,), generator=g))
    torch.save({"input": pred, "target": target}, tmp_path / "labels.pt")
    x, t = regression(n=30)
    w = 0.5 + torch.rand(30, generator=g, dtype=torch.float64)
    np.savez(tmp_path / "weighted.npz", input=x.numpy(), target=t.numpy(), weight=w.numpy())
    cases = [  # metric, its params, file, reference, kwargs, scikit-learn's value
        ("F1", '{ task = "multiclass", num_classes = 4, average = "macro" }', "labels.pt", "sklearn.metrics:f1_score",
         'average = "macro"', f1_score(target.numpy(), pred.numpy(), average="macro")),
        ("ConfusionMatrix", "{ num_classes = 4 }", "labels.pt", "sklearn.metrics:confusion_matrix",
         "labels = [0, 1, 2, 3]", confusion_matrix(target.numpy(), pred.numpy(), labels=[0, 1, 2, 3])),
        ("Loss", '{ loss = "mse" }', "weighted.npz", "sklearn.metrics:mean_squared_error", "",
         mean_squared_error(t.numpy(), x.numpy(), sample_weight=w.numpy())),  # sample_weight from the data
    ]
    for metric, params, file, reference, kwargs, expected in cases:
        scenario(tmp_path / "s.toml", LABELS_ON.format(metric=metric, params=params, file=file, reference=reference,
                                                       kwargs=kwargs))
        run, data = distmetrics(tmp_path, "run", "--allow-python", "s.toml")
        assert run.returncode == 0, run.stdout + run.stderr
        (v,) = data["variants"]
        ref = prop(v, "agrees_with_reference")
        assert ref["outcome"] == "pass", ref["message"]
        if np.ndim(expected):
            assert ref["single"]["shape"] == list(expected.shape)
            assert ref["single"]["values"] == expected.reshape(-1).tolist()  # int64 counts, exactly
        else:
            assert ref["single"] == pytest.approx(expected, rel=1e-5)


def test_npz_arrays_in_fortran_order_and_other_dtypes_are_read_as_numpy_holds_them(tmp_path):
    x, t = regression(n=23, dims=3)
    np.savez(tmp_path / "fortran.npz", input=np.asfortranarray(x.numpy().astype(np.float32)),
             target=np.asfortranarray(t.numpy()))
    assert not np.load(tmp_path / "fortran.npz")["input"].flags["C_CONTIGUOUS"]
    scenario(tmp_path / "mae.toml", MAE_ON.format(file="fortran.npz"))
    run, data = distmetrics(tmp_path, "run", "--allow-python", "mae.toml", "--world-sizes", "2", "--shard", "uneven")
    assert run.returncode == 0, run.stdout + run.stderr
    (v,) = data["variants"]
    expected = mean_absolute_error(t.numpy(), x.numpy().astype(np.float32).astype(np.float64))
    assert prop(v, "agrees_with_reference")["single"] == pytest.approx(expected, rel=1e-9)
    # int32 labels and a bool target: both int64 labels for the metric, as they are for scikit-learn.
    rng = np.random.default_rng(5)
    target = rng.random(40) < 0.4
    pred = np.where(rng.random(40) < 0.8, target, ~target).astype(np.int32)
    np.savez(tmp_path / "labels.npz", input=pred, target=target)
    scenario(tmp_path / "acc.toml", LABELS_ON.format(metric="Accuracy", params='{ task = "binary" }', file="labels.npz",
                                                     reference="sklearn.metrics:accuracy_score", kwargs=""))
    run, data = distmetrics(tmp_path, "run", "--allow-python", "acc.toml")
    assert run.returncode == 0, run.stdout + run.stderr
    (v,) = data["variants"]
    assert prop(v, "agrees_with_reference")["single"] == pytest.approx(accuracy_score(target, pred), rel=1e-6)


def test_a_reference_that_disagrees_fails_agrees_with_reference_in_run(tmp_path):
    x, t = regression()
    torch.save({"input": x, "target": t}, tmp_path / "data.pt")
    scenario(tmp_path / "mse.toml", MAE_ON.format(file="data.pt").replace("mean_absolute_error", "mean_squared_error"))
    run, data = distmetrics(tmp_path, "run", "--allow-python", "mse.toml", "--world-sizes", "2", "--shard", "even")
    assert run.returncode == 1, run.stdout + run.stderr
    (v,) = data["variants"]
    failed = {p["name"] for p in v["properties"] if p["outcome"] == "fail"}
    assert failed == {"agrees_with_reference"}
    assert "sklearn.metrics:mean_squared_error" in prop(v, "agrees_with_reference")["message"]
    assert v["reproduce"].startswith("distmetrics run --allow-python ")


def test_the_python_generator_is_called_once_and_its_data_are_sharded(tmp_path):
    (tmp_path / "team_data.py").write_text(textwrap.dedent("""\
        import numpy as np
        from pathlib import Path

        def make(seed, params):
            with open(Path(__file__).with_name("calls.txt"), "a") as calls:
                calls.write(f"{seed} {params['n']}\\n")
            rng = np.random.default_rng(seed)
            t = rng.normal(size=params["n"])
            return {"input": t + 0.2 * rng.normal(size=params["n"]), "target": t}
        """))
    scenario(tmp_path / "gen.toml", """\
        description = "a Python generator"
        [metric]
        name = "MeanAbsoluteError"
        [data]
        python = "team_data:make"
        seed = 42
        batch_size = 5
        dtype = "float64"
        [data.params]
        n = 41
        [reference]
        python = "sklearn.metrics:mean_absolute_error"
        [variants]
        world_sizes = [1, 2, 4]
        backends = ["gloo"]
        shards = ["even", "uneven"]
        """)
    run, data = distmetrics(tmp_path, "run", "--allow-python", "gen.toml")
    assert run.returncode == 0, run.stdout + run.stderr
    assert data["summary"]["pass"] == data["summary"]["total"] == 6
    assert (tmp_path / "calls.txt").read_text() == "42 41\n"  # once, in the supervisor; the ranks read its file
    rng = np.random.default_rng(42)
    t = rng.normal(size=41)
    expected = mean_absolute_error(t, t + 0.2 * rng.normal(size=41))
    for v in data["variants"]:
        assert prop(v, "agrees_with_reference")["single"] == pytest.approx(expected, rel=1e-12)


def test_conform_checks_a_python_metric_on_a_pt_file_against_scikit_learn(tmp_path):
    """The example scenario: the example metric passes, agrees_with_reference judged by scikit-learn."""
    run, data = distmetrics(tmp_path, "conform", "--python", EXAMPLES / "correct_torchmetrics.py", "--allow-python",
                            OWN_DATA)
    assert run.returncode == 0, run.stdout + run.stderr
    assert data["summary"]["pass"] == data["summary"]["total"] == 9  # world sizes 1, 2, 3 x 3 shard policies
    saved = torch.load(EXAMPLES / "own_data" / "regression_inputs.pt")
    expected = mean_absolute_error(saved["target"].numpy(), saved["input"].numpy())
    for v in data["variants"]:
        ref = prop(v, "agrees_with_reference")
        assert ref["outcome"] == "pass"
        assert ref["single"] == pytest.approx(expected, rel=1e-9)
        assert "the result on all the data is" in ref["message"]  # the scenario's reference judged it


def test_a_metric_only_the_reference_can_catch_fails_agrees_with_reference_alone(tmp_path):
    """Consistently wrong on every rank and world size: the distributed properties all hold."""
    run, data = distmetrics(tmp_path, "conform", "--python", BROKEN_MAE, "--allow-python", OWN_DATA,
                            "--world-sizes", "1,2", "--shard", "even")
    saved = torch.load(EXAMPLES / "own_data" / "regression_inputs.pt")
    expected = mean_absolute_error(saved["target"].numpy(), saved["input"].numpy())
    assert run.returncode == 1, run.stdout + run.stderr
    for v in data["variants"]:
        failed = {p["name"] for p in v["properties"] if p["outcome"] == "fail"}
        assert failed == {"agrees_with_reference"}, v["id"]
        # Twice scikit-learn's on [48, 2] data: the sum over rows, not elements.
        assert prop(v, "agrees_with_reference")["single"] == pytest.approx(2 * expected, rel=1e-9)
        assert "--allow-python" in v["reproduce"]


def test_without_allow_python_a_scenario_cannot_run_python(tmp_path):
    torch.save({"input": torch.zeros(4), "target": torch.zeros(4)}, tmp_path / "data.pt")
    # A module that leaves a mark when it is imported: nothing may import it without the flag.
    (tmp_path / "canary.py").write_text("import pathlib\npathlib.Path(__file__).with_name('imported').touch()\n"
                                        "def make(seed, params):\n    return {}\n\ndef ref(*args, **kwargs):\n    return 0.0\n")
    scenario(tmp_path / "mae.toml", MAE_ON.format(file="data.pt").replace("sklearn.metrics:mean_absolute_error",
                                                                          "canary:ref"))
    gen = BAD_DATA.format(data_line='python = "canary:make"')
    scenario(tmp_path / "gen.toml", gen)
    for command in ("validate", "list", "run"):
        run, _ = distmetrics(tmp_path, command, "mae.toml", "gen.toml")
        assert run.returncode == 2, run.stdout + run.stderr
        out = run.stdout + run.stderr
        assert "mae.toml:9: reference.python: a scenario file cannot make distmetrics run code: give --allow-python" in out
        assert "gen.toml:5: data.python: a scenario file cannot make distmetrics run code: give --allow-python" in out
    run, _ = distmetrics(tmp_path, "conform", "--python", EXAMPLES / "correct_torchmetrics.py", "mae.toml")
    assert run.returncode == 2, run.stdout + run.stderr
    assert not (tmp_path / "imported").exists()


BAD_DATA = """\
    description = "bad data"
    [metric]
    name = "MeanAbsoluteError"
    [data]
    {data_line}
    batch_size = 4
    """


def test_bad_files_keys_shapes_and_callables_are_validate_errors_naming_file_line_and_field(tmp_path):
    x, t = regression(n=10)
    torch.save({"input": x, "targte": t}, tmp_path / "wrong_key.pt")
    torch.save({"input": x, "target": t[:7]}, tmp_path / "wrong_rows.pt")
    torch.save({"input": x, "target": t, "weight": torch.ones(10, 2)}, tmp_path / "wrong_weight.pt")
    torch.save([x, t], tmp_path / "a_list.pt")
    (tmp_path / "junk.pt").write_text("not a zip")
    np.savez(tmp_path / "no_input.npz", prediction=x.numpy(), target=t.numpy())
    (tmp_path / "truncated.npz").write_bytes((lambda b: b[: len(b) // 2])(
        (np.savez(tmp_path / "full.npz", input=x.numpy()), (tmp_path / "full.npz").read_bytes())[1]))
    (tmp_path / "team_data.py").write_text("def make(seed, params):\n    return [1, 2]\n\nnot_callable = 3\n")
    cases = {
        'file = "missing.pt"': "no such file",
        'file = "junk.pt"': "is not readable as tensors saved with torch.save",
        'file = "a_list.pt"': "not a dict",
        'file = "wrong_key.pt"': "has 'targte', which is not a data key; did you mean 'target'?",
        'file = "wrong_rows.pt"': "'target' is float64 [7] but 'input' has 10 rows",
        'file = "wrong_weight.pt"': "'weight' is float32 [10, 2]; it must be one number per sample",
        'file = "no_input.npz"': "has 'prediction', which is not a data key",
        'file = "truncated.npz"': "is not a readable .npz (zip) file",
        'file = "data.csv"': "must end in .pt",
        'python = "team_data:make"': "the generator returned a list, not a dict",
        'python = "team_data:not_callable"': "'team_data:not_callable' is a int, not a callable",
        'python = "team_data:nothing"': "module 'team_data' has no attribute 'nothing'",
        'python = "no_such_module:make"': "cannot import 'no_such_module'",
        'python = "team_data.make"': "is not a Python callable's name: write 'module:attribute'",
    }
    for i, (line, message) in enumerate(cases.items()):
        scenario(tmp_path / f"bad{i}.toml", BAD_DATA.format(data_line=line))
    run, _ = distmetrics(tmp_path, "validate", "--allow-python", *[f"bad{i}.toml" for i in range(len(cases))])
    assert run.returncode == 2, run.stdout + run.stderr
    out = run.stdout
    for i, (line, message) in enumerate(cases.items()):
        field = "data.file" if line.startswith("file") else "data.python"
        assert f"bad{i}.toml:5: {field}: " in out, out
        hit = [l for l in out.splitlines() if l.startswith(f"bad{i}.toml:5: {field}: ")]
        assert message in hit[0], (line, hit)
    assert f"{len(cases)} with errors" in out


def test_a_reference_that_cannot_take_the_data_is_a_validate_error(tmp_path):
    torch.save({"input": torch.zeros(6), "target": torch.zeros(6)}, tmp_path / "data.pt")
    text = MAE_ON.format(file="data.pt").replace('python = "sklearn.metrics:mean_absolute_error"',
                                                 'python = "sklearn.metrics:mean_absolute_error"\n'
                                                 '    kwargs = { no_such_argument = 1 }')
    scenario(tmp_path / "mae.toml", text)
    run, _ = distmetrics(tmp_path, "validate", "--allow-python", "mae.toml")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "mae.toml:9: reference.python: sklearn.metrics:mean_absolute_error cannot judge the data" in run.stdout
    assert "no_such_argument" in run.stdout


def test_the_pytest_plugin_runs_such_scenarios_with_its_allow_python_option(tmp_path):
    x, t = regression()
    folder = tmp_path / "scenarios"
    folder.mkdir()
    torch.save({"input": x, "target": t}, folder / "data.pt")
    scenario(folder / "mae.toml", MAE_ON.format(file="data.pt"))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    base = [os.environ.get("DISTMETRICS_PYTHON", "/usr/bin/python3"), "-m", "pytest", "-p", "distmetrics.pytest_plugin",
            "-p", "no:cacheprovider", "--distmetrics-bin=" + os.environ["DISTMETRICS_BIN"], "--world-sizes", "2", "-q"]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    allowed = subprocess.run([*base, "--distmetrics-allow-python"], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=150)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "5 passed" in allowed.stdout
    refused = subprocess.run(base, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=150)
    assert refused.returncode != 0
    assert "give --allow-python" in refused.stdout + refused.stderr
