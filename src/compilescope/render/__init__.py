"""Renderers: each turns results into text; only the CLI/API edge writes files."""
