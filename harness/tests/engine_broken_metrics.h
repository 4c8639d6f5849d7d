// Deliberately broken metrics, registered only in the engine's test binary (which is also its
// own rank worker, so the workers know them too). Each reproduces one historical bug class; the
// end-to-end tests check that the engine flags each with the right property.
//
// They all average the values of the "values" generator (input [N] float).
#pragma once

namespace distmetrics::harness::testing {

// Registers them in a registry of their own, added to MetricCatalog as "broken" (idempotent).
//   CorrectMean           sum and count all_reduced as copies: the positive control
//   NoSyncMean            compute() never communicates: each rank returns its local mean
//   OverwriteSyncMean     compute() all_reduces the local state IN PLACE (PyTorch-Ignite #2803)
//   SumForMaxAbs          the largest |value|, reduced with SUM instead of MAX (Ignite #1813)
//   PerBatchMean          the mean of per-batch means (Ignite #2087)
//   RaiseAloneMean        raises NotComputableError on a rank with no data before syncing (Ignite #1242)
//   GatherPerElementMean  gathers its values one all_gather per element (torchmetrics #3336)
//   AbortOnRank1Mean      rank 1 calls abort() in compute()
//   ExtraBarrierOnRank1Mean  rank 1 issues a barrier after its sync in its first compute
//   SkipsSyncOnRank0Mean  rank 0 returns its own mean without syncing in its first compute
//   GathersOnRank0Mean    rank 0 gathers its sum where its peers all_reduce, in its first compute
//   AllocatesTooMuchOnRank1Mean  rank 1 asks for 64 GiB in its second update (past --rank-memory)
//   EndlessWhenAloneMean  without a communicator its second update never finishes
//   RejectsWhenDistributedMean  every rank raises InputError in update() when world size > 1
//   StatefulMean          sum and count as StatefulMetric states: saves, loads and merges them
//   CountNotSavedMean     save_state() leaves the count out (torchmetrics' non-persistent state)
//   MergeForgetsSelfMean  merge_state() replaces its own state with the others' (torcheval-style bug)
//   InputDtypeCountMean   counts samples in the input's dtype (float16 counts stop at 2048)
//   RejectsEmptyMean      right, but raises InputError on a batch with no rows
//   RejectsEmptyNoSyncMean  raises on an empty batch and never syncs
//   NanAfterEmptyMean     adds each batch's mean times its size: NaN from an empty batch on
//   UnsupportedOnThreeRanksMean  raises a class named Unsupported when given 3 ranks (a skip)
void register_broken_metrics();

}  // namespace distmetrics::harness::testing
