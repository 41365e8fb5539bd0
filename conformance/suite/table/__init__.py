"""Tests of the table format (reference_impl/table, conformance/rules of the table areas): manifests, fragments, deletions, row ids, refs, commits, indexes, blobs."""
