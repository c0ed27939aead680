"""The evaluation runner: baselines on published benchmarks, and scoring of predictions made elsewhere."""
