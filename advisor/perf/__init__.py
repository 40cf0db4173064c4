"""The performance layer: the physical model of a training step, its calibration on published results and their
cross-validation, data-parallel scaling, training memory, the workload's definition and the catalog's estimates."""
