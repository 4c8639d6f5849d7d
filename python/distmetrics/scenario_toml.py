"""Scenario files written from Python (the peers' own rows, python/distmetrics/peers.py), checked
against the runner's field table instead of a copy of it: `distmetrics tables --json` lists every
field a scenario file may hold ("scenario_fields", from harness/scenario_fields.h). A key that is
no field of its table, or a value not of the field's type, is refused here with the known names,
before `distmetrics validate` would refuse the file; a field added to the C++ table is written
with no change here.

    from distmetrics.scenario_toml import Multiline, scenario_toml
    scenario_toml([("", [("description", Multiline("..."))]),
                   ("metric", [("name", "Accuracy")]),
                   ("data", [("generator", "binary"), ("seed", 1), ("num_samples", 8), ("batch_size", 2)])])
"""

import difflib
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .tables import tables


class ScenarioTomlError(ValueError):
    """A key that is no scenario field, or a value of the wrong type: the message says which."""


class Multiline(str):
    """A string written as a TOML multi-line basic string (three quotes), as it is given."""


# The Python types a value of each field type may have (the C++ table's type names, field_type_name).
def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_TYPE_CHECKS = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "list of strings": lambda v: isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v),
    "list of integers": lambda v: isinstance(v, (list, tuple)) and all(
        isinstance(x, int) and not isinstance(x, bool) for x in v),
    "table": lambda v: isinstance(v, dict),
    "number, list or table": lambda v: _is_number(v) or isinstance(v, (list, tuple, dict)),
}


def _value(value: Any) -> str:
    """The TOML of one value: strings basic (or multi-line), numbers as Python writes them, lists,
    and dicts as inline tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, Multiline):
        return '"""' + value + '"""'
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_value(v)}" for k, v in value.items()) + "}"
    raise ScenarioTomlError(f"no TOML for {value!r}")


def _field(fields: Dict[str, Dict[str, Any]], section: str, key: str) -> Dict[str, Any]:
    path = f"{section}.{key}" if section else key
    if path in fields:
        return fields[path]
    known = [f["key"] for f in fields.values() if f["section"] == section]
    where = f"in [{section}]" if section else "at the top level"
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise ScenarioTomlError(f"unknown scenario field '{key}' {where}{hint} (known: {', '.join(known)})")


def scenario_toml(groups: Sequence[Tuple[str, Sequence[Tuple[str, Any]]]],
                  fields: Optional[List[Dict[str, Any]]] = None) -> str:
    """The text of a scenario file: each group (table, [(key, value), ...]) a block of lines in the
    order given, the top level's ("") without a header and a table's under its [table] header,
    blocks apart by a blank line. Every table and key must be a field of `fields` (the runner's
    table by default) and every value of the field's type."""
    listed = tables().scenario_fields if fields is None else fields
    if not listed:
        raise ScenarioTomlError("the runner lists no scenario fields (`distmetrics tables --json` of an older "
                                "build): use the distmetrics binary of the same build")
    by_path = {f["name"]: f for f in listed}
    blocks = []
    for section, items in groups:
        lines = []
        if section:
            if _field(by_path, "", section)["type"] != "table":
                raise ScenarioTomlError(f"'{section}' is a field of the top level, not a table")
            lines.append(f"[{section}]")
        for key, value in items:
            field = _field(by_path, section, key)
            if not _TYPE_CHECKS.get(field["type"], lambda v: True)(value):
                article = "an" if field["type"][0] in "aeiou" else "a"
                raise ScenarioTomlError(f"'{field['name']}' must be {article} {field['type']}, got {value!r}")
            if field["choices"] and value not in field["choices"]:
                raise ScenarioTomlError(f"'{field['name']}' must be one of {', '.join(field['choices'])}, "
                                        f"got {value!r}")
            lines.append(f"{key} = {_value(value)}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"
