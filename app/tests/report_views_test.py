"""The report views of a real run, checked where people read them.

One real run (the engine tests' deliberately broken metrics: passes, a failure, two hangs and
skips) writes the JSON, HTML and Markdown reports; then
- the JSON report is checked against docs/report.schema.json, strictly (no unlisted field);
- the HTML report is opened in headless Chromium with no network, and the rendered DOM is checked:
  the matrix cells and their colours, the link from a cell into a failure, the reproduce command,
  the per-rank timeline of a hang. A screenshot is kept next to the reports.

Run by ctest (report_views) with CLI_TESTS (the CLI's test binary, which knows the broken metrics)
and REPORT_DIR (where the reports and the screenshot stay, in the build folder).
"""
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "docs" / "report.schema.json"


@pytest.fixture(scope="module")
def reports():
    binary = os.environ["CLI_TESTS"]
    out = pathlib.Path(os.environ["REPORT_DIR"]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("report.json", "report.html", "report.md", "report.png"):
        (out / stale).unlink(missing_ok=True)
    done = subprocess.run([binary, "--gtest_filter=Cli.ARealRunRendersEveryView"],
                          env={**os.environ, "DISTMETRICS_REPORT_DIR": str(out)},
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


# --- the JSON schema ---------------------------------------------------------------------------

def validate(value, schema, root, where="report"):
    """The part of JSON Schema docs/report.schema.json uses: $ref, type, enum, required,
    properties, additionalProperties (false), items, minimum. Returns a list of problems."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return validate(value, root["$defs"][name], root, where)
    problems = []
    kinds = schema.get("type")
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        checks = {"object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
                  "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
                  "null": lambda v: v is None,
                  "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
                  "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)}
        if not any(checks[k](value) for k in kinds):
            return [f"{where}: {value!r:.80} is not {' or '.join(kinds)}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and isinstance(value, (int, float)) and value < schema["minimum"]:
        problems.append(f"{where}: {value} < {schema['minimum']}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                problems.append(f"{where}: no field '{key}'")
        known = schema.get("properties", {})
        for key, item in value.items():
            if key in known:
                problems += validate(item, known[key], root, f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                problems.append(f"{where}: field '{key}' is not in the schema (add it there, and to docs)")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            problems += validate(item, schema["items"], root, f"{where}[{i}]")
    return problems


def test_the_json_report_follows_its_schema(reports):
    schema = json.loads(SCHEMA.read_text())
    report = json.loads((reports / "report.json").read_text())
    assert validate(report, schema, schema) == []
    # The schema is strict, so it also catches what it should: a renamed field, a wrong type.
    broken = json.loads(json.dumps(report))
    broken["variants"][0]["world size"] = broken["variants"][0].pop("world_size")
    broken["summary"]["pass"] = "4"
    found = validate(broken, schema, schema)
    assert "report.variants[0]: no field 'world_size'" in found
    assert any(p.startswith("report.summary.pass: '4' is not integer") for p in found)
    outcomes = sorted(v["outcome"] for v in report["variants"])
    assert outcomes.count("pass") == 4 and outcomes.count("fail") == 1 and outcomes.count("skip") == 8


# --- the HTML in a browser --------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,900", "--hide-scrollbars",
                 # No network: every host resolves nowhere and any proxy use fails.
                 "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
                 "--no-first-run", "--disable-background-networking", "--disable-sync",
                 "--disable-component-update", "--disable-default-apps"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)
    yield driver
    driver.quit()


def rgb(hex_colour):
    h = hex_colour.lstrip("#")
    return "rgba({}, {}, {}, 1)".format(*(int(h[i:i + 2], 16) for i in (0, 2, 4)))


def test_the_html_report_in_chromium(reports, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    page = reports / "report.html"
    html = page.read_text()
    assert "<link" not in html and 'src="' not in html and "http://" not in html and "https://" not in html
    browser.get(page.as_uri())
    # Nothing was fetched: the page is one file.
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0

    verdict = browser.find_element(By.ID, "verdict")
    assert verdict.text.startswith("FAILED: 3 of 7 variants did not pass (1 fail, ")
    assert verdict.text.endswith("; 8 skipped")

    def cell(row, prop):
        return browser.find_element(
            By.CSS_SELECTOR, f'tr[data-row="{row}"] td.cell[data-property="{prop}"]')

    # Cells: the worst outcome's colour, and counts.
    failed = cell("broken/no_sync", "equal_to_single")
    assert failed.text == "1/1 fail"
    assert failed.value_of_css_property("background-color") == rgb("#cf222e")
    passed = cell("broken/correct_mean", "equal_to_single")
    assert passed.text == "4/4 pass"
    assert passed.value_of_css_property("background-color") == rgb("#dafbe1")
    hung = cell("broken/raise_alone", "no_hang")
    assert hung.text == "1/1 hang"
    assert hung.value_of_css_property("background-color") == rgb("#8250df")
    skipped = cell("broken/on_gpus", "no_hang")
    assert skipped.text == "8 skipped"
    assert skipped.value_of_css_property("background-color") == rgb("#eff2f5")
    skips = browser.find_element(By.CSS_SELECTOR, "details.skips summary")
    assert skips.text.startswith("8 skipped: ")

    # Before the screenshot of the whole page, with no cell panel open.
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, min(max(height, 900), 6000))
    browser.save_screenshot(str(reports / "report.png"))
    browser.set_window_size(1280, 900)

    # A cell opens its variants; a failing one links to what differed.
    panel_id = failed.find_element(By.TAG_NAME, "a").get_attribute("href").split("#", 1)[1]
    panel = browser.find_element(By.ID, panel_id)
    assert not panel.is_displayed()
    failed.find_element(By.TAG_NAME, "a").click()
    assert panel.is_displayed()
    row = panel.find_element(By.CSS_SELECTOR, 'tr[data-variant="broken/no_sync:gloo-ws2-uneven-cpu"]')
    assert [td.text for td in row.find_elements(By.TAG_NAME, "td")][:5] == ["gloo", "2", "uneven", "cpu", "FAIL"]
    row.find_element(By.CSS_SELECTOR, "a.to-failure").click()
    target = browser.execute_script("return location.hash").lstrip("#")
    failure = browser.find_element(By.ID, target)
    assert failure.get_attribute("data-outcome") == "fail"
    assert "broken/no_sync:gloo-ws2-uneven-cpu" in failure.find_element(By.TAG_NAME, "h3").text
    ranks = failure.find_elements(By.CSS_SELECTOR, 'div.finding[data-property="equal_to_single"] tr.rank')
    assert len(ranks) == 2 and all("differs" in r.get_attribute("class") for r in ranks)
    single = failure.find_element(By.CSS_SELECTOR, 'div.finding[data-property="equal_to_single"] tr.single')
    cells = [td.text for td in single.find_elements(By.TAG_NAME, "td")]
    assert float(cells[0]) > 0 and cells[2] == "37"  # the single process saw every sample
    samples = [int(r.find_elements(By.TAG_NAME, "td")[2].text) for r in ranks]
    assert sum(samples) == 37
    assert float(ranks[0].find_elements(By.TAG_NAME, "td")[1].text) > 0  # a difference
    tolerance = failure.find_element(By.CSS_SELECTOR, "p.tolerance").text
    assert tolerance.startswith("tolerance: rtol 1e-06")
    command = failure.find_element(By.CSS_SELECTOR, "code.reproduce").text
    assert command.startswith("distmetrics run ") and "--filter 'broken/no_sync:gloo-ws2-uneven-cpu'" in command
    copy = failure.find_element(By.CSS_SELECTOR, "button.copy")
    assert copy.get_attribute("data-copy") == command
    copy.click()
    WebDriverWait(browser, 5).until(lambda _: copy.text == "copied")

    # The hang: a per-rank timeline with the divergence marked.
    hang = browser.find_element(By.ID, "v-broken_raise_alone_gloo-ws3-empty_rank-cpu")
    timeline = hang.find_element(By.CSS_SELECTOR, "table.timeline")
    heads = [th.text for th in timeline.find_elements(By.CSS_SELECTOR, "thead th")]
    # Rank 2 raised alone in compute 1, which ranks 0 and 1 wait in: the rank blamed per step.
    assert heads[0] == "#" and [h.split("\n")[0] for h in heads[1:]] == ["rank 0", "rank 1", "rank 2 · to blame"]
    assert heads[3].split("\n")[1].startswith("finished: NotComputableError")
    diverge = timeline.find_element(By.CSS_SELECTOR, "tr.diverge")
    assert diverge.get_attribute("data-seq") == "0"
    ops = diverge.find_elements(By.CSS_SELECTOR, "td")[1:]
    assert [("blocked" in td.get_attribute("class"), "missing" in td.get_attribute("class")) for td in ops] == \
        [(True, False), (True, False), (False, True)]
    assert ops[0].text.startswith("all_reduce(sum)") and "int64 [1]" in ops[0].text
    note = hang.find_element(By.CSS_SELECTOR, "p.diverge-note").text
    assert note.startswith("The ranks diverge at collective #0: rank 0 all_reduce(sum) (blocked)")
    assert note.endswith("rank 2 issued none.")
    # The step where the blamed rank broke the pattern: its place of the collective it passed the
    # step without is marked, and the note says what it did.
    deviating = timeline.find_elements(By.CSS_SELECTOR, "td.deviates")
    assert len(deviating) == 1 and deviating[0].text == "none"
    assert deviating[0].find_element(By.XPATH, "..").get_attribute("data-seq") == "0"
    assert "blamed" in timeline.find_elements(By.CSS_SELECTOR, "thead th")[3].get_attribute("class")
    deviation = hang.find_element(By.CSS_SELECTOR, "p.deviation-note").text
    assert deviation.startswith("rank 2 broke the pattern at script step 2 'compute' (compute 1): it passed it without "
                                "all_reduce(sum) #0 (int64 [1]), which ranks 0, 1 issued"), deviation
    browser.execute_script("arguments[0].scrollIntoView()", hang)
    browser.save_screenshot(str(reports / "report-hang.png"))
