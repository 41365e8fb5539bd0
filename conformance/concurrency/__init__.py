"""Concurrency and store checks: many writers against one table, and the stores under them.

* :mod:`.stress` -- ``lance-conformance stress``: concurrent writers (processes, pylance and
  the reference writer) and the checks of the outcome;
* :mod:`.simulation` -- deterministic interleavings of writers (the simulated machine);
* :mod:`.faults` -- a store wrapper that injects failures and delays into puts and reads;
* :mod:`.store_check` -- ``lance-conformance check-store``: does an object store keep the
  promises a commit relies on (conditional put, read-after-write, listing);
* :mod:`.second_client` -- an independent S3 client (minio) the store checks compare with.
"""
