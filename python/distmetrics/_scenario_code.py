"""The Python a scenario file names, called by the C++ host (pyhost/src/scenario_code.cpp) when the
command line allows it (--allow-python). Not a public API; the conventions are in
docs/scenarios.md:

- data.python = "pkg.mod:make": make(seed, params) -> {"input": ..., "target": ..., "weight": ...},
  tensors or NumPy arrays (anything np.asarray takes), rows are samples; or structured samples:
  "input" (and "target") a list or tuple of samples of any structure (dicts of boxes, strings),
  one element per sample, which are saved with torch.save for the Python metric's ranks;
- reference.python = "sklearn.metrics:f1_score": fn(y_true, y_pred, sample_weight=w, **kwargs) on
  NumPy arrays of the whole data (target, input, and the weights only when the data have them);
  fn(input, **kwargs) when the data have no target. It returns a number, an array, or a dict of
  these. With structured samples: fn(targets, inputs, **kwargs) on the two lists, as the generator
  gave them (fn(inputs, **kwargs) without targets)."""

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


def _is_structured(value):
    """A list or tuple that is not an array of numbers: one sample of any structure per element."""
    if not isinstance(value, (list, tuple)):
        return False
    import warnings

    import numpy as np

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            array = np.asarray(value)
    except Exception:  # noqa: BLE001 - ragged lists, lists of tensors of different shapes
        return True
    return array.dtype == object or array.dtype.kind not in "fiub"


def _samples(key, value):
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, torch.Tensor) or type(value).__module__ == "numpy":
        return list(torch.as_tensor(value))  # its rows, one sample each
    raise SourceError(f"the generator returned '{key}' as a {type(value).__name__}: give a list with one sample per "
                      "element (or a tensor, whose rows are samples)")


def _save_structured(out, path, num_samples):
    """Saves structured samples (torch.save of {"input": [...], "target": [...] or None}); their count."""
    keys = ("input", "target")
    for key in out:
        if key == "weight":
            raise SourceError("the generator returned structured samples and 'weight': structured data take no "
                              "separate weights; put each sample's weight inside the sample")
        if key not in keys:
            raise SourceError(f"the generator returned '{key}', which is not a data key (known: 'input', 'target')")
    if "input" not in out:
        raise SourceError("the generator returned no 'input': give 'input' (one sample per element)")
    data = {key: _samples(key, out[key]) if key in out else None for key in keys}
    rows = len(data["input"])
    if data["target"] is not None and len(data["target"]) != rows:
        raise SourceError(f"the generator returned {rows} input samples and {len(data['target'])} target samples: "
                          "give one target per input sample")
    if num_samples >= 0:
        if num_samples > rows:
            raise SourceError(f"the generator returned {rows} samples, fewer than data.num_samples = {num_samples} "
                              "(leave num_samples out to use them all)")
        data = {key: None if samples is None else samples[:num_samples] for key, samples in data.items()}
        rows = num_samples
    try:
        torch.save(data, path)
    except Exception as e:  # noqa: BLE001 - an object that cannot be pickled
        raise SourceError(f"the generator's samples cannot be saved with torch.save: {type(e).__name__}: {e}") from None
    return rows


