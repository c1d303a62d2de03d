"""Campaigns: the experiment file, its run plan, and the orchestrator that walks it."""
