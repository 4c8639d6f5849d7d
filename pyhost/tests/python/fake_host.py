"""A stand-in for the embedded C++ module `_distmetrics_host` (pyhost/src/interpreter.cpp), so
that the Python half of pyhost can be tested in a plain interpreter: the store is a
torch.distributed HashStore, the trace a list."""

import sys
import types

import torch.distributed as dist


def install():
    module = types.ModuleType("_distmetrics_host")
    module.store = dist.HashStore()
    module.trace = []        # [op, dtype, shape, ok]
    module.active = True

    module.store_set = lambda k, v: module.store.set(k, v)
    module.store_get = lambda k: module.store.get(k)
    module.store_add = lambda k, n: module.store.add(k, n)
    module.store_compare_set = lambda k, e, d: module.store.compare_set(k, e, d)
    module.store_wait = lambda keys, ms: module.store.wait(keys)
    module.store_check = lambda keys: module.store.check(keys)
    module.store_delete = lambda k: module.store.delete_key(k)
    module.store_num_keys = lambda: module.store.num_keys()
    module.tracing = lambda: module.active

    def enter(op, dtype, shape):
        module.trace.append([op, dtype, list(shape), None])
        return len(module.trace) - 1

    def exit_(seq, ok):
        module.trace[seq][3] = ok

    module.enter = enter
    module.exit = exit_
    sys.modules["_distmetrics_host"] = module
    return module
