"""Adapters from m4build's chat request to each provider's SDK."""
