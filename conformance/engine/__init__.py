"""Engines that run the rule catalog over datasets: ``local`` (this process)."""

from .local import (
    DataFileItem,
    DatasetNotFound,
    Plan,
    RefNotFound,
    merge,
    plan,
    run_data_file_item,
    validate,
)

__all__ = ["DataFileItem", "DatasetNotFound", "Plan", "RefNotFound", "merge", "plan",
           "run_data_file_item", "validate"]
