"""Containment: every command Charter runs, inside an OS sandbox the plan declares."""
