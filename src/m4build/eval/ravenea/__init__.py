"""``m4build eval ravenea``: retrievers and downstream tasks on a RAVENEA build's annotated candidates."""