def structured_rows(path):
    """data.file with data.structured = true: the file's samples counted, after checking that it
    holds {"input": [...], "target": [...]} as a generator's structured samples are saved."""
    from ._host import structured_samples

    try:
        data = structured_samples(path)
    except FileNotFoundError:
        raise SourceError(f"no such file: {path}") from None
    except Exception as e:  # noqa: BLE001 - not a torch.save file, or an object whose class is gone
        raise SourceError(f"{path} is not readable with torch.load: {type(e).__name__}: {e}") from None
    if not isinstance(data, dict):
        raise SourceError(f"{path} holds a {type(data).__name__}, not a dict: save "
                          "{'input': [samples], 'target': [samples]} with torch.save")
    for key in data:
        if key not in ("input", "target"):
            raise SourceError(f"{path} has '{key}', which is not a key of structured data (known: 'input', 'target'; "
                              "put each sample's weight inside the sample)")
    if "input" not in data:
        raise SourceError(f"{path} has no 'input': give 'input' (one sample per element)")
    lengths = {}
    for key in ("input", "target"):
        samples = data.get(key)
        if samples is None:
            continue
        if isinstance(samples, (dict, str, bytes)) or not hasattr(samples, "__len__") or not hasattr(samples, "__getitem__"):
            raise SourceError(f"{path}: '{key}' is a {type(samples).__name__}; give a list with one sample per element")
        lengths[key] = len(samples)
    if len(set(lengths.values())) > 1:
        raise SourceError(f"{path} has {lengths['input']} input samples and {lengths['target']} target samples: "
                          "give one target per input sample")
    return lengths["input"]


def generate(spec, seed, params_json, structured_path="", num_samples=-1):
    """Calls the generator once: its dict's values as CPU tensors (the host checks keys and shapes),
    or, when 'input' or 'target' holds structured samples, the number of samples it saved to
    structured_path."""
    out = resolve(spec)(seed, json.loads(params_json))
    if not isinstance(out, dict):
        raise SourceError(f"the generator returned a {type(out).__name__}, not a dict: return "
                          "{'input': ..., 'target': ..., 'weight': ...}")
    if structured_path and any(_is_structured(out.get(key)) for key in ("input", "target")):
        return _save_structured(out, structured_path, num_samples)
    return {str(key): _tensor(spec, key, value) for key, value in out.items()}


def _number(x):
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _value_json(spec, value):
    """A reference's value as distmetrics' Value JSON, read by the same rules as a metric's value
    (distmetrics._host.normalize): a number, {dtype, shape, values}, a dict, a list, null, or
    {"uncomparable": type, "text": ...} for a leaf no comparison understands."""
    from ._host import normalize

    if value is None:
        raise SourceError(f"{spec} returned None: a reference returns a number, an array, or dicts and lists of these")
    return _json_of(normalize(value))


def _json_of(value):
    if value is None:
        return None
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, torch.Tensor):
        flat = value.reshape(-1)
        if value.dtype == torch.bool:
            return {"dtype": "bool", "shape": list(value.shape), "values": [bool(v) for v in flat.tolist()]}
        if not value.dtype.is_floating_point:
            return {"dtype": "int64", "shape": list(value.shape), "values": [int(v) for v in flat.tolist()]}
        return {"dtype": "float64", "shape": list(value.shape), "values": [_number(v) for v in flat.double().tolist()]}
    if isinstance(value, dict):
        return {k: _json_of(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_of(v) for v in value]
    _, type_name, text = value  # ("uncomparable", type, text)
    return {"uncomparable": type_name, "text": text}


def _numpy(t):
    return None if t is None else t.detach().to("cpu").numpy()


def reference(spec, kwargs_json, target, input, weight, structured_file=""):  # noqa: A002 - the data's own key
    """Calls the reference once on the whole data; its value as Value JSON text. Structured data:
    `input` holds the samples' indices into structured_file, and the reference gets the samples."""
    fn = resolve(spec)
    kwargs = json.loads(kwargs_json)
    if structured_file:
        from ._host import structured_samples

        data = structured_samples(structured_file)
        rows = input.tolist()
        inputs = [data["input"][i] for i in rows]
        targets = None if data.get("target") is None else [data["target"][i] for i in rows]
        args = (targets, inputs) if targets is not None else (inputs,)
        return json.dumps(_value_json(spec, fn(*args, **kwargs)))
    if weight is not None:
        kwargs.setdefault("sample_weight", _numpy(weight))
    args = (_numpy(target), _numpy(input)) if target is not None else (_numpy(input),)
    return json.dumps(_value_json(spec, fn(*args, **kwargs)))
