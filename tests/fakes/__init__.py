"""Shared test doubles."""
