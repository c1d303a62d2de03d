"""The seam between an experiment and what it runs on. Procedures (a campaign, the conformance checks,
the fault matrix) see a drive and a simulated rig only through the small protocols here; the objects
behind them (a block device, a file, an NBD export, the virtual drive, the simulated rig) are built by
the testbed (`thermrig.testbed`) and handed in. Plain values and protocols only: no I/O."""
