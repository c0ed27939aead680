"""Publishing to the Hugging Face Hub and loading index shards back.

``repo`` assembles the repo folder from a run folder, ``push`` uploads it, ``load`` fetches the
index shards of one language from a published repo (or passes a local folder through). The card
itself is rendered by :mod:`m4build.dataset_card`, which the corpus pipeline shares.
"""
