"""Helpers shared by several test modules (importable because pytest puts
``tests/`` on the path; see pyproject's pytest settings)."""
