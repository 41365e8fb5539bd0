"""Every generator of the kit, shared by its tests and ``lance-conformance fuzz``.

* :mod:`.schemas` -- hypothesis strategies for the Arrow types, schemas, values and tables
  Lance stores, each column type named by a *kind* that adapters declare;
* :mod:`.scripts` -- hypothesis strategies for operation scripts whose every step is legal
  for the state so far (the model of :mod:`conformance.harness.scenarios` is the oracle);
* :mod:`.arrow` -- seeded random columns for the file-format tests (``arrow_tables``,
  ``column``, ``same_table``);
* :mod:`.data` -- the deterministic tables scripts name by ``gen`` (``small_table``,
  ``mixed_table``, ``nested_table``, ``all_types_table``).

Nothing here imports pytest; :mod:`.data` does not import hypothesis either.
"""
