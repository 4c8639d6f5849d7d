"""The Python a scenario file names, called by the C++ host (pyhost/src/scenario_code.cpp) when the
command line allows it (--allow-python). Not a public API; the conventions are in
docs/scenarios.md:

- data.python = "pkg.mod:make": make(seed, params) -> {"input": ..., "target": ..., "weight": ...},
  tensors or NumPy arrays (anything np.asarray takes), rows are samples;
- reference.python = "sklearn.metrics:f1_score": fn(y_true, y_pred, sample_weight=w, **kwargs) on
  NumPy arrays of the whole data (target, input, and the weights only when the data have them);
  fn(input, **kwargs) when the data have no target. It returns a number, an array, or a dict of
  these."""

import importlib
import json
import math

import torch

from ._host import SourceError


def resolve(spec):
    """'pkg.mod:attr.sub' -> the callable, or a SourceError that says what is wrong."""
    module_name, _, attr = spec.partition(":")
    try:
        obj = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - any import failure is the user's to see
        raise SourceError(f"cannot import '{module_name}' (of '{spec}'): {type(e).__name__}: {e}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise SourceError(f"'{spec}': module '{module_name}' has no attribute '{attr}'") from None
        obj = getattr(obj, part)
    if not callable(obj):
        raise SourceError(f"'{spec}' is a {type(obj).__name__}, not a callable")
    return obj


def check(spec):
    resolve(spec)


def _tensor(spec, key, value):
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu").contiguous()
    import numpy as np

    array = np.asarray(value)
    if array.dtype == object or array.dtype.kind not in "fiub":
        raise SourceError(f"the generator returned '{key}' of dtype {array.dtype}: give numbers (an array or a tensor)")
    return torch.from_numpy(np.ascontiguousarray(array))


def generate(spec, seed, params_json):
    """Calls the generator once; its dict's values as CPU tensors (the host checks keys and shapes)."""
    out = resolve(spec)(seed, json.loads(params_json))
    if not isinstance(out, dict):
        raise SourceError(f"the generator returned a {type(out).__name__}, not a dict: return "
                          "{'input': ..., 'target': ..., 'weight': ...}")
    return {str(key): _tensor(spec, key, value) for key, value in out.items()}


def _number(x):
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _value_json(spec, value):
    """A reference's value as distmetrics' Value JSON: a number, {dtype, shape, values}, or a dict."""
    import numpy as np

    if isinstance(value, torch.Tensor):
        value = value.detach().to("cpu").numpy()
    if isinstance(value, dict):
        return {str(k): _value_json(spec, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        value = np.asarray(value)
    if isinstance(value, np.ndarray) and value.ndim > 0:
        if value.dtype.kind == "b":
            return {"dtype": "bool", "shape": list(value.shape), "values": [bool(v) for v in value.reshape(-1)]}
        if value.dtype.kind in "iu":
            return {"dtype": "int64", "shape": list(value.shape), "values": [int(v) for v in value.reshape(-1)]}
        if value.dtype.kind == "f":
            return {"dtype": "float64", "shape": list(value.shape), "values": [_number(v) for v in value.reshape(-1)]}
        raise SourceError(f"the reference returned an array of dtype {value.dtype}: a reference returns numbers")
    if isinstance(value, (bool, int, float)) or hasattr(value, "item"):
        try:
            return _number(value.item() if hasattr(value, "item") else value)
        except (TypeError, ValueError):
            pass
    raise SourceError(f"the reference returned a {type(value).__name__}: a reference returns a number, an array, "
                      "or a dict of these")


def _numpy(t):
    return None if t is None else t.detach().to("cpu").numpy()


def reference(spec, kwargs_json, target, input, weight):  # noqa: A002 - the data's own key
    """Calls the reference once on the whole data; its value as Value JSON text."""
    fn = resolve(spec)
    kwargs = json.loads(kwargs_json)
    if weight is not None:
        kwargs.setdefault("sample_weight", _numpy(weight))
    args = (_numpy(target), _numpy(input)) if target is not None else (_numpy(input),)
    return json.dumps(_value_json(spec, fn(*args, **kwargs)))
