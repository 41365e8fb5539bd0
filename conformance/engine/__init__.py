"""Engines that run the rule catalog over datasets: ``local`` (this process), ``spark``
(a Spark job; its session in ``spark_session``) and ``namespace`` (a namespace root); each
returns a :class:`.report.Report`, which ``lance-conformance validate`` prints."""

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
