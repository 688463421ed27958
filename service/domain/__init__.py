"""Domain logic: plain Python over a store and a clock; no HTTP here."""
