"""A MeanAbsoluteError whose module imports numpy and runs a BLAS product as it is imported, and
whose compute runs one on the rank, and which appends the pid of every process that imports it
to the file DISTMETRICS_TEST_IMPORT_LOG: with the library thread pools asked for 4 threads, the
rank workers must still be forked with this module imported (one import, the supervisor's), and
BLAS must work in them."""

import os

import numpy
import torch
import torch.distributed as dist

import distmetrics

with open(os.environ["DISTMETRICS_TEST_IMPORT_LOG"], "a") as log:
    log.write("%d\n" % os.getpid())
_PRODUCT = numpy.ones((64, 64)) @ numpy.ones((64, 64))  # OpenBLAS's pool is started by now


class MeanAbsoluteError:
    def __init__(self):
        self.reset()

    def reset(self):
        self.sum_abs_error = torch.tensor(0.0, dtype=torch.float64)
        self.total = torch.tensor(0, dtype=torch.int64)

    def update(self, preds, target):
        self.sum_abs_error += (preds - target).abs().sum().to(torch.float64)
        self.total += target.numel()

    def compute(self):
        # A BLAS call in the rank: a forked worker whose pool were broken would hang or crash here.
        assert float((numpy.ones((64, 64)) @ numpy.ones((64, 64)))[0, 0]) == float(_PRODUCT[0, 0]) == 64.0
        s = torch.stack([self.sum_abs_error, self.total.to(torch.float64)])
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(s)
        return s[0] / s[1]


distmetrics.register("MeanAbsoluteError", lambda params: MeanAbsoluteError(), adapter="torchmetrics")
