"""Ranking metrics (pure functions) and the shared evaluator (full or sampled ranking)."""
