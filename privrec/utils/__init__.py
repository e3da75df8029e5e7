"""Small shared helpers: atomic file output, seeding, provenance."""
