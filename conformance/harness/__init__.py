"""The harness for implementations under test.

* :mod:`.adapter` -- the adapter protocol, capabilities and ``load_adapter``;
* :mod:`.reference`, :mod:`.pylance_adapter` -- the built-in adapters;
* :mod:`.subprocess_adapter` -- any program speaking ``PROTOCOL.md`` (JSON lines + Arrow IPC);
* :mod:`.scenarios` -- writer scenarios as operation scripts, and their logical model;
* :mod:`.runner` -- the read and write suites, outcomes, skip-file, JUnit/JSON reports;
* :mod:`.matrix` -- the producer x consumer matrix and the static HTML report;
* :mod:`.known_bad` -- broken writers the harness must catch (its self-test);
* :mod:`.pytest_plugin` -- ``pytest --lance-impl=...``.
"""
