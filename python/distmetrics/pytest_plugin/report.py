"""Reads the runner's JSON report for one variant and says in words why it did not pass."""

import json
from pathlib import Path
from typing import Any, Dict, List, Optional

# Whether an outcome passed is the runner's table's to say: distmetrics.tables (Tables.passed).


def read_variant(report: Path, variant_id: str) -> Optional[Dict[str, Any]]:
    """The report's entry for variant_id; None when the file or the entry is missing.
    Raises ValueError when the file is there but is no report."""
    try:
        text = report.read_text()
    except OSError:
        return None
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("variants"), list):
        raise ValueError(f"{report} has no \"variants\" list")
    for entry in data["variants"]:
        if isinstance(entry, dict) and entry.get("id") == variant_id:
            return entry
    return None


def show_value(value: Any) -> str:
    """A Value's JSON form in one line; tensors as dtype[shape] and their values."""
    if isinstance(value, dict) and {"dtype", "shape", "values"} <= value.keys():
        shape = "x".join(str(d) for d in value["shape"])
        return f"{value['dtype']}[{shape}] {json.dumps(value['values'])}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {show_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in str(text).splitlines())


def describe_property(prop: Dict[str, Any]) -> List[str]:
    kept = prop.get("judged_before_death")
    if kept == "not judged":  # a variant that died before its evidence: never shown as a pass
        return [f"property {prop.get('name', '?')}: not judged", _indent(prop.get("message", ""))]
    lines = [f"property {prop.get('name', '?')}: {prop.get('outcome', '?')}" + (f" ({kept})" if kept else "")]
    if prop.get("message"):
        lines.append(_indent(prop["message"]))
    if "single" in prop and prop["single"] is not None:
        lines.append(f"    single-process value: {show_value(prop['single'])}")
    for rank, value in enumerate(prop.get("ranks") or []):
        lines.append(f"    rank {rank} value:        {show_value(value)}")
    if prop.get("difference") is not None:
        lines.append(f"    difference: {prop['difference']}")
    return lines


def describe_variant(entry: Dict[str, Any]) -> str:
    """What went wrong in one variant: outcome and reason, each property that did not pass with
    its message, single-process and per-rank values and their difference, and the diagnosis."""
    lines = [f"{entry.get('id', '?')}: {str(entry.get('outcome', '?')).upper()}"
             + (f": {entry['reason']}" if entry.get("reason") else "")]
    for prop in entry.get("properties") or []:
        # A variant that died lists every verdict kept from before (a held one too).
        if prop.get("outcome") != "pass" or prop.get("judged_before_death"):
            lines += describe_property(prop)
    if entry.get("diagnosis"):
        lines.append("diagnosis:")
        lines.append(_indent(entry["diagnosis"]))
    # The runner's own reproduce command is left out: the plugin prints the exact command it ran.
    return "\n".join(lines)
