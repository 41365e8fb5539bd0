"""Censuses of what Lance releases write, judged and read as they read it
(``lance-conformance census``)."""
