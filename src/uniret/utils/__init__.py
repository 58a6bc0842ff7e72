"""Small shared helpers (hashing, atomic files, environment)."""
