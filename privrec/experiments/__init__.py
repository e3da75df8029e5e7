"""Experiment pipelines: data -> model -> training -> evaluation -> report, one per system."""
