"""fio: the workload library (job files) and the runner (live status, per-second logs, final JSON)."""
