"""Tests of envgen.world: the world compiler and its domain catalog."""
