"""Real loopback servers that speak the protocols m4build talks, so tests run the real clients."""
