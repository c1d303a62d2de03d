"""Calibration of the virtual drive against the seeds: targets, fast replay, bounded fit, pipeline run."""
