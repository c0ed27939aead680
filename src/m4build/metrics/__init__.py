"""The metrics of the five benchmark families, each with its reference behaviour documented."""
