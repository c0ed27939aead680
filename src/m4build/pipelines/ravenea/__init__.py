"""``m4build build ravenea``: cultural images -> captions -> BM25 candidates -> annotation -> graded dataset."""
