"""toolemu.cli."""
