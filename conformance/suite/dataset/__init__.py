"""Tests of the dataset API (reference_impl/dataset.py, dataset_ops.py, scan.py, write.py) against pylance."""
